/* pg_migrate.c - `holdfastd --migrate`: apply the embedded schema migrations
 * that the database lacks, all in one transaction. Blocking libpq is fine
 * here: this is a command, not the daemon's loop. */
#include "pg_migrate.h"

#include <libpq-fe.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

/* pg_advisory_xact_lock(1752132708, 1): 'hold', 1 = migrations. */
#define MIGRATE_LOCK "SELECT pg_advisory_xact_lock(1752132708, 1)"

#define CHECKSUM_HEX (crypto_hash_sha256_BYTES * 2 + 1)

int hf_pg_migration_version(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < 4; i++)
        if (name[i] < '0' || name[i] > '9') return -1;
    if (name[4] != '_') return -1;
    return atoi(name);
}

int hf_pg_schema_required(void) {
    int v = 0;
    for (size_t i = 0; i < hf_migration_texts_count; i++) {
        int m = hf_pg_migration_version(hf_migration_texts[i].name);
        if (m > v) v = m;
    }
    return v;
}

static void checksum(const struct hf_migration_text *m, char out[CHECKSUM_HEX]) {
    unsigned char digest[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(digest, (const unsigned char *)m->sql, *m->len);
    sodium_bin2hex(out, CHECKSUM_HEX, digest, sizeof digest);
}

/* Run `sql`; false (after saying why) unless it succeeded. */
static bool exec_ok(PGconn *pg, const char *sql, const char *what) {
    PGresult *r = PQexec(pg, sql);
    ExecStatusType st = PQresultStatus(r);
    bool ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!ok) fprintf(stderr, "holdfastd: migrate: %s failed: %s", what, PQresultErrorMessage(r));
    PQclear(r);
    return ok;
}

struct applied {
    int version;
    char name[128];
    char checksum[CHECKSUM_HEX];
};

/* The embedded migrations must be NNNN_name with strictly rising versions:
 * anything else is a packaging mistake, caught before touching the database. */
static bool embedded_ok(void) {
    int prev = 0;
    for (size_t i = 0; i < hf_migration_texts_count; i++) {
        int v = hf_pg_migration_version(hf_migration_texts[i].name);
        if (v <= prev) {
            fprintf(stderr, "holdfastd: migrate: embedded migration '%s' is out of order or "
                            "not named NNNN_name\n", hf_migration_texts[i].name);
            return false;
        }
        prev = v;
    }
    return true;
}

