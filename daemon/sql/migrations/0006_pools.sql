-- 0006_pools.sql - quantity holds: pools with a capacity, sold by units.
--
-- A namespace of kind "pools" sells units of pools (general admission, a
-- coupon batch, stock of one SKU) instead of resource ids. PostgreSQL is
-- the system of record for every pool's capacity and sold units; Redis only
-- mirrors them to refuse early and keeps the live holds.
--
--   pools             one row per (ns, partition, pool): capacity (NULL:
--                     the partition's default, the row whose pool is '*'),
--                     sold, version (bumped on every change, so the Redis
--                     mirror never goes back to an older state).
--   pool_claims       one row per confirmed hold: its fence (one hold is
--                     confirmed at most once, whatever key a retry uses), the
--                     idempotency key (unique: never two sales under a key,
--                     also after the key's record is pruned), reference,
--                     payload.
--   pool_claim_units  the units each claim took per pool, and how many of
--                     them were cancelled since.
--   pool_cancellations  every cancel: units given back per pool.
--
-- No interleaving sells more than the capacity: every change to a pool's
-- sold units happens under its row lock (rows locked in byte order, the
-- partition's default row first and shared), after checking
-- sold + units <= capacity; a CHECK constraint backs it for pools with a
-- capacity of their own. A pool that follows the default is checked against
-- the default under a share lock on the default's row, which a lowering of
-- the default takes exclusively.
--
-- Confirm and Cancel of units are idempotent by key and final like
-- confirm()/cancel() (docs/confirm.md, "Every answer is final"): they bind
-- the key first (bind_key), store every definite result under it, and a
-- retry replays it. Their records use the ops 'pool_confirm' and
-- 'pool_cancel', so a key of a seat confirm is never mistaken for one of a
-- pool confirm. The units travel as text[] of 'pool=count' (pool names are
-- [A-Za-z0-9._-], so '=' never occurs in one): that is what request_hash()
-- and resolve() see as the request's ids.

ALTER TABLE holdfast.idempotency DROP CONSTRAINT idempotency_op_check;
ALTER TABLE holdfast.idempotency ADD CONSTRAINT idempotency_op_check
    CHECK (op IN ('confirm', 'cancel', 'pool_confirm', 'pool_cancel'));

CREATE TABLE holdfast.pools (
    ns         text        NOT NULL,
    partition  text        NOT NULL,
    pool       text        NOT NULL,
    capacity   bigint      CHECK (capacity >= 0),
    sold       bigint      NOT NULL DEFAULT 0 CHECK (sold >= 0),
    version    bigint      NOT NULL DEFAULT 1 CHECK (version > 0),
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (ns, partition, pool),
    CHECK (capacity IS NULL OR sold <= capacity),
    CHECK (pool <> '*' OR (capacity IS NOT NULL AND sold = 0))
);

CREATE TABLE holdfast.pool_claims (
    ns              text        NOT NULL,
    partition       text        NOT NULL,
    fence           bigint      NOT NULL CHECK (fence > 0),
    idempotency_key text        NOT NULL,
    reference       text        NOT NULL,
    payload         bytea       NOT NULL,
    confirmed_at    timestamptz NOT NULL,
    PRIMARY KEY (ns, partition, fence),
    UNIQUE (ns, partition, idempotency_key)
);
CREATE INDEX pool_claims_reference ON holdfast.pool_claims (ns, partition, reference);

CREATE TABLE holdfast.pool_claim_units (
    ns        text    NOT NULL,
    partition text    NOT NULL,
    fence     bigint  NOT NULL,
    pool      text    NOT NULL,
    units     integer NOT NULL CHECK (units > 0),
    cancelled integer NOT NULL DEFAULT 0 CHECK (cancelled >= 0 AND cancelled <= units),
    PRIMARY KEY (ns, partition, fence, pool),
    FOREIGN KEY (ns, partition, fence) REFERENCES holdfast.pool_claims (ns, partition, fence)
);
CREATE INDEX pool_claim_units_pool ON holdfast.pool_claim_units (ns, partition, pool);

CREATE TABLE holdfast.pool_cancellations (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ns              text        NOT NULL,
    partition       text        NOT NULL,
    pool            text        NOT NULL,
    units           integer     NOT NULL CHECK (units > 0),
    reference       text        NOT NULL,
    idempotency_key text        NOT NULL,
    cancelled_at    timestamptz NOT NULL
);
CREATE INDEX pool_cancellations_pool ON holdfast.pool_cancellations (ns, partition, pool);

-- A result row of the pool functions: holdfast.outcome's columns (so the
-- daemon's parser and resolve() read them alike), then the pool's state
-- after the call for the Redis mirror (NULL in replays). For OK one row per
-- pool; for a refusal one row naming the pool:
--   SOLD_OUT     fence = the units still unsold in that pool;
--   CONFLICT     the hold (fence) was already confirmed, or the key already
--                has a sale;
--   NOT_CLAIMED  (cancel) fence = the units still sold under the reference.
CREATE TYPE holdfast.pool_outcome AS (
    code      text,
    replayed  boolean,
    resource  text,
    fence     bigint,
    reference text,
    at_ms     bigint,
    own       boolean,
    capacity  bigint,
    sold      bigint,
    version   bigint
);

-- 'pool=count' strings -> (pool, units, n: position in the request).
-- Refuses malformed items, counts outside 1..1000000 and a pool named twice.
CREATE FUNCTION holdfast.parse_units(p_units text[])
RETURNS TABLE (pool text, units integer, n bigint)
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp
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

-- Rows of a result with each pool's state after the call (NULL for rows
-- that name no pool, and for replays).
CREATE FUNCTION holdfast.pool_result(p_ns text, p_partition text, p_code text,
                                     p_replayed boolean, p_result jsonb, p_with_state boolean)
RETURNS SETOF holdfast.pool_outcome
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
AS $$
    SELECT r.code, r.replayed, r.resource, r.fence, r.reference, r.at_ms,
           CASE WHEN p_with_state THEN p.capacity IS NOT NULL END,
           CASE WHEN p_with_state THEN p.capacity END,
           CASE WHEN p_with_state THEN p.sold END,
           CASE WHEN p_with_state THEN p.version END
      FROM holdfast.result_rows(p_code, p_replayed, p_result)
           WITH ORDINALITY AS r(code, replayed, resource, fence, reference, at_ms, o)
      LEFT JOIN holdfast.pools p
        ON p.ns = p_ns AND p.partition = p_partition AND p.pool = r.resource
     ORDER BY r.o
$$;

-- Confirm units: idempotency -> capacity check under the pools' row locks ->
-- the claim (one per hold: its fence) -> sold += units. All pools or none.
--   OK: one row per pool, in the request's order.
--   SOLD_OUT: `resource` has fewer than the units asked left unsold.
--   CONFLICT: this hold was already confirmed (under another key), or the
--             key already has a sale.
--   IDEMPOTENCY_MISMATCH: the key belongs to a different request.
-- SOLD_OUT and CONFLICT are stored under the key like a success.
CREATE FUNCTION holdfast.pool_confirm(p_ns text, p_partition text, p_units text[],
                                      p_fence bigint, p_key text, p_reference text,
                                      p_payload bytea, p_lock_timeout_ms integer)
RETURNS SETOF holdfast.pool_outcome
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_hash     bytea;
    v_code     text := 'OK';
    v_resource text;
    v_seen     bigint;
    v_default  bigint;
    v_result   jsonb;
    v_pools    text[];
    v_counts   integer[];
    v_updated  bigint;
    v_now      timestamptz := now();
BEGIN
    PERFORM holdfast.check_args(p_ns, p_partition, p_units, p_key);
    IF p_fence IS NULL OR p_fence <= 0 THEN
        RAISE EXCEPTION 'holdfast: fence must be positive'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_lock_timeout_ms > 0 THEN
        PERFORM set_config('lock_timeout', p_lock_timeout_ms::text, true);
    END IF;
    p_reference := coalesce(p_reference, '');
    p_payload := coalesce(p_payload, ''::bytea);

    v_hash := holdfast.request_hash('pool_confirm', p_ns, p_partition, p_units, p_reference,
                                    p_payload);
    IF NOT holdfast.bind_key(p_ns, p_key, 'pool_confirm', v_hash) THEN
        RETURN QUERY SELECT o.*, NULL::boolean, NULL::bigint, NULL::bigint, NULL::bigint
                       FROM holdfast.stored_outcome(p_ns, p_key, 'pool_confirm', v_hash) o;
        RETURN;
    END IF;

    SELECT array_agg(x.pool ORDER BY x.n), array_agg(x.units ORDER BY x.n)
      INTO v_pools, v_counts FROM holdfast.parse_units(p_units) x;

    BEGIN
        -- The partition's default first ('*' sorts before every pool name),
        -- shared: a lowering of the default waits for this confirm.
        SELECT d.capacity INTO v_default FROM holdfast.pools d
         WHERE d.ns = p_ns AND d.partition = p_partition AND d.pool = '*' FOR SHARE;
        -- Pools sold for the first time get a row that follows the default.
        INSERT INTO holdfast.pools (ns, partition, pool, capacity, sold, version, updated_at)
        SELECT p_ns, p_partition, u.pool, NULL, 0, 1, v_now FROM unnest(v_pools) AS u(pool)
         ORDER BY u.pool COLLATE "C"
        ON CONFLICT DO NOTHING;
        PERFORM 1 FROM holdfast.pools p
         WHERE p.ns = p_ns AND p.partition = p_partition
           AND p.pool = ANY (v_pools)
         ORDER BY p.pool COLLATE "C" FOR UPDATE;

        -- The first pool, in the request's order, without enough units left.
        SELECT u.pool, greatest(coalesce(p.capacity, v_default, 0) - p.sold, 0)
          INTO v_resource, v_seen
          FROM unnest(v_pools, v_counts) WITH ORDINALITY AS u(pool, units, n)
          JOIN holdfast.pools p ON p.ns = p_ns AND p.partition = p_partition AND p.pool = u.pool
         WHERE p.sold + u.units > coalesce(p.capacity, v_default, 0)
         ORDER BY u.n LIMIT 1;
        IF FOUND THEN
            v_code := 'SOLD_OUT';
            RAISE EXCEPTION USING ERRCODE = 'HF001', MESSAGE = 'holdfast: sold out';
        END IF;

        -- One claim per hold, one sale per key.
        INSERT INTO holdfast.pool_claims (ns, partition, fence, idempotency_key, reference,
                                          payload, confirmed_at)
        VALUES (p_ns, p_partition, p_fence, p_key, p_reference, p_payload, v_now)
        ON CONFLICT DO NOTHING;
        IF NOT FOUND THEN
            v_code := 'CONFLICT';
            v_seen := p_fence;
            v_resource := v_pools[1];
            RAISE EXCEPTION USING ERRCODE = 'HF002', MESSAGE = 'holdfast: already confirmed';
        END IF;
        INSERT INTO holdfast.pool_claim_units (ns, partition, fence, pool, units)
        SELECT p_ns, p_partition, p_fence, u.pool, u.units
          FROM unnest(v_pools, v_counts) AS u(pool, units);

        -- The check above, as the write's own condition: never more than the
        -- capacity, whatever ran in between.
        UPDATE holdfast.pools p SET sold = p.sold + u.units, version = p.version + 1,
                                    updated_at = v_now
          FROM unnest(v_pools, v_counts) WITH ORDINALITY AS u(pool, units, n)
         WHERE p.ns = p_ns AND p.partition = p_partition AND p.pool = u.pool
           AND p.sold + u.units <= coalesce(p.capacity, v_default, 0);
        GET DIAGNOSTICS v_updated = ROW_COUNT;
        IF v_updated <> cardinality(v_pools) THEN
            RAISE EXCEPTION 'holdfast: a pool changed under its row lock'
                USING ERRCODE = 'internal_error';
        END IF;
    EXCEPTION WHEN SQLSTATE 'HF001' OR SQLSTATE 'HF002' THEN
        NULL; -- v_code and v_resource say why; the block's writes are undone
    END;

    IF v_code = 'OK' THEN
        SELECT jsonb_build_object('rows', jsonb_agg(jsonb_build_object(
                   'resource', u.pool, 'fence', p_fence, 'reference', p_reference,
                   'at_ms', floor(extract(epoch FROM v_now) * 1000)::bigint) ORDER BY u.n))
          INTO v_result FROM unnest(v_pools, v_counts) WITH ORDINALITY AS u(pool, units, n);
    ELSE
        v_result := jsonb_build_object('rows', jsonb_build_array(
                        jsonb_build_object('resource', v_resource, 'fence', v_seen)));
    END IF;
    UPDATE holdfast.idempotency SET code = v_code, result = v_result
     WHERE ns = p_ns AND key = p_key;
    RETURN QUERY SELECT * FROM holdfast.pool_result(p_ns, p_partition, v_code, false, v_result,
                                                    true);
END
$$;

-- A Confirm of units whose hold is gone: bind the key to HOLD_LOST for good,
-- unless an attempt with it has a result (then that is replayed); see
-- confirm_gone() in 0003.
CREATE FUNCTION holdfast.pool_confirm_gone(p_ns text, p_partition text, p_units text[],
                                           p_key text, p_reference text, p_payload bytea,
                                           p_resource text, p_lock_timeout_ms integer)
RETURNS SETOF holdfast.outcome
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_hash   bytea;
    v_result jsonb;
BEGIN
    PERFORM holdfast.check_args(p_ns, p_partition, p_units, p_key);
    PERFORM holdfast.parse_units(p_units);
    IF p_lock_timeout_ms > 0 THEN
        PERFORM set_config('lock_timeout', p_lock_timeout_ms::text, true);
    END IF;
    v_hash := holdfast.request_hash('pool_confirm', p_ns, p_partition, p_units,
                                    coalesce(p_reference, ''), coalesce(p_payload, ''::bytea));
    IF NOT holdfast.bind_key(p_ns, p_key, 'pool_confirm', v_hash) THEN
        RETURN QUERY SELECT * FROM holdfast.stored_outcome(p_ns, p_key, 'pool_confirm', v_hash);
        RETURN;
    END IF;
    v_result := jsonb_build_object('rows', jsonb_build_array(
                    jsonb_build_object('resource', p_resource)));
    UPDATE holdfast.idempotency SET code = 'HOLD_LOST', result = v_result
     WHERE ns = p_ns AND key = p_key;
    RETURN QUERY SELECT * FROM holdfast.result_rows('HOLD_LOST', false, v_result);
END
$$;

-- Cancel units sold under a reference (the order this cancel refunds), all
-- pools or none, idempotent by key. Each pool gives back `count` of the
-- units its claims under the reference still have (oldest claim first).
--   OK: one row per pool.
--   NOT_CLAIMED: `resource` has fewer units than asked sold under the
--                reference (fence = how many); nothing was cancelled.
CREATE FUNCTION holdfast.pool_cancel(p_ns text, p_partition text, p_units text[], p_key text,
                                     p_reference text, p_lock_timeout_ms integer)
RETURNS SETOF holdfast.pool_outcome
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_hash     bytea;
    v_result   jsonb;
    v_code     text := 'OK';
    v_resource text;
    v_seen     bigint;
    v_now      timestamptz := now();
    v_unit     record;
    v_claim    record;
    v_left     integer;
    v_take     integer;
    v_pools    text[];
    v_counts   integer[];
BEGIN
    PERFORM holdfast.check_args(p_ns, p_partition, p_units, p_key);
    IF p_reference IS NULL OR p_reference = '' THEN
        RAISE EXCEPTION 'holdfast: cancel needs the reference its units were confirmed with'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_lock_timeout_ms > 0 THEN
        PERFORM set_config('lock_timeout', p_lock_timeout_ms::text, true);
    END IF;

    v_hash := holdfast.request_hash('pool_cancel', p_ns, p_partition, p_units, p_reference,
                                    ''::bytea);
    IF NOT holdfast.bind_key(p_ns, p_key, 'pool_cancel', v_hash) THEN
        RETURN QUERY SELECT o.*, NULL::boolean, NULL::bigint, NULL::bigint, NULL::bigint
                       FROM holdfast.stored_outcome(p_ns, p_key, 'pool_cancel', v_hash) o;
        RETURN;
    END IF;

    SELECT array_agg(x.pool ORDER BY x.n), array_agg(x.units ORDER BY x.n)
      INTO v_pools, v_counts FROM holdfast.parse_units(p_units) x;

    -- Every change to a pool's claims and sold units happens under its row lock.
    PERFORM 1 FROM holdfast.pools p
     WHERE p.ns = p_ns AND p.partition = p_partition AND p.pool = ANY (v_pools)
     ORDER BY p.pool COLLATE "C" FOR UPDATE;

    SELECT u.pool, coalesce(s.still, 0) INTO v_resource, v_seen
      FROM unnest(v_pools, v_counts) WITH ORDINALITY AS u(pool, units, n)
      LEFT JOIN (SELECT cu.pool, sum(cu.units - cu.cancelled) AS still
                   FROM holdfast.pool_claim_units cu
                   JOIN holdfast.pool_claims c
                     ON c.ns = cu.ns AND c.partition = cu.partition AND c.fence = cu.fence
                  WHERE cu.ns = p_ns AND cu.partition = p_partition
                    AND c.reference = p_reference
                  GROUP BY cu.pool) s ON s.pool = u.pool
     WHERE coalesce(s.still, 0) < u.units
     ORDER BY u.n LIMIT 1;
    IF FOUND THEN
        v_result := jsonb_build_object('rows', jsonb_build_array(
                        jsonb_build_object('resource', v_resource, 'fence', v_seen)));
        UPDATE holdfast.idempotency SET code = 'NOT_CLAIMED', result = v_result
         WHERE ns = p_ns AND key = p_key;
        RETURN QUERY SELECT * FROM holdfast.pool_result(p_ns, p_partition, 'NOT_CLAIMED', false,
                                                        v_result, true);
        RETURN;
    END IF;

    FOR v_unit IN SELECT u.pool, u.units FROM unnest(v_pools, v_counts) AS u(pool, units)
                   ORDER BY u.pool COLLATE "C" LOOP
        v_left := v_unit.units;
        FOR v_claim IN
            SELECT cu.fence, cu.units - cu.cancelled AS still
              FROM holdfast.pool_claim_units cu
              JOIN holdfast.pool_claims c
                ON c.ns = cu.ns AND c.partition = cu.partition AND c.fence = cu.fence
             WHERE cu.ns = p_ns AND cu.partition = p_partition AND cu.pool = v_unit.pool
               AND c.reference = p_reference AND cu.cancelled < cu.units
             ORDER BY cu.fence
        LOOP
            EXIT WHEN v_left = 0;
            v_take := least(v_left, v_claim.still);
            UPDATE holdfast.pool_claim_units SET cancelled = cancelled + v_take
             WHERE ns = p_ns AND partition = p_partition AND fence = v_claim.fence
               AND pool = v_unit.pool;
            v_left := v_left - v_take;
        END LOOP;
        UPDATE holdfast.pools SET sold = sold - v_unit.units, version = version + 1,
                                  updated_at = v_now
         WHERE ns = p_ns AND partition = p_partition AND pool = v_unit.pool;
        INSERT INTO holdfast.pool_cancellations (ns, partition, pool, units, reference,
                                                 idempotency_key, cancelled_at)
        VALUES (p_ns, p_partition, v_unit.pool, v_unit.units, p_reference, p_key, v_now);
    END LOOP;

    SELECT jsonb_build_object('rows', jsonb_agg(jsonb_build_object(
               'resource', u.pool, 'fence', u.units) ORDER BY u.n))
      INTO v_result FROM unnest(v_pools, v_counts) WITH ORDINALITY AS u(pool, units, n);
    UPDATE holdfast.idempotency SET code = 'OK', result = v_result
     WHERE ns = p_ns AND key = p_key;
    RETURN QUERY SELECT * FROM holdfast.pool_result(p_ns, p_partition, 'OK', false, v_result,
                                                    true);
END
$$;

-- Set a pool's capacity (p_pool '*': the partition's default, the capacity
-- of every pool without one of its own). Lowering it below what is sold is
-- refused: BELOW_SOLD names the pool (for the default: a pool that follows
-- it) with its sold units, and nothing changes. Absolute, so a retry is safe.
-- -> one row: code (OK | BELOW_SOLD), pool, own, capacity, sold, version.
CREATE FUNCTION holdfast.set_capacity(p_ns text, p_partition text, p_pool text,
                                      p_capacity bigint, p_lock_timeout_ms integer)
RETURNS TABLE (code text, pool text, own boolean, capacity bigint, sold bigint,
               version bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_row  holdfast.pools;
    v_over holdfast.pools;
    v_now  timestamptz := now();
BEGIN
    IF p_ns IS NULL OR p_partition IS NULL OR p_pool IS NULL
       OR p_pool !~ '^([A-Za-z0-9._-]{1,128}|\*)$'
       OR p_capacity IS NULL OR p_capacity < 0 OR p_capacity > 1000000000000 THEN
        RAISE EXCEPTION 'holdfast: ns, partition, a pool and a capacity 0..10^12 are required'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_lock_timeout_ms > 0 THEN
        PERFORM set_config('lock_timeout', p_lock_timeout_ms::text, true);
    END IF;
    INSERT INTO holdfast.pools AS p (ns, partition, pool, capacity, sold, version, updated_at)
    VALUES (p_ns, p_partition, p_pool, p_capacity, 0, 1, v_now)
    ON CONFLICT DO NOTHING
    RETURNING * INTO v_row;
    IF FOUND THEN
        RETURN QUERY SELECT 'OK', v_row.pool, true, v_row.capacity, v_row.sold, v_row.version;
        RETURN;
    END IF;
    SELECT * INTO v_row FROM holdfast.pools p
     WHERE p.ns = p_ns AND p.partition = p_partition AND p.pool = p_pool FOR UPDATE;
    IF p_pool = '*' THEN
        -- Confirms of pools that follow the default hold a share lock on it,
        -- so the pools' sold units cannot grow while this looks at them.
        SELECT * INTO v_over FROM holdfast.pools p
         WHERE p.ns = p_ns AND p.partition = p_partition AND p.capacity IS NULL
           AND p.sold > p_capacity
         ORDER BY p.sold DESC, p.pool COLLATE "C" LIMIT 1;
        IF FOUND THEN
            RETURN QUERY SELECT 'BELOW_SOLD', v_over.pool, false, v_row.capacity, v_over.sold,
                                v_row.version;
            RETURN;
        END IF;
    ELSIF p_capacity < v_row.sold THEN
        RETURN QUERY SELECT 'BELOW_SOLD', v_row.pool, v_row.capacity IS NOT NULL,
                            v_row.capacity, v_row.sold, v_row.version;
        RETURN;
    END IF;
    UPDATE holdfast.pools p SET capacity = p_capacity, version = p.version + 1, updated_at = v_now
     WHERE p.ns = p_ns AND p.partition = p_partition AND p.pool = p_pool
    RETURNING * INTO v_row;
    RETURN QUERY SELECT 'OK', v_row.pool, true, v_row.capacity, v_row.sold, v_row.version;
END
$$;

-- The pools as PostgreSQL has them, for the Redis mirror and GetCapacity:
-- one row per pool asked for, in order (a pool without a row: own false,
-- capacity NULL, sold 0, version 0), then the partition's default as pool
-- '*' (capacity 0 and version 0 when none was set).
CREATE FUNCTION holdfast.pool_state(p_ns text, p_partition text, p_pools text[])
RETURNS TABLE (pool text, own boolean, capacity bigint, sold bigint, version bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT x.pool, x.own, x.capacity, x.sold, x.version FROM (
        SELECT u.pool, coalesce(p.capacity IS NOT NULL, false) AS own, p.capacity,
               coalesce(p.sold, 0) AS sold, coalesce(p.version, 0) AS version, u.o
          FROM unnest(coalesce(p_pools, '{}'::text[])) WITH ORDINALITY AS u(pool, o)
          LEFT JOIN holdfast.pools p
            ON p.ns = p_ns AND p.partition = p_partition AND p.pool = u.pool
         WHERE u.pool <> '*'
        UNION ALL
        SELECT '*', true, coalesce(max(d.capacity), 0), 0, coalesce(max(d.version), 0),
               9223372036854775807
          FROM holdfast.pools d
         WHERE d.ns = p_ns AND d.partition = p_partition AND d.pool = '*') x
     ORDER BY x.o
$$;

REVOKE ALL ON FUNCTION holdfast.parse_units(text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION holdfast.pool_result(text, text, text, boolean, jsonb, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION holdfast.pool_confirm(text, text, text[], bigint, text, text, bytea,
                                             integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION holdfast.pool_confirm_gone(text, text, text[], text, text, bytea, text,
                                                  integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION holdfast.pool_cancel(text, text, text[], text, text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION holdfast.set_capacity(text, text, text, bigint, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION holdfast.pool_state(text, text, text[]) FROM PUBLIC;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'holdfast_api') THEN
        GRANT EXECUTE ON FUNCTION
            holdfast.pool_confirm(text, text, text[], bigint, text, text, bytea, integer),
            holdfast.pool_confirm_gone(text, text, text[], text, text, bytea, text, integer),
            holdfast.pool_cancel(text, text, text[], text, text, integer),
            holdfast.set_capacity(text, text, text, bigint, integer),
            holdfast.pool_state(text, text, text[])
        TO holdfast_api;
    END IF;
END
$$;
