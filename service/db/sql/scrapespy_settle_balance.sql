-- The current scrapespy_settle_balance, created by migration 0019, which loads this file.
-- To change it, see service/db/sql/__init__.py first.
CREATE OR REPLACE FUNCTION scrapespy_settle_balance(
    p_hold_id integer, p_cost bigint, p_consume_trial boolean, p_settled timestamptz,
    p_usage boolean, p_account_id integer, p_url text, p_engine varchar,
    p_tier_requested varchar, p_tier_used varchar, p_status_code integer, p_success boolean,
    p_blocked boolean, p_error text, p_elapsed_ms integer,
    p_extraction_credits bigint DEFAULT 0
)
RETURNS TABLE (
    charged bigint, trial_consumed boolean, settled_here boolean, balance_after bigint
)
LANGUAGE plpgsql AS $$
DECLARE
    v_settled record;
BEGIN
    SELECT * INTO v_settled FROM scrapespy_settle(
        p_hold_id, p_cost, p_consume_trial, p_settled, p_usage, p_account_id, p_url, p_engine,
        p_tier_requested, p_tier_used, p_status_code, p_success, p_blocked, p_error,
        p_elapsed_ms, p_extraction_credits);
    RETURN QUERY SELECT v_settled.charged, v_settled.trial_consumed, v_settled.settled_here,
        (SELECT a.balance FROM accounts a WHERE a.id = p_account_id);
END
$$;