static int apply(PGconn *pg) {
    if (!exec_ok(pg, "SET client_min_messages = warning", "set-up") ||
        !exec_ok(pg, "BEGIN", "BEGIN") || !exec_ok(pg, MIGRATE_LOCK, "taking the migration lock"))
        return 1;
    /* CREATE SCHEMA IF NOT EXISTS would still need CREATE on the database,
     * which the owner may lack when an administrator created the schema. */
    PGresult *r = PQexec(pg, "SELECT 1 FROM pg_namespace WHERE nspname = 'holdfast'");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        fprintf(stderr, "holdfastd: migrate: %s", PQresultErrorMessage(r));
        PQclear(r);
        return 1;
    }
    bool have_schema = PQntuples(r) == 1;
    PQclear(r);
    if ((!have_schema && !exec_ok(pg, "CREATE SCHEMA holdfast", "creating schema holdfast")) ||
        !exec_ok(pg,
                 "CREATE TABLE IF NOT EXISTS holdfast.schema_migrations ("
                 " version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,"
                 " applied_at timestamptz NOT NULL DEFAULT now())",
                 "creating holdfast.schema_migrations"))
        return 1;

    r = PQexec(pg, "SELECT version, name, checksum FROM holdfast.schema_migrations ORDER BY version");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        fprintf(stderr, "holdfastd: migrate: reading holdfast.schema_migrations: %s",
                PQresultErrorMessage(r));
        PQclear(r);
        return 1;
    }
    int n_applied = PQntuples(r);
    struct applied *applied = calloc((size_t)n_applied + 1, sizeof *applied);
    if (!applied) {
        PQclear(r);
        fprintf(stderr, "holdfastd: migrate: out of memory\n");
        return 1;
    }
    int db_version = 0;
    for (int i = 0; i < n_applied; i++) {
        applied[i].version = atoi(PQgetvalue(r, i, 0));
        snprintf(applied[i].name, sizeof applied[i].name, "%s", PQgetvalue(r, i, 1));
        snprintf(applied[i].checksum, sizeof applied[i].checksum, "%s", PQgetvalue(r, i, 2));
        if (applied[i].version > db_version) db_version = applied[i].version;
    }
    PQclear(r);

    int rc = 0, done = 0;
    for (size_t i = 0; i < hf_migration_texts_count && rc == 0; i++) {
        const struct hf_migration_text *m = &hf_migration_texts[i];
        int v = hf_pg_migration_version(m->name);
        char sum[CHECKSUM_HEX];
        checksum(m, sum);
        const struct applied *a = NULL;
        for (int j = 0; j < n_applied; j++)
            if (applied[j].version == v) a = &applied[j];
        if (a) {
            if (strcmp(a->checksum, sum) != 0) {
                fprintf(stderr,
                        "holdfastd: migrate: migration %s differs from the one applied as "
                        "version %d (%s); a released migration must never change: add a new "
                        "one\n", m->name, v, a->name);
                rc = 1;
            }
            continue;
        }
        if (v < db_version) {
            fprintf(stderr,
                    "holdfastd: migrate: the database is at version %d but lacks %s; refusing "
                    "to apply migrations out of order\n", db_version, m->name);
            rc = 1;
            continue;
        }
        /* The file may hold many statements; PQexec runs them all inside
         * our transaction and reports the first failure. */
        PGresult *res = PQexec(pg, m->sql);
        ExecStatusType st = PQresultStatus(res);
        if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
            fprintf(stderr, "holdfastd: migrate: %s failed: %s", m->name,
                    PQresultErrorMessage(res));
            PQclear(res);
            rc = 1;
            continue;
        }
        PQclear(res);
        char version[16];
        snprintf(version, sizeof version, "%d", v);
        const char *params[] = {version, m->name, sum};
        res = PQexecParams(pg,
                           "INSERT INTO holdfast.schema_migrations (version, name, checksum)"
                           " VALUES ($1::integer, $2, $3)",
                           3, NULL, params, NULL, NULL, 0);
        if (PQresultStatus(res) != PGRES_COMMAND_OK) {
            fprintf(stderr, "holdfastd: migrate: recording %s failed: %s", m->name,
                    PQresultErrorMessage(res));
            rc = 1;
        } else {
            printf("applied %s\n", m->name);
            done++;
            if (v > db_version) db_version = v;
        }
        PQclear(res);
    }
    free(applied);
    if (rc != 0) {
        exec_ok(pg, "ROLLBACK", "ROLLBACK");
        fprintf(stderr, "holdfastd: migrate: nothing was changed\n");
        return rc;
    }
    if (!exec_ok(pg, "COMMIT", "COMMIT")) return 1;
    int required = hf_pg_schema_required();
    if (db_version > required)
        printf("schema holdfast is at version %d, newer than this binary's %d (nothing to do)\n",
               db_version, required);
    else if (done == 0)
        printf("schema holdfast is up to date (version %d)\n", db_version);
    else
        printf("schema holdfast migrated to version %d (%d applied)\n", db_version, done);
    return 0;
}

int hf_pg_migrate(const char *dsn, uint32_t connect_timeout_ms) {
    if (!embedded_ok()) return 1;
    char timeout[16];
    /* libpq counts whole seconds, and treats 1 as 2. */
    snprintf(timeout, sizeof timeout, "%u", (connect_timeout_ms + 999) / 1000);
    /* Keywords before dbname are defaults the DSN may override. */
    const char *const keys[] = {"connect_timeout", "fallback_application_name", "dbname", NULL};
    const char *const values[] = {timeout, "holdfastd-migrate", dsn, NULL};
    PGconn *pg = PQconnectdbParams(keys, values, 1);
    if (!pg || PQstatus(pg) != CONNECTION_OK) {
        fprintf(stderr, "holdfastd: migrate: cannot connect to PostgreSQL: %s",
                pg ? PQerrorMessage(pg) : "out of memory\n");
        PQfinish(pg);
        return 1;
    }
    int rc = apply(pg);
    PQfinish(pg);
    return rc;
}

int hf_pg_migrate_command(const char *config_path, const char *dsn) {
    struct hf_config *cfg = NULL;
    uint32_t connect_timeout_ms = 5000;
    if (config_path) {
        char err[1024];
        cfg = hf_config_load(config_path, err, sizeof err);
        if (!cfg) {
            fprintf(stderr, "holdfastd: %s\n", err);
            return 1;
        }
        if (!dsn) dsn = cfg->pg_dsn;
        connect_timeout_ms = cfg->pg_connect_timeout_ms;
    }
    if (!dsn || !*dsn) {
        fprintf(stderr, "holdfastd: --migrate needs a database: postgres.dsn in --config FILE, "
                        "or --dsn DSN\n");
        hf_config_unref(cfg);
        return 1;
    }
    int rc = 1;
    if (sodium_init() < 0) fprintf(stderr, "holdfastd: libsodium failed to start\n");
    else rc = hf_pg_migrate(dsn, connect_timeout_ms);
    hf_config_unref(cfg);
    return rc;
}
