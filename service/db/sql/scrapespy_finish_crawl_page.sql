-- The current scrapespy_finish_crawl_page, created by migration 0015, which loads this file.
-- To change it, see service/db/sql/__init__.py first.
CREATE OR REPLACE FUNCTION scrapespy_finish_crawl_page(
    p_page_id integer, p_attempt integer, p_status varchar, p_result text,
    p_now timestamptz, p_job_seq integer, p_urls text[], p_keys text[],
    p_max_pages integer, p_max_depth integer, p_slots integer, p_task varchar,
    p_per_task integer
) RETURNS TABLE (out_stored boolean, out_completed boolean, out_added integer)
LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    v_depth integer;
    v_total integer;
    v_status varchar;
    v_ids bigint[];
    v_positions bigint[];
    v_added integer := 0;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    UPDATE job_pages AS p SET status = p_status, result = p_result, updated_at = p_now
     WHERE p.id = p_page_id AND p.attempt = p_attempt AND p.status = 'running'
    RETURNING p.depth INTO v_depth;
    IF NOT FOUND THEN
        RETURN QUERY SELECT false, false, 0;
        RETURN;
    END IF;
    SELECT j.total, j.status INTO v_total, v_status FROM jobs AS j
     WHERE j.seq = p_job_seq FOR UPDATE;
    IF cardinality(p_keys) > 0 AND v_status IN ('queued', 'running') AND v_depth IS NOT NULL
       AND v_depth < p_max_depth AND v_total < p_max_pages THEN
        -- one probe of the unique (job_seq, url_key) index a link (see the module)
        WITH candidates AS (
            SELECT k.key, k.url, k.ord
              FROM unnest(p_keys, p_urls) WITH ORDINALITY AS k(key, url, ord)
              LEFT JOIN LATERAL (SELECT 1 AS hit FROM job_pages AS p
                                  WHERE p.job_seq = p_job_seq AND p.url_key = k.key
                                  LIMIT 1) AS known ON true
             WHERE known.hit IS NULL
             ORDER BY k.ord
             LIMIT p_max_pages - v_total
        ), made AS (
            INSERT INTO job_pages (job_seq, position, url, url_key, depth, status, attempt,
                                   updated_at)
            SELECT p_job_seq, v_total + (row_number() OVER (ORDER BY c.ord))::integer - 1,
                   c.url, c.key, v_depth + 1, 'pending', 0, p_now
              FROM candidates AS c
            RETURNING id, position
        )
        SELECT array_agg(m.id ORDER BY m.position), array_agg(m.position ORDER BY m.position)
          INTO v_ids, v_positions FROM made AS m;
        v_added := coalesce(cardinality(v_ids), 0);
        IF v_added > 0 THEN
            UPDATE jobs AS j SET total = v_total + v_added WHERE j.seq = p_job_seq;
            PERFORM procrastinate_defer_jobs_v1(ARRAY(
                SELECT ROW('default', p_task, 0,
                           'crawl:' || p_job_seq || ':'
                               || (v_positions[t * p_per_task + 1] / p_per_task) % p_slots,
                           NULL,
                           jsonb_build_object(
                               'page_ids', to_jsonb(v_ids[t * p_per_task + 1
                                                          : t * p_per_task + p_per_task]),
                               'job_seq', p_job_seq),
                           NULL)::procrastinate_job_to_defer_v1
                  FROM generate_series(0, (v_added - 1) / p_per_task) AS t
            ));
        END IF;
    END IF;
    UPDATE jobs AS j SET status = 'completed', finished_at = p_now
     WHERE j.seq = p_job_seq AND j.status IN ('queued', 'running')
       AND NOT EXISTS (SELECT 1 FROM job_pages AS p
                        WHERE p.job_seq = p_job_seq AND p.status IN ('pending', 'running'));
    RETURN QUERY SELECT true, FOUND, v_added;
END
$$;
