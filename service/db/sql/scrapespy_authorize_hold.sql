-- The current scrapespy_authorize_hold, created by migration 0007, which loads this file.
-- To change it, see service/db/sql/__init__.py first.
CREATE OR REPLACE FUNCTION scrapespy_authorize_hold(
    p_key_hash varchar, p_residential boolean, p_amount bigint, p_trial_amount bigint,
    p_created timestamptz, p_expires timestamptz
) RETURNS TABLE (
    key_hash varchar, account_id integer, residential_unlocked boolean, trials_left integer,
    held bigint, trial boolean, new_hold integer, available bigint, trials_left_after integer,
    key_id integer, key_cap bigint, key_spent bigint
)
LANGUAGE plpgsql AS $$
DECLARE
    v_key varchar;
    v_account integer;
    v_unlocked boolean;
    v_trials integer;
    v_trial boolean;
    v_amount bigint;
    v_key_id integer;
    v_cap bigint;
    v_last_used timestamptz;
    v_hold integer;
    v_available bigint;
    v_trials_after integer;
    v_spent bigint;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    SELECT k.key_hash, a.id, a.residential_unlocked, a.residential_trials_left, k.id,
           k.monthly_cap, k.last_used_at
      INTO v_key, v_account, v_unlocked, v_trials, v_key_id, v_cap, v_last_used
      FROM api_keys k JOIN accounts a ON a.id = k.account_id
     WHERE k.key_hash = p_key_hash AND k.revoked_at IS NULL;
    IF NOT FOUND THEN
        RETURN;  -- no row: no such key, or a revoked one
    END IF;
    v_trial := p_residential AND NOT v_unlocked;
    v_amount := CASE WHEN v_trial THEN p_trial_amount ELSE p_amount END;
    IF v_trial AND v_trials <= 0 THEN
        -- refused before anything is held
        RETURN QUERY SELECT v_key, v_account, v_unlocked, v_trials, v_amount, v_trial,
                            NULL::integer, NULL::bigint, v_trials, v_key_id, v_cap, NULL::bigint;
        RETURN;
    END IF;
    SELECT h.new_hold, h.available, h.trials_left, h.key_spent
      INTO v_hold, v_available, v_trials_after, v_spent
      FROM scrapespy_hold(v_account, v_amount, v_trial, p_created, p_expires, v_key_id, v_cap) h;
    -- the key's last use, to the minute: most scrapes write nothing here
    IF v_hold IS NOT NULL
       AND (v_last_used IS NULL OR v_last_used < p_created - interval '1 minute') THEN
        UPDATE api_keys SET last_used_at = p_created
         WHERE id = v_key_id
           AND (last_used_at IS NULL OR last_used_at < p_created - interval '1 minute');
    END IF;
    RETURN QUERY SELECT v_key, v_account, v_unlocked, v_trials, v_amount, v_trial,
                        v_hold, v_available, v_trials_after, v_key_id, v_cap, v_spent;
END
$$;
