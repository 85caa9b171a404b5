-- The current scrapespy_settle_finish_page, created by migration 0019, which loads this file.
-- To change it, see service/db/sql/__init__.py first.
CREATE OR REPLACE FUNCTION scrapespy_settle_finish_page(
    p_hold_id integer, p_cost bigint, p_consume_trial boolean, p_settled timestamptz,
    p_usage boolean, p_account_id integer, p_url text, p_engine varchar,
    p_tier_requested varchar, p_tier_used varchar, p_status_code integer, p_success boolean,
    p_blocked boolean, p_error text, p_elapsed_ms integer,
    p_page_id integer, p_attempt integer, p_status varchar, p_result text,
    p_now timestamptz, p_job_seq integer, p_extraction_credits bigint DEFAULT 0
) RETURNS TABLE (out_charged bigint, out_stored boolean, out_completed boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_charged bigint;
    v_commit text := current_setting('synchronous_commit');
    v_finished record;
BEGIN
    SELECT s.charged INTO v_charged FROM scrapespy_settle(
        p_hold_id, p_cost, p_consume_trial, p_settled, p_usage, p_account_id, p_url, p_engine,
        p_tier_requested, p_tier_used, p_status_code, p_success, p_blocked, p_error,
        p_elapsed_ms, p_extraction_credits) AS s;
    IF v_charged <> p_cost THEN  -- settled before: the result must say what was charged
        RETURN QUERY SELECT v_charged, false, false;
        RETURN;
    END IF;
    SELECT * INTO v_finished FROM scrapespy_finish_page(
        p_page_id, p_attempt, p_status, p_result, p_now, p_job_seq);
    -- the finish turns the transaction's commit asynchronous; a settlement's is durable
    PERFORM set_config('synchronous_commit', v_commit, true);
    RETURN QUERY SELECT v_charged, v_finished.out_stored, v_finished.out_completed;
END
$$;
