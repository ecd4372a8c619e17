-- 0004_scoped_cancel.sql - Cancel is all or nothing and scoped to an order.
--
-- Before this, Cancel took no proof at all and cancelled whichever of the
-- ids were claimed (asked for A1,A2 with only A1 sold, it cancelled A1), so
-- any caller could cancel anyone's sale. Now a Cancel names the reference
-- its claims were confirmed with (the order it refunds) and cancels only
-- when every id is claimed under that reference; otherwise nothing at all
-- is cancelled and the answer names the first id that is not:
--   NOT_CLAIMED      the id has no claim;
--   OTHER_REFERENCE  the id is claimed under another reference.
-- Both are stored under the key like any result, so a retry with the same
-- key gets the same answer.

CREATE OR REPLACE FUNCTION holdfast.cancel(p_ns text, p_partition text, p_ids text[], p_key text,
                                           p_reference text, p_lock_timeout_ms integer)
RETURNS SETOF holdfast.outcome
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_hash     bytea;
    v_ids      text[];
    v_result   jsonb;
    v_code     text := 'OK';
    v_resource text;
    v_now      timestamptz := now();
BEGIN
    PERFORM holdfast.check_args(p_ns, p_partition, p_ids, p_key);
    IF p_reference IS NULL OR p_reference = '' THEN
        RAISE EXCEPTION 'holdfast: cancel needs the reference its claims were confirmed with'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_lock_timeout_ms > 0 THEN
        PERFORM set_config('lock_timeout', p_lock_timeout_ms::text, true);
    END IF;

    v_hash := holdfast.request_hash('cancel', p_ns, p_partition, p_ids, p_reference, ''::bytea);
    IF NOT holdfast.bind_key(p_ns, p_key, 'cancel', v_hash) THEN
        RETURN QUERY SELECT * FROM holdfast.stored_outcome(p_ns, p_key, 'cancel', v_hash);
        RETURN;
    END IF;

    -- Lock the claims in the one byte order every confirm and cancel uses.
    v_ids := ARRAY(SELECT i FROM unnest(p_ids) AS i ORDER BY i COLLATE "C");
    PERFORM 1 FROM holdfast.claims
     WHERE ns = p_ns AND partition = p_partition AND resource = ANY (v_ids)
     ORDER BY resource COLLATE "C" FOR UPDATE;

    -- The first id, in the request's order, that this cancel may not touch.
    SELECT u.i, CASE WHEN c.resource IS NULL THEN 'NOT_CLAIMED' ELSE 'OTHER_REFERENCE' END
      INTO v_resource, v_code
      FROM unnest(p_ids) WITH ORDINALITY AS u(i, n)
      LEFT JOIN holdfast.claims c
        ON c.ns = p_ns AND c.partition = p_partition AND c.resource = u.i
     WHERE c.resource IS NULL OR c.reference <> p_reference
     ORDER BY u.n LIMIT 1;
    IF FOUND THEN
        v_result := jsonb_build_object('rows', jsonb_build_array(
                        jsonb_build_object('resource', v_resource)));
        UPDATE holdfast.idempotency SET code = v_code, result = v_result
         WHERE ns = p_ns AND key = p_key;
        RETURN QUERY SELECT * FROM holdfast.result_rows(v_code, false, v_result);
        RETURN;
    END IF;

    WITH gone AS (
        DELETE FROM holdfast.claims
         WHERE ns = p_ns AND partition = p_partition AND resource = ANY (v_ids)
        RETURNING *),
    kept AS (
        INSERT INTO holdfast.cancelled_claims (ns, partition, resource, fence, reference, payload,
                                               idempotency_key, confirmed_at, cancel_reference,
                                               cancel_idempotency_key, cancelled_at)
        SELECT g.ns, g.partition, g.resource, g.fence, g.reference, g.payload, g.idempotency_key,
               g.confirmed_at, p_reference, p_key, v_now
          FROM gone g
        RETURNING resource, fence)
    SELECT jsonb_build_object('rows', coalesce(jsonb_agg(jsonb_build_object(
               'resource', k.resource, 'fence', k.fence)
               ORDER BY array_position(p_ids, k.resource)), '[]'::jsonb))
      INTO v_result FROM kept k;
    UPDATE holdfast.idempotency SET code = 'OK', result = v_result
     WHERE ns = p_ns AND key = p_key;
    RETURN QUERY SELECT * FROM holdfast.result_rows('OK', false, v_result);
END
$$;
