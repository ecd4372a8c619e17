-- 0001_schema.sql - the holdfast schema: claims, fences, idempotency records
-- and the cancel history. PostgreSQL is the system of record; Redis only
-- arbitrates holds in front of it.
--
-- Applied by `holdfastd --migrate` inside one transaction, after the runner
-- has created the schema `holdfast` and `holdfast.schema_migrations`. Never
-- edit a migration once released: add a new one (the runner refuses a
-- migration whose text changed after it was applied).
--
-- Every table leads with (ns, partition) so it can be partitioned or
-- distributed (e.g. Citus) by that pair; one confirm touches one partition.

-- One row per confirmed resource. The primary key is the arbiter of last
-- resort: at most one claim per resource, whatever Redis said. The hold's
-- token is never stored, only its fence.
CREATE TABLE holdfast.claims (
    ns              text        NOT NULL,
    partition       text        NOT NULL,
    resource        text        NOT NULL,
    fence           bigint      NOT NULL CHECK (fence > 0),
    reference       text        NOT NULL,
    payload         bytea       NOT NULL,
    idempotency_key text        NOT NULL,
    confirmed_at    timestamptz NOT NULL,
    PRIMARY KEY (ns, partition, resource)
);

-- The highest fence PostgreSQL has seen per resource. Kept when a claim is
-- cancelled, so a late confirm from an older holder is refused as stale.
CREATE TABLE holdfast.fences (
    ns         text        NOT NULL,
    partition  text        NOT NULL,
    resource   text        NOT NULL,
    fence      bigint      NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (ns, partition, resource)
);

-- The caller's idempotency keys: the hash of the request the key was first
-- used with and the result it got, replayed for a retry of the same request.
-- Pruned after postgres.idempotency_retention_s by prune_idempotency().
CREATE TABLE holdfast.idempotency (
    ns           text        NOT NULL,
    key          text        NOT NULL,
    op           text        NOT NULL CHECK (op IN ('confirm', 'cancel')),
    request_hash bytea       NOT NULL,
    code         text        NOT NULL,
    result       jsonb       NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (ns, key)
);
CREATE INDEX idempotency_created_at ON holdfast.idempotency (created_at);

-- Claims removed by Cancel: the claim as it was, plus who cancelled and when.
CREATE TABLE holdfast.cancelled_claims (
    id                     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ns                     text        NOT NULL,
    partition              text        NOT NULL,
    resource               text        NOT NULL,
    fence                  bigint      NOT NULL,
    reference              text        NOT NULL,
    payload                bytea       NOT NULL,
    idempotency_key        text        NOT NULL,
    confirmed_at           timestamptz NOT NULL,
    cancel_reference       text        NOT NULL,
    cancel_idempotency_key text        NOT NULL,
    cancelled_at           timestamptz NOT NULL
);
CREATE INDEX cancelled_claims_resource ON holdfast.cancelled_claims (ns, partition, resource);
