-- The current scrapespy_hold, created by migration 0007, which loads this file.
-- To change it, see service/db/sql/__init__.py first.
CREATE OR REPLACE FUNCTION scrapespy_hold(
    p_account_id integer, p_amount bigint, p_trial boolean,
    p_created timestamptz, p_expires timestamptz,
    p_key_id integer DEFAULT NULL, p_key_cap bigint DEFAULT NULL
) RETURNS TABLE (new_hold integer, available bigint, trials_left integer, key_spent bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_id integer;
    v_spent bigint;
BEGIN
    IF p_key_cap IS NOT NULL THEN
        -- a capped key's holds one at a time: two at once cannot both fit under the cap. Not
        -- FOR UPDATE: that would also wait for the settlements inserting this key's usage rows
        -- (their foreign key's KEY SHARE lock), which hold the account's row: a deadlock.
        PERFORM 1 FROM api_keys WHERE id = p_key_id FOR NO KEY UPDATE;
        SELECT (SELECT coalesce(sum(u.credits), 0) FROM usage u
                 WHERE u.key_id = p_key_id
                   AND u.created_at >= date_trunc('month', p_created AT TIME ZONE 'UTC')
                                       AT TIME ZONE 'UTC')
             + (SELECT coalesce(sum(h.amount), 0) FROM holds h
                 WHERE h.key_id = p_key_id AND h.status = 'held')
          INTO v_spent;
        IF v_spent + p_amount > p_key_cap THEN
            RETURN QUERY SELECT NULL::integer, NULL::bigint, NULL::integer, v_spent;
            RETURN;
        END IF;
    END IF;
    -- the conditional UPDATE reserves the credits, and the trial, or nothing
    IF p_trial THEN
        UPDATE accounts
           SET held = held + p_amount, residential_trials_left = residential_trials_left - 1
         WHERE id = p_account_id AND balance - held >= p_amount AND residential_trials_left > 0;
    ELSE
        UPDATE accounts SET held = held + p_amount
         WHERE id = p_account_id AND balance - held >= p_amount;
    END IF;
    IF NOT FOUND THEN
        RETURN QUERY SELECT NULL::integer, a.balance - a.held, a.residential_trials_left,
                            NULL::bigint
                       FROM accounts a WHERE a.id = p_account_id;
        RETURN;
    END IF;
    INSERT INTO holds (account_id, amount, trial, status, created_at, expires_at, key_id)
    VALUES (p_account_id, p_amount, p_trial, 'held', p_created, p_expires, p_key_id)
    RETURNING id INTO v_id;
    RETURN QUERY SELECT v_id, NULL::bigint, NULL::integer, NULL::bigint;
END
$$;
