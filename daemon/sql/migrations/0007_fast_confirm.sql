-- 0007_fast_confirm.sql - the same confirm, at a fraction of the cost.
--
-- Nothing here changes what a call answers or stores; it changes how much
-- work the server does to get there (issue 15). Measured with
-- bench/sql.sh, confirm() ran at about a tenth of a minimal two-INSERT claim
-- transaction, and most of that went to three things:
--
-- * Helpers with a SET clause. A function with `SET search_path` is never
--   inlined, and every call saves and restores the setting. request_hash()
--   alone ran about 5,000 times a second: it is a SQL function (planned
--   again in every transaction, since it cannot be inlined) calling another
--   one per field and per id. The helpers below drop their SET clause and
--   the hash is one plpgsql expression (its plan is cached per session).
--   They stay internal (EXECUTE revoked from PUBLIC) and are only called
--   from the API functions, which keep `SET search_path = pg_catalog,
--   pg_temp`: a helper runs under the search_path of that caller, so the
--   same names resolve as before. Everything they use is schema-qualified
--   or in pg_catalog.
-- * A subtransaction per confirm (the EXCEPTION block that undid the
--   claims on STALE/CONFLICT). confirm() now checks before it writes where
--   it can, and undoes its own uncommitted rows with a DELETE where it
--   cannot (a claim INSERT that came up short). A row inserted and deleted
--   in one transaction was never visible to anyone else, so to every other
--   session this is the same as the rolled-back sub-block.
-- * Two writes of the idempotency row. The key is bound with the result an
--   OK would store, and rewritten only on a refusal. The row is not visible
--   to anyone before COMMIT, so nobody can see the difference; what commits
--   is, as before, the call's result.
--
-- The request hash stays byte for byte the same, so a key bound before this
-- migration replays after it. The signatures stay too: a daemon of the
-- previous version works against this schema during a rolling upgrade.

-- ---- helpers: no SET clause (see above) ----

-- The request hash in one expression: sha256 over the length-prefixed UTF-8
-- of op, ns, partition, the number of ids, each id in byte order, the
-- reference, then the length-prefixed payload. Identical to 0002's.
-- confirm() below writes the same expression out for its own op; change
-- both or neither.
CREATE OR REPLACE FUNCTION holdfast.request_hash(p_op text, p_ns text, p_partition text,
                                                 p_ids text[], p_reference text, p_payload bytea)
RETURNS bytea LANGUAGE plpgsql STABLE
AS $$
BEGIN
    RETURN pg_catalog.sha256(
        pg_catalog.int4send(pg_catalog.octet_length(pg_catalog.convert_to(coalesce(p_op, ''), 'UTF8')))
        || pg_catalog.convert_to(coalesce(p_op, ''), 'UTF8')
        || pg_catalog.int4send(pg_catalog.octet_length(pg_catalog.convert_to(coalesce(p_ns, ''), 'UTF8')))
        || pg_catalog.convert_to(coalesce(p_ns, ''), 'UTF8')
        || pg_catalog.int4send(pg_catalog.octet_length(pg_catalog.convert_to(coalesce(p_partition, ''), 'UTF8')))
        || pg_catalog.convert_to(coalesce(p_partition, ''), 'UTF8')
        || pg_catalog.int4send(coalesce(pg_catalog.cardinality(p_ids), 0))
        || coalesce((SELECT pg_catalog.string_agg(
                                pg_catalog.int4send(pg_catalog.octet_length(
                                    pg_catalog.convert_to(coalesce(i, ''), 'UTF8')))
                                || pg_catalog.convert_to(coalesce(i, ''), 'UTF8'),
                                ''::bytea ORDER BY i COLLATE "C")
                       FROM pg_catalog.unnest(p_ids) AS i), ''::bytea)
        || pg_catalog.int4send(pg_catalog.octet_length(pg_catalog.convert_to(coalesce(p_reference, ''), 'UTF8')))
        || pg_catalog.convert_to(coalesce(p_reference, ''), 'UTF8')
        || pg_catalog.int4send(pg_catalog.octet_length(coalesce(p_payload, ''::bytea)))
        || coalesce(p_payload, ''::bytea));
END
$$;

