-- The current scrapespy_start_page, created by migration 0014, which loads this file.
-- To change it, see service/db/sql/__init__.py first.
CREATE OR REPLACE FUNCTION scrapespy_start_page(
    p_page_id integer, p_instance varchar, p_seen integer, p_now timestamptz,
    p_key_hash varchar, p_residential boolean, p_amount bigint, p_trial_amount bigint,
    p_created timestamptz, p_expires timestamptz
) RETURNS TABLE (
    out_job_seq integer, out_url text, out_attempt integer,
    out_key_hash varchar, out_account_id integer, out_residential_unlocked boolean,
    out_trials_left integer, out_held bigint, out_trial boolean, out_new_hold integer,
    out_available bigint, out_trials_left_after integer, out_key_id integer,
    out_key_cap bigint, out_key_spent bigint
)
LANGUAGE plpgsql AS $$
DECLARE
    v_job integer;
    v_url text;
    v_attempt integer;
    v_hold record;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    SELECT p.job_seq, p.url, p.attempt + 1 INTO v_job, v_url, v_attempt
      FROM job_pages AS p
     WHERE p.id = p_page_id AND p.status = 'pending'
       AND (p_seen IS NULL OR p.attempt = p_seen)
       AND EXISTS (SELECT 1 FROM jobs AS j
                    WHERE j.seq = p.job_seq AND j.status IN ('queued', 'running'))
       FOR UPDATE OF p;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT * INTO v_hold FROM scrapespy_authorize_hold(
        p_key_hash, p_residential, p_amount, p_trial_amount, p_created, p_expires);
    UPDATE job_pages AS p
       SET status = 'running', attempt = v_attempt, instance = p_instance, updated_at = p_now,
           hold_id = COALESCE(v_hold.new_hold, p.hold_id)
     WHERE p.id = p_page_id;
    RETURN QUERY SELECT v_job, v_url, v_attempt, v_hold.key_hash, v_hold.account_id,
        v_hold.residential_unlocked, v_hold.trials_left, v_hold.held, v_hold.trial,
        v_hold.new_hold, v_hold.available, v_hold.trials_left_after, v_hold.key_id,
        v_hold.key_cap, v_hold.key_spent;
END
$$;
