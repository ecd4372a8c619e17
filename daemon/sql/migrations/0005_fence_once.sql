-- 0005_fence_once.sql - a hold confirms a resource once.
--
-- confirm() refused only a fence LOWER than the highest one seen for a
-- resource. A hold that was confirmed, then cancelled, could be confirmed
-- again under a new idempotency key with the very same fence (its key came
-- back in Redis through a lagging replica, or its daemon died between the
-- COMMIT and the mark): two claims of one seat, one after the other, with one
-- fence. The fence check now refuses an equal fence too (STALE); a retry with
-- the same key still replays its stored result before the check.

CREATE OR REPLACE FUNCTION holdfast.confirm(p_ns text, p_partition text, p_ids text[], p_fence bigint,
                                 p_key text, p_reference text, p_payload bytea,
                                 p_lock_timeout_ms integer)
RETURNS SETOF holdfast.outcome
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_hash     bytea;
    v_ids      text[];
    v_claimed  text[];
    v_code     text := 'OK';
    v_resource text;
    v_seen     bigint;
    v_result   jsonb;
    v_now      timestamptz := now();
BEGIN
    PERFORM holdfast.check_args(p_ns, p_partition, p_ids, p_key);
    IF p_fence IS NULL OR p_fence <= 0 THEN
        RAISE EXCEPTION 'holdfast: fence must be positive' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_lock_timeout_ms > 0 THEN
        PERFORM set_config('lock_timeout', p_lock_timeout_ms::text, true);
    END IF;
    p_reference := coalesce(p_reference, '');
    p_payload := coalesce(p_payload, ''::bytea);

    -- 1. Idempotency.
    v_hash := holdfast.request_hash('confirm', p_ns, p_partition, p_ids, p_reference, p_payload);
    IF NOT holdfast.bind_key(p_ns, p_key, 'confirm', v_hash) THEN
        RETURN QUERY SELECT * FROM holdfast.stored_outcome(p_ns, p_key, 'confirm', v_hash);
        RETURN;
    END IF;

    -- Resources in one fixed (byte) order everywhere, so two confirms over
    -- overlapping ids queue behind each other instead of deadlocking.
    v_ids := ARRAY(SELECT i FROM unnest(p_ids) AS i ORDER BY i COLLATE "C");
    BEGIN
        -- 2. Fence check, under a lock on every fence row (created if missing).
        -- A fence already seen is as stale as a higher one: each hold is
        -- confirmed once per resource (a retry with the same key replays
        -- before it gets here).
        INSERT INTO holdfast.fences (ns, partition, resource, fence, updated_at)
        SELECT p_ns, p_partition, i, 0, v_now FROM unnest(v_ids) AS i
        ON CONFLICT DO NOTHING;
        PERFORM 1 FROM holdfast.fences
         WHERE ns = p_ns AND partition = p_partition AND resource = ANY (v_ids)
         ORDER BY resource COLLATE "C" FOR UPDATE;
        SELECT f.resource, f.fence INTO v_resource, v_seen FROM holdfast.fences f
         WHERE f.ns = p_ns AND f.partition = p_partition AND f.resource = ANY (v_ids)
           AND f.fence >= p_fence
         ORDER BY f.resource COLLATE "C" LIMIT 1;
        IF FOUND THEN
            v_code := 'STALE';
            RAISE EXCEPTION USING ERRCODE = 'HF001', MESSAGE = 'holdfast: stale fence';
        END IF;

        -- 3. The claims. An existing claim is never overwritten: fewer rows
        -- than ids means someone else holds one, and the block rolls back.
        WITH ins AS (
            INSERT INTO holdfast.claims (ns, partition, resource, fence, reference, payload,
                                         idempotency_key, confirmed_at)
            SELECT p_ns, p_partition, i, p_fence, p_reference, p_payload, p_key, v_now
              FROM unnest(v_ids) AS i
            ON CONFLICT DO NOTHING
            RETURNING resource)
        SELECT array_agg(resource) INTO v_claimed FROM ins;
        IF coalesce(cardinality(v_claimed), 0) < cardinality(v_ids) THEN
            v_code := 'CONFLICT';
            v_seen := NULL;
            SELECT u.i INTO v_resource FROM unnest(p_ids) WITH ORDINALITY AS u(i, n)
             WHERE v_claimed IS NULL OR NOT (u.i = ANY (v_claimed))
             ORDER BY u.n LIMIT 1;
            RAISE EXCEPTION USING ERRCODE = 'HF002', MESSAGE = 'holdfast: already claimed';
        END IF;

        UPDATE holdfast.fences SET fence = p_fence, updated_at = v_now
         WHERE ns = p_ns AND partition = p_partition AND resource = ANY (v_ids)
           AND fence < p_fence;
    EXCEPTION WHEN SQLSTATE 'HF001' OR SQLSTATE 'HF002' THEN
        NULL; -- v_code and v_resource say why; the block's writes are undone
    END;

    IF v_code = 'OK' THEN
        SELECT jsonb_build_object('rows', jsonb_agg(jsonb_build_object(
                   'resource', u.i, 'fence', p_fence, 'reference', p_reference,
                   'at_ms', floor(extract(epoch FROM v_now) * 1000)::bigint) ORDER BY u.n))
          INTO v_result FROM unnest(p_ids) WITH ORDINALITY AS u(i, n);
    ELSE
        v_result := jsonb_build_object('rows', jsonb_build_array(
                        jsonb_build_object('resource', v_resource, 'fence', v_seen)));
    END IF;
    UPDATE holdfast.idempotency SET code = v_code, result = v_result
     WHERE ns = p_ns AND key = p_key;
    RETURN QUERY SELECT * FROM holdfast.result_rows(v_code, false, v_result);
END
$$;
