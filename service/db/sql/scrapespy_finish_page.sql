-- The current scrapespy_finish_page, created by migration 0016, which loads this file.
-- To change it, see service/db/sql/__init__.py first.
CREATE OR REPLACE FUNCTION scrapespy_finish_page(
    p_page_id integer, p_attempt integer, p_status varchar, p_result text,
    p_now timestamptz, p_job_seq integer
) RETURNS TABLE (out_stored boolean, out_completed boolean)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    UPDATE job_pages AS p SET status = p_status, result = p_result, updated_at = p_now
     WHERE p.id = p_page_id AND p.attempt = p_attempt AND p.status = 'running';
    IF NOT FOUND THEN
        RETURN QUERY SELECT false, false;
        RETURN;
    END IF;
    PERFORM 1 FROM jobs AS j WHERE j.seq = p_job_seq FOR UPDATE;
    -- 'pending' and 'running' are the only statuses in this range (the table's check)
    PERFORM 1 FROM job_pages AS p
     WHERE p.job_seq = p_job_seq AND p.status >= 'pending' AND p.status <= 'running'
     ORDER BY p.status DESC
     LIMIT 1;
    IF FOUND THEN
        RETURN QUERY SELECT true, false;
        RETURN;
    END IF;
    UPDATE jobs AS j SET status = 'completed', finished_at = p_now
     WHERE j.seq = p_job_seq AND j.status IN ('queued', 'running');
    RETURN QUERY SELECT true, FOUND;
END
$$;
