-- roles-example.sql - least privilege for holdfast: an example to adapt.
--
--   holdfast_owner  runs `holdfastd --migrate`; owns the schema `holdfast`,
--                   its tables and its functions. Never used by the daemon.
--   holdfast_api    NOLOGIN group: USAGE on the schema and EXECUTE on the API
--                   functions (confirm, confirm_gone, cancel, lookup, resolve,
--                   prune_idempotency, schema_version; for pools pool_confirm,
--                   pool_confirm_gone, pool_cancel, set_capacity,
--                   pool_state), nothing else. No
--                   privilege on any table: every read and write goes through
--                   the SECURITY DEFINER functions, so the daemon's login can
--                   claim and cancel only the way those functions allow.
--   holdfast_app    the daemon's login (postgres.dsn), a member of holdfast_api.
--
-- Run as a superuser (or a role with CREATEROLE) connected to the database
-- that holds the schema, e.g.
--   createdb holdfast
--   psql -v ON_ERROR_STOP=1 -d holdfast -f daemon/sql/roles-example.sql
--   holdfastd --migrate --config /etc/holdfast/holdfast.lua \
--             --dsn 'host=/run/postgresql dbname=holdfast user=holdfast_owner'
-- Safe to run again, before or after migrating (migrations grant their own
-- functions to holdfast_api when it exists). Authentication (passwords,
-- peer or certificates in pg_hba.conf) is up to the site.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'holdfast_owner') THEN
        CREATE ROLE holdfast_owner LOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'holdfast_api') THEN
        CREATE ROLE holdfast_api NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'holdfast_app') THEN
        CREATE ROLE holdfast_app LOGIN IN ROLE holdfast_api;
    END IF;
END
$$;

-- The owner creates its objects in its own schema; nobody else may.
CREATE SCHEMA IF NOT EXISTS holdfast AUTHORIZATION holdfast_owner;
REVOKE ALL ON SCHEMA holdfast FROM PUBLIC;
GRANT USAGE ON SCHEMA holdfast TO holdfast_api;
-- PostgreSQL 15 already denies CREATE on public; older versions do not.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;

-- When the migrations have already run: grant the API functions now.
DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY[
        'holdfast.confirm(text, text, text[], bigint, text, text, bytea, integer)',
        'holdfast.confirm_gone(text, text, text[], text, text, bytea, text, text, integer)',
        'holdfast.cancel(text, text, text[], text, text, integer)',
        'holdfast.lookup(text, text, text, text, text[], text, bytea)',
        'holdfast.resolve(text, text, text, text, text[], text, bytea, integer, bigint, integer)',
        'holdfast.prune_idempotency(integer, integer)',
        'holdfast.schema_version()',
        'holdfast.pool_confirm(text, text, text[], bigint, text, text, bytea, integer)',
        'holdfast.pool_confirm_gone(text, text, text[], text, text, bytea, text, integer)',
        'holdfast.pool_cancel(text, text, text[], text, text, integer)',
        'holdfast.set_capacity(text, text, text, bigint, integer)',
        'holdfast.pool_state(text, text, text[])']
    LOOP
        IF to_regprocedure(f) IS NOT NULL THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO holdfast_api', f);
        END IF;
    END LOOP;
END
$$;
