-- 0003_final_answers.sql - a Confirm whose hold is gone binds its key too.
--
-- Before this, a Confirm that found its hold gone only looked its key up
-- (holdfast.lookup, a plain SELECT) and answered HOLD_LOST when nothing was
-- stored. An earlier attempt with the same key could still be running,
-- blocked on a lock with its key bound but not committed; it could commit
-- after the HOLD_LOST answer, giving one key two different definite answers.
--
-- confirm_gone() binds the key the way confirm() does (INSERT ... ON
-- CONFLICT on the key's primary key), so it waits for any attempt that has
-- bound it and not finished, then either finds that attempt's result (and
-- replays it) or stores HOLD_LOST / CONFIRMED as the key's result. Once that
-- is committed every later attempt with the key, by any daemon, finds it in
-- bind_key and replays it: nothing can commit under that key any more.

-- p_code: HOLD_LOST (the hold is not this token's any more) or CONFIRMED (it
-- was replaced by a confirmed marker); p_resource: the id to name.
CREATE FUNCTION holdfast.confirm_gone(p_ns text, p_partition text, p_ids text[], p_key text,
                                      p_reference text, p_payload bytea, p_code text,
                                      p_resource text, p_lock_timeout_ms integer)
RETURNS SETOF holdfast.outcome
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_hash   bytea;
    v_result jsonb;
BEGIN
    PERFORM holdfast.check_args(p_ns, p_partition, p_ids, p_key);
    IF p_code IS NULL OR p_code NOT IN ('HOLD_LOST', 'CONFIRMED') THEN
        RAISE EXCEPTION 'holdfast: code must be HOLD_LOST or CONFIRMED'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_lock_timeout_ms > 0 THEN
        PERFORM set_config('lock_timeout', p_lock_timeout_ms::text, true);
    END IF;
    v_hash := holdfast.request_hash('confirm', p_ns, p_partition, p_ids,
                                    coalesce(p_reference, ''), coalesce(p_payload, ''::bytea));
    IF NOT holdfast.bind_key(p_ns, p_key, 'confirm', v_hash) THEN
        RETURN QUERY SELECT * FROM holdfast.stored_outcome(p_ns, p_key, 'confirm', v_hash);
        RETURN;
    END IF;
    v_result := jsonb_build_object('rows', jsonb_build_array(
                    jsonb_build_object('resource', p_resource)));
    UPDATE holdfast.idempotency SET code = p_code, result = v_result
     WHERE ns = p_ns AND key = p_key;
    RETURN QUERY SELECT * FROM holdfast.result_rows(p_code, false, v_result);
END
$$;

REVOKE ALL ON FUNCTION holdfast.confirm_gone(text, text, text[], text, text, bytea, text, text,
                                             integer) FROM PUBLIC;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'holdfast_api') THEN
        GRANT EXECUTE ON FUNCTION
            holdfast.confirm_gone(text, text, text[], text, text, bytea, text, text, integer)
        TO holdfast_api;
    END IF;
END
$$;
