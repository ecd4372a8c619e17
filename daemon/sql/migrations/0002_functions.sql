-- 0002_functions.sql - the SQL functions the daemon calls. A Confirm or a
-- Cancel is one call of one function: one round trip, one transaction.
--
-- The API functions (confirm, cancel, lookup, prune_idempotency,
-- schema_version) are SECURITY DEFINER: the daemon's role needs EXECUTE on
-- them and USAGE on the schema, and no privilege on any table (see
-- daemon/sql/roles-example.sql). resolve() is SECURITY INVOKER because it
-- ends the daemon's own server processes, which only that role may do.
-- Helpers are invoker functions that the daemon's role cannot use on its own.
--
-- Every function pins search_path and schema-qualifies what it uses, so no
-- object in a caller-writable schema can stand in for ours.

-- One row of a result. code: OK | CONFLICT | STALE | IDEMPOTENCY_MISMATCH
-- (results) or ABSENT | UNKNOWN (look-ups that found no record). For OK one
-- row per claim (Confirm) or per cancelled resource (Cancel; a single row
-- with resource NULL when nothing was cancelled); for an error one row naming
-- the resource (and, for STALE, the higher fence seen).
CREATE TYPE holdfast.outcome AS (
    code      text,
    replayed  boolean,
    resource  text,
    fence     bigint,
    reference text,
    at_ms     bigint
);

-- Length-prefixed UTF-8 bytes of one text, so ('ab','c') and ('a','bc') hash
-- differently.
CREATE FUNCTION holdfast.hash_field(p text) RETURNS bytea
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
AS $$
    SELECT int4send(octet_length(b)) || b FROM (SELECT convert_to(coalesce(p, ''), 'UTF8') AS b) s
$$;

-- What an idempotency key is bound to: the operation, the target (ids in
-- byte order, so their order in the request does not matter), the reference
-- and the payload. Neither the token nor the fence: both are new for every
-- hold, and a retry of the same confirm after re-holding is the same request.
CREATE FUNCTION holdfast.request_hash(p_op text, p_ns text, p_partition text, p_ids text[],
                                      p_reference text, p_payload bytea)
RETURNS bytea LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
AS $$
    SELECT sha256(
        holdfast.hash_field(p_op) || holdfast.hash_field(p_ns) ||
        holdfast.hash_field(p_partition) ||
        int4send(coalesce(cardinality(p_ids), 0)) ||
        coalesce((SELECT string_agg(holdfast.hash_field(i), ''::bytea ORDER BY i COLLATE "C")
                    FROM unnest(p_ids) AS i), ''::bytea) ||
        holdfast.hash_field(p_reference) ||
        int4send(octet_length(coalesce(p_payload, ''::bytea))) || coalesce(p_payload, ''::bytea))
$$;

-- Rows of a stored result ({"rows": [...]} as kept in idempotency.result).
CREATE FUNCTION holdfast.result_rows(p_code text, p_replayed boolean, p_result jsonb)
RETURNS SETOF holdfast.outcome LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
AS $$
    SELECT p_code, p_replayed, x.r->>'resource', (x.r->>'fence')::bigint, x.r->>'reference',
           (x.r->>'at_ms')::bigint
      FROM (SELECT e.r, e.n
              FROM jsonb_array_elements(coalesce(p_result->'rows', '[]'::jsonb))
                   WITH ORDINALITY AS e(r, n)
            UNION ALL
            SELECT NULL::jsonb, 0
             WHERE jsonb_array_length(coalesce(p_result->'rows', '[]'::jsonb)) = 0) x
     ORDER BY x.n
$$;

-- What a key already holds: the stored result (replayed), a mismatch when the
-- key was used for another request, or ABSENT.
CREATE FUNCTION holdfast.stored_outcome(p_ns text, p_key text, p_op text, p_hash bytea)
RETURNS SETOF holdfast.outcome LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v holdfast.idempotency;
BEGIN
    SELECT * INTO v FROM holdfast.idempotency WHERE ns = p_ns AND key = p_key;
    IF NOT FOUND THEN
        RETURN QUERY SELECT * FROM holdfast.result_rows('ABSENT', false, NULL);
    ELSIF v.op <> p_op OR v.request_hash <> p_hash THEN
        RETURN QUERY SELECT * FROM holdfast.result_rows('IDEMPOTENCY_MISMATCH', false, NULL);
    ELSE
        RETURN QUERY SELECT * FROM holdfast.result_rows(v.code, true, v.result);
    END IF;
END
$$;