-- Rows of a stored result. Without a SET clause this SQL function is inlined
-- into the query that calls it.
CREATE OR REPLACE FUNCTION holdfast.result_rows(p_code text, p_replayed boolean, p_result jsonb)
RETURNS SETOF holdfast.outcome LANGUAGE sql STABLE
AS $$
    SELECT p_code, p_replayed, x.r->>'resource', (x.r->>'fence')::bigint, x.r->>'reference',
           (x.r->>'at_ms')::bigint
      FROM (SELECT e.r, e.n
              FROM pg_catalog.jsonb_array_elements(coalesce(p_result->'rows', '[]'::jsonb))
                   WITH ORDINALITY AS e(r, n)
            UNION ALL
            SELECT NULL::jsonb, 0
             WHERE pg_catalog.jsonb_array_length(coalesce(p_result->'rows', '[]'::jsonb)) = 0) x
     ORDER BY x.n
$$;

CREATE OR REPLACE FUNCTION holdfast.stored_outcome(p_ns text, p_key text, p_op text, p_hash bytea)
RETURNS SETOF holdfast.outcome LANGUAGE plpgsql
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

CREATE OR REPLACE FUNCTION holdfast.bind_key(p_ns text, p_key text, p_op text, p_hash bytea)
RETURNS boolean LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO holdfast.idempotency (ns, key, op, request_hash, code, result, created_at)
    VALUES (p_ns, p_key, p_op, p_hash, 'PENDING', '{}', pg_catalog.now())
    ON CONFLICT (ns, key) DO NOTHING;
    RETURN FOUND;
END
$$;

-- A NULL or repeated id makes the distinct count fall short of the
-- cardinality, so one comparison covers both.
CREATE OR REPLACE FUNCTION holdfast.check_args(p_ns text, p_partition text, p_ids text[], p_key text)
RETURNS void LANGUAGE plpgsql
AS $$
BEGIN
    IF p_ns IS NULL OR p_partition IS NULL OR p_key IS NULL OR p_ids IS NULL
       OR pg_catalog.cardinality(p_ids) = 0
       OR (SELECT pg_catalog.count(DISTINCT i) FROM pg_catalog.unnest(p_ids) AS i)
          <> pg_catalog.cardinality(p_ids) THEN
        RAISE EXCEPTION 'holdfast: ns, partition, key and 1..n distinct ids are required'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$$;

-- Pools (0006): parse_units() without its SET clause; pool_result() also
-- reads the result rows itself (as result_rows() does), since a function
-- called WITH ORDINALITY is never inlined.
CREATE OR REPLACE FUNCTION holdfast.parse_units(p_units text[])
RETURNS TABLE (pool text, units integer, n bigint)
LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF p_units IS NULL OR cardinality(p_units) = 0 OR array_position(p_units, NULL) IS NOT NULL
       OR EXISTS (SELECT 1 FROM unnest(p_units) AS u(s)
                   WHERE s !~ '^[A-Za-z0-9._-]{1,128}=[1-9][0-9]{0,6}$'
                      OR split_part(s, '=', 2)::integer > 1000000)
       OR (SELECT count(DISTINCT split_part(s, '=', 1)) FROM unnest(p_units) AS u(s))
          <> cardinality(p_units) THEN
        RAISE EXCEPTION 'holdfast: units must be 1..n distinct pool=count items, count 1..1000000'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY SELECT split_part(s, '=', 1), split_part(s, '=', 2)::integer, o
                   FROM unnest(p_units) WITH ORDINALITY AS u(s, o);
END
$$;

CREATE OR REPLACE FUNCTION holdfast.pool_result(p_ns text, p_partition text, p_code text,
                                                p_replayed boolean, p_result jsonb,
                                                p_with_state boolean)
RETURNS SETOF holdfast.pool_outcome
LANGUAGE sql STABLE
AS $$
    SELECT p_code, p_replayed, x.r->>'resource', (x.r->>'fence')::bigint, x.r->>'reference',
           (x.r->>'at_ms')::bigint,
           CASE WHEN p_with_state THEN p.capacity IS NOT NULL END,
           CASE WHEN p_with_state THEN p.capacity END,
           CASE WHEN p_with_state THEN p.sold END,
           CASE WHEN p_with_state THEN p.version END
      FROM (SELECT e.r, e.n
              FROM pg_catalog.jsonb_array_elements(coalesce(p_result->'rows', '[]'::jsonb))
                   WITH ORDINALITY AS e(r, n)
            UNION ALL
            SELECT NULL::jsonb, 0
             WHERE pg_catalog.jsonb_array_length(coalesce(p_result->'rows', '[]'::jsonb)) = 0) x
      LEFT JOIN holdfast.pools p
        ON p.ns = p_ns AND p.partition = p_partition AND p.pool = x.r->>'resource'
     ORDER BY x.n
