-- The current scrapespy_settle, created by migration 0019, which loads this file.
-- To change it, see service/db/sql/__init__.py first.
CREATE OR REPLACE FUNCTION scrapespy_settle(
    p_hold_id integer, p_cost bigint, p_consume_trial boolean, p_settled timestamptz,
    p_usage boolean, p_account_id integer, p_url text, p_engine varchar,
    p_tier_requested varchar, p_tier_used varchar, p_status_code integer, p_success boolean,
    p_blocked boolean, p_error text, p_elapsed_ms integer,
    p_extraction_credits bigint DEFAULT 0
) RETURNS TABLE (charged bigint, trial_consumed boolean, settled_here boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_account integer;
    v_amount bigint;
    v_trial boolean;
    v_key integer;
    v_balance bigint;
    v_charged bigint := 0;
    v_consumed boolean := false;
    v_claimed boolean := false;
    -- the language model's share of p_cost, recorded in an entry of its own
    v_extraction bigint := LEAST(GREATEST(COALESCE(p_extraction_credits, 0), 0), p_cost);
BEGIN
    -- at most once per hold: only a hold still 'held' is claimed
    UPDATE holds
       SET status = CASE WHEN p_cost <> 0 OR p_consume_trial THEN 'captured' ELSE 'released' END,
           settled_at = p_settled
     WHERE id = p_hold_id AND status = 'held'
       AND (p_account_id IS NULL OR account_id = p_account_id)
    RETURNING account_id, amount, trial, key_id INTO v_account, v_amount, v_trial, v_key;
    IF FOUND THEN
        v_claimed := true;
        IF p_cost > v_amount THEN
            RAISE EXCEPTION 'cost % exceeds hold %', p_cost, v_amount;
        END IF;
        v_consumed := p_consume_trial AND v_trial;
        UPDATE accounts
           SET held = held - v_amount, balance = balance - p_cost,
               residential_trials_left = residential_trials_left
                   + CASE WHEN v_trial AND NOT v_consumed THEN 1 ELSE 0 END
         WHERE id = v_account
        RETURNING balance INTO v_balance;
        IF p_cost - v_extraction <> 0 THEN
            INSERT INTO ledger_entries
                (account_id, kind, amount, balance_after, reference, created_at)
            VALUES (v_account, 'scrape', -(p_cost - v_extraction), v_balance + v_extraction,
                    'hold:' || p_hold_id, p_settled);
        END IF;
        IF v_extraction <> 0 THEN
            INSERT INTO ledger_entries
                (account_id, kind, amount, balance_after, reference, created_at)
            VALUES (v_account, 'extraction', -v_extraction, v_balance, 'hold:' || p_hold_id,
                    p_settled);
        END IF;
        v_charged := p_cost;
    END IF;
    IF p_usage THEN
        INSERT INTO usage (account_id, hold_id, created_at, url, engine, tier_requested,
                           tier_used, status_code, success, blocked, error, elapsed_ms,
                           credits, trial, key_id, extraction_credits)
        VALUES (p_account_id, CASE WHEN v_claimed THEN p_hold_id END, p_settled, p_url,
                p_engine, p_tier_requested, p_tier_used, p_status_code, p_success, p_blocked,
                p_error, p_elapsed_ms, v_charged, v_consumed, v_key,
                CASE WHEN v_claimed THEN v_extraction ELSE 0 END);
    END IF;
    RETURN QUERY SELECT v_charged, v_consumed, v_claimed;
END
$$;