-- Bind the key to this request, or find what it is already bound to. A
-- concurrent request with the same key waits here on the primary key until
-- the first one commits or rolls back. true: the key is ours (code PENDING
-- until the caller stores the result in the same transaction).
CREATE FUNCTION holdfast.bind_key(p_ns text, p_key text, p_op text, p_hash bytea)
RETURNS boolean LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO holdfast.idempotency (ns, key, op, request_hash, code, result, created_at)
    VALUES (p_ns, p_key, p_op, p_hash, 'PENDING', '{}', now())
    ON CONFLICT (ns, key) DO NOTHING;
    RETURN FOUND;
END
$$;

CREATE FUNCTION holdfast.check_args(p_ns text, p_partition text, p_ids text[], p_key text)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_ns IS NULL OR p_partition IS NULL OR p_key IS NULL OR p_ids IS NULL
       OR cardinality(p_ids) = 0 OR array_position(p_ids, NULL) IS NOT NULL
       OR (SELECT count(DISTINCT i) FROM unnest(p_ids) AS i) <> cardinality(p_ids) THEN
        RAISE EXCEPTION 'holdfast: ns, partition, key and 1..n distinct ids are required'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$$;

-- Confirm: idempotency -> fence check -> claims, all ids or none.
--   OK: one row per claim. STALE: a newer fence was seen for `resource`.
--   CONFLICT: `resource` is claimed already; nothing was claimed.
--   IDEMPOTENCY_MISMATCH: the key belongs to a different request.
-- A STALE or CONFLICT result is stored under the key like a success (the
-- claims are rolled back, the record is kept), so a retry with the same key
-- gets the same answer. Unexpected errors roll everything back, the key
-- included. p_lock_timeout_ms (> 0) bounds every lock wait, so a blocked
-- confirm gives up inside the caller's deadline with nothing written.
CREATE FUNCTION holdfast.confirm(p_ns text, p_partition text, p_ids text[], p_fence bigint,
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
        INSERT INTO holdfast.fences (ns, partition, resource, fence, updated_at)
        SELECT p_ns, p_partition, i, 0, v_now FROM unnest(v_ids) AS i
        ON CONFLICT DO NOTHING;
        PERFORM 1 FROM holdfast.fences
         WHERE ns = p_ns AND partition = p_partition AND resource = ANY (v_ids)
         ORDER BY resource COLLATE "C" FOR UPDATE;
        SELECT f.resource, f.fence INTO v_resource, v_seen FROM holdfast.fences f
         WHERE f.ns = p_ns AND f.partition = p_partition AND f.resource = ANY (v_ids)
           AND f.fence > p_fence
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

-- Cancel: move the claims of these ids (those that exist) into the history,
-- idempotent by key. Fences stay, so an older holder stays stale.
CREATE FUNCTION holdfast.cancel(p_ns text, p_partition text, p_ids text[], p_key text,
                                p_reference text, p_lock_timeout_ms integer)
RETURNS SETOF holdfast.outcome
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_hash   bytea;
    v_ids    text[];
    v_result jsonb;
    v_now    timestamptz := now();
BEGIN
    PERFORM holdfast.check_args(p_ns, p_partition, p_ids, p_key);
    IF p_lock_timeout_ms > 0 THEN
        PERFORM set_config('lock_timeout', p_lock_timeout_ms::text, true);
    END IF;
    p_reference := coalesce(p_reference, '');

    v_hash := holdfast.request_hash('cancel', p_ns, p_partition, p_ids, p_reference, ''::bytea);
    IF NOT holdfast.bind_key(p_ns, p_key, 'cancel', v_hash) THEN
        RETURN QUERY SELECT * FROM holdfast.stored_outcome(p_ns, p_key, 'cancel', v_hash);
        RETURN;
    END IF;

    v_ids := ARRAY(SELECT i FROM unnest(p_ids) AS i ORDER BY i COLLATE "C");
    PERFORM 1 FROM holdfast.claims
     WHERE ns = p_ns AND partition = p_partition AND resource = ANY (v_ids)
     ORDER BY resource COLLATE "C" FOR UPDATE;
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

-- The stored result of a key for this request, without changing anything:
-- a Confirm whose hold is gone asks this before answering HOLD_LOST.
CREATE FUNCTION holdfast.lookup(p_op text, p_ns text, p_key text, p_partition text,
                                p_ids text[], p_reference text, p_payload bytea)
RETURNS SETOF holdfast.outcome
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT * FROM holdfast.stored_outcome(p_ns, p_key, p_op,
        holdfast.request_hash(p_op, p_ns, p_partition, p_ids, coalesce(p_reference, ''),
                              coalesce(p_payload, ''::bytea)))
$$;

-- An in-doubt call (sent, then the connection was lost or its deadline
-- passed): first make sure the server process that ran it (p_pid, started
-- at p_backend_start_us) is gone, so its transaction has either committed
-- or rolled back for good; then look the key up. ABSENT then means "did not
-- commit"; UNKNOWN means the process could not be ended within p_wait_ms
-- (or p_pid is 0: not known).
CREATE FUNCTION holdfast.resolve(p_op text, p_ns text, p_key text, p_partition text,
                                 p_ids text[], p_reference text, p_payload bytea,
                                 p_pid integer, p_backend_start_us bigint, p_wait_ms integer)
RETURNS SETOF holdfast.outcome
LANGUAGE plpgsql SECURITY INVOKER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_final boolean := true;
    v_row   holdfast.outcome;
BEGIN
    IF p_pid IS NULL OR p_pid <= 0 THEN
        v_final := false; -- the process is not known: it cannot be shown to be gone
    ELSE
        BEGIN
            SELECT coalesce(bool_and(pg_terminate_backend(a.pid, greatest(p_wait_ms, 1))), true)
              INTO v_final
              FROM pg_stat_activity a
             WHERE a.pid = p_pid AND a.pid <> pg_backend_pid()
               AND floor(extract(epoch FROM a.backend_start) * 1000000)::bigint
                   = p_backend_start_us;
        EXCEPTION WHEN insufficient_privilege THEN
            v_final := false;
        END;
    END IF;
    FOR v_row IN SELECT * FROM holdfast.lookup(p_op, p_ns, p_key, p_partition, p_ids,
                                               p_reference, p_payload) LOOP
        IF v_row.code = 'ABSENT' AND NOT v_final THEN
            v_row.code := 'UNKNOWN';
        END IF;
        RETURN NEXT v_row;
    END LOOP;
END
$$;

-- Delete idempotency records older than the retention (at least a minute:
-- a shorter one would break retries in flight), a batch at a time. Only one
-- caller prunes at a time; the others return 0 at once.
CREATE FUNCTION holdfast.prune_idempotency(p_retention_s integer, p_batch integer DEFAULT 1000)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_n integer;
BEGIN
    IF NOT pg_try_advisory_xact_lock(1752132708, 2) THEN -- 'hold', 2: pruning
        RETURN 0;
    END IF;
    DELETE FROM holdfast.idempotency i
     USING (SELECT ns, key FROM holdfast.idempotency
             WHERE created_at < now() - make_interval(secs => greatest(p_retention_s, 60))
             ORDER BY created_at LIMIT greatest(p_batch, 1)
             FOR UPDATE SKIP LOCKED) d
     WHERE i.ns = d.ns AND i.key = d.key;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;

-- The schema version the daemon checks when it connects.
CREATE FUNCTION holdfast.schema_version() RETURNS integer
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT coalesce(max(version), 0) FROM holdfast.schema_migrations $$;

-- Functions are executable by PUBLIC unless revoked; grant them to the
-- daemon's role explicitly (roles-example.sql).
REVOKE ALL ON FUNCTION holdfast.hash_field(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION holdfast.request_hash(text, text, text, text[], text, bytea) FROM PUBLIC;
REVOKE ALL ON FUNCTION holdfast.result_rows(text, boolean, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION holdfast.stored_outcome(text, text, text, bytea) FROM PUBLIC;
REVOKE ALL ON FUNCTION holdfast.bind_key(text, text, text, bytea) FROM PUBLIC;
REVOKE ALL ON FUNCTION holdfast.check_args(text, text, text[], text) FROM PUBLIC;
REVOKE ALL ON FUNCTION holdfast.confirm(text, text, text[], bigint, text, text, bytea, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION holdfast.cancel(text, text, text[], text, text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION holdfast.lookup(text, text, text, text, text[], text, bytea) FROM PUBLIC;
REVOKE ALL ON FUNCTION holdfast.resolve(text, text, text, text, text[], text, bytea, integer, bigint, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION holdfast.prune_idempotency(integer, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION holdfast.schema_version() FROM PUBLIC;

-- The daemon's role gets EXECUTE through the group role holdfast_api when it
-- exists (daemon/sql/roles-example.sql creates it; a single-role setup has
-- no need for it). Future migrations grant their new API functions the same way.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'holdfast_api') THEN
        GRANT USAGE ON SCHEMA holdfast TO holdfast_api;
        GRANT EXECUTE ON FUNCTION
            holdfast.confirm(text, text, text[], bigint, text, text, bytea, integer),
            holdfast.cancel(text, text, text[], text, text, integer),
            holdfast.lookup(text, text, text, text, text[], text, bytea),
            holdfast.resolve(text, text, text, text, text[], text, bytea, integer, bigint, integer),
            holdfast.prune_idempotency(integer, integer),
            holdfast.schema_version()
        TO holdfast_api;
    END IF;
END
$$;