$$;

-- ---- confirm ----

-- Confirm: idempotency -> fence check -> claims, all ids or none; answers
-- and stores exactly what 0005's did. The steps:
--   1. bind the key, with the result an OK would have (replay or mismatch if
--      the key is bound already: nothing written);
--   2. fence rows for the ids, in byte order: rows that did not exist are
--      created with this hold's fence (and thereby locked). Only when some
--      existed are they all locked (byte order) and compared: one at this
--      fence or above -> STALE;
--   3. the claims, INSERT ... ON CONFLICT DO NOTHING in byte order: fewer
--      rows than ids -> CONFLICT;
--   4. older fences raised to this one.
-- On STALE or CONFLICT the rows this call inserted (fence rows, claims) are
-- deleted again before the result is stored; pre-existing rows were only
-- locked. The locks are taken in the same order as before.
CREATE OR REPLACE FUNCTION holdfast.confirm(p_ns text, p_partition text, p_ids text[],
                                            p_fence bigint, p_key text, p_reference text,
                                            p_payload bytea, p_lock_timeout_ms integer)
RETURNS SETOF holdfast.outcome
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_n        integer := cardinality(p_ids);
    v_ids      text[];
    v_distinct bigint;
    v_id_bytes bytea;
    v_rows     jsonb;
    v_new      text[];
    v_claimed  text[];
    v_code     text := 'OK';
    v_resource text;
    v_seen     bigint;
    v_hash     bytea;
    v_result   jsonb;
    v_now      timestamptz := now();
    v_at       bigint := floor(extract(epoch FROM now()) * 1000)::bigint;
