/* pg_migrate.h - the PostgreSQL schema migrations embedded in the binary
 * (daemon/sql/migrations/NNNN_name.sql) and `holdfastd --migrate`. */
#ifndef HF_PG_MIGRATE_H
#define HF_PG_MIGRATE_H

#include <stddef.h>
#include <stdint.h>

/* One embedded migration file; the table is generated at build time by
 * daemon/sql/Migrations.cmake, in file-name order. */
struct hf_migration_text {
    const char *name;        /* "0001_schema" */
    const char *sql;
    const unsigned long *len;
};
extern const struct hf_migration_text hf_migration_texts[];
extern const size_t hf_migration_texts_count;

/* The version a migration name starts with ("0002_x" -> 2), -1 if none. */
int hf_pg_migration_version(const char *name);
/* The schema version this binary needs: its highest migration. */
int hf_pg_schema_required(void);

/* Apply the missing migrations to the database at `dsn`, in one transaction,
 * serialised against other migrators by an advisory lock; a no-op when all
 * are applied. Blocking (a command, not the daemon). Reports to stdout and
 * stderr; returns the process exit code (0 = schema up to date). */
int hf_pg_migrate(const char *dsn, uint32_t connect_timeout_ms);
/* `holdfastd --migrate [--config FILE] [--dsn DSN]`: the DSN from --dsn, or
 * from postgres.dsn in the config. Returns the process exit code. */
int hf_pg_migrate_command(const char *config_path, const char *dsn);

#endif