BEGIN
    -- One pass over the ids: sorted (byte order), counted, their part of the
    -- request hash, and the rows of an OK.
    SELECT array_agg(u.i ORDER BY u.i COLLATE "C"), count(DISTINCT u.i),
           string_agg(int4send(octet_length(convert_to(coalesce(u.i, ''), 'UTF8')))
                      || convert_to(coalesce(u.i, ''), 'UTF8'), ''::bytea ORDER BY u.i COLLATE "C"),
           jsonb_agg(jsonb_build_object('resource', u.i, 'fence', p_fence,
                                        'reference', coalesce(p_reference, ''), 'at_ms', v_at)
                     ORDER BY u.n)
      INTO v_ids, v_distinct, v_id_bytes, v_rows
      FROM unnest(p_ids) WITH ORDINALITY AS u(i, n);
    -- The arguments, as check_args() has them.
    IF p_ns IS NULL OR p_partition IS NULL OR p_key IS NULL OR p_ids IS NULL OR v_n = 0
       OR v_distinct <> v_n THEN
        RAISE EXCEPTION 'holdfast: ns, partition, key and 1..n distinct ids are required'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_fence IS NULL OR p_fence <= 0 THEN
        RAISE EXCEPTION 'holdfast: fence must be positive' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_lock_timeout_ms > 0 THEN
        PERFORM set_config('lock_timeout', p_lock_timeout_ms::text, true);
    END IF;
    p_reference := coalesce(p_reference, '');
    p_payload := coalesce(p_payload, ''::bytea);

    -- 1. Idempotency: bind the key, with the result of an OK. The hash is
    -- request_hash()'s, written out (ns and partition are not NULL here).
    v_hash := sha256(int4send(7) || convert_to('confirm', 'UTF8')
                     || int4send(octet_length(convert_to(p_ns, 'UTF8'))) || convert_to(p_ns, 'UTF8')
                     || int4send(octet_length(convert_to(p_partition, 'UTF8')))
                     || convert_to(p_partition, 'UTF8')
                     || int4send(v_n) || v_id_bytes
                     || int4send(octet_length(convert_to(p_reference, 'UTF8')))
                     || convert_to(p_reference, 'UTF8')
                     || int4send(octet_length(p_payload)) || p_payload);
    v_result := jsonb_build_object('rows', v_rows);
    INSERT INTO holdfast.idempotency (ns, key, op, request_hash, code, result, created_at)
    VALUES (p_ns, p_key, 'confirm', v_hash, 'OK', v_result, v_now)
    ON CONFLICT (ns, key) DO NOTHING;
    IF NOT FOUND THEN
        RETURN QUERY SELECT * FROM holdfast.stored_outcome(p_ns, p_key, 'confirm', v_hash);
        RETURN;
    END IF;

    -- 2. Fences, in byte order (every confirm and cancel locks in that order,
    -- so overlapping ones queue instead of deadlocking).
    WITH ins AS (
        INSERT INTO holdfast.fences (ns, partition, resource, fence, updated_at)
        SELECT p_ns, p_partition, i, p_fence, v_now FROM unnest(v_ids) AS i
        ON CONFLICT DO NOTHING
        RETURNING resource)
    SELECT array_agg(resource) INTO v_new FROM ins;
    IF coalesce(cardinality(v_new), 0) < v_n THEN
        -- Some were seen before. A fence already seen is as stale as a
        -- higher one: each hold is confirmed once per resource.
        PERFORM 1 FROM holdfast.fences
         WHERE ns = p_ns AND partition = p_partition AND resource = ANY (v_ids)
         ORDER BY resource COLLATE "C" FOR UPDATE;
        SELECT f.resource, f.fence INTO v_resource, v_seen FROM holdfast.fences f
         WHERE f.ns = p_ns AND f.partition = p_partition AND f.resource = ANY (v_ids)
           AND f.fence >= p_fence
           AND (v_new IS NULL OR NOT (f.resource = ANY (v_new)))
         ORDER BY f.resource COLLATE "C" LIMIT 1;
        IF FOUND THEN
            v_code := 'STALE';
        END IF;
    END IF;

    -- 3. The claims. An existing claim is never overwritten.
    IF v_code = 'OK' THEN
        WITH ins AS (
            INSERT INTO holdfast.claims (ns, partition, resource, fence, reference, payload,
                                         idempotency_key, confirmed_at)
            SELECT p_ns, p_partition, i, p_fence, p_reference, p_payload, p_key, v_now
              FROM unnest(v_ids) AS i
            ON CONFLICT DO NOTHING
            RETURNING resource)
        SELECT array_agg(resource) INTO v_claimed FROM ins;
        IF coalesce(cardinality(v_claimed), 0) < v_n THEN
            v_code := 'CONFLICT';
            SELECT u.i INTO v_resource FROM unnest(p_ids) WITH ORDINALITY AS u(i, n)
             WHERE v_claimed IS NULL OR NOT (u.i = ANY (v_claimed))
             ORDER BY u.n LIMIT 1;
            IF v_claimed IS NOT NULL THEN
                DELETE FROM holdfast.claims
                 WHERE ns = p_ns AND partition = p_partition AND resource = ANY (v_claimed);
            END IF;
        END IF;
    END IF;

    IF v_code = 'OK' THEN
        -- 4. Raise the fences that were there before.
        IF coalesce(cardinality(v_new), 0) < v_n THEN
            UPDATE holdfast.fences SET fence = p_fence, updated_at = v_now
             WHERE ns = p_ns AND partition = p_partition AND resource = ANY (v_ids)
               AND fence < p_fence;
        END IF;
        RETURN QUERY SELECT 'OK'::text, false, u.i, p_fence, p_reference, v_at
                       FROM unnest(p_ids) WITH ORDINALITY AS u(i, n) ORDER BY u.n;
        RETURN;
    END IF;

    -- A refusal: nothing this call inserted stays, the key keeps the answer.
    IF v_new IS NOT NULL THEN
        DELETE FROM holdfast.fences
         WHERE ns = p_ns AND partition = p_partition AND resource = ANY (v_new);
    END IF;
    UPDATE holdfast.idempotency
       SET code = v_code,
           result = jsonb_build_object('rows', jsonb_build_array(
                        jsonb_build_object('resource', v_resource, 'fence', v_seen)))
     WHERE ns = p_ns AND key = p_key;
    RETURN QUERY SELECT v_code, false, v_resource, v_seen, NULL::text, NULL::bigint;
END
$$;
