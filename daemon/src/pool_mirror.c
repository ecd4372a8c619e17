/* pool_mirror.c - the capacity mirror of pools (see pool_mirror.h). */
#include "pool_mirror.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confirm_outcome.h"
#include "numfmt.h"
#include "redis_front.h"

const char HF_SQL_POOL_STATE[] =
    "SELECT pool, own, capacity, sold, version FROM holdfast.pool_state($1, $2, $3::text[])";

/* "own", "capacity", "sold", "version" of one row; version "-1" = unknown. */
struct row_args {
    char own[2], cap[24], sold[24], ver[24];
};

/* Counts from PostgreSQL are never negative (CHECK constraints). */
static void u64_arg(char *out, long long v) { hf_u64_dec(out, v > 0 ? (uint64_t)v : 0); }

static void row_to_args(const struct hf_pool_row *r, struct row_args *a) {
    if (!r || !r->known) {
        strcpy(a->own, "0");
        strcpy(a->cap, "0");
        strcpy(a->sold, "0");
        strcpy(a->ver, "-1");
        return;
    }
    strcpy(a->own, r->own ? "1" : "0");
    u64_arg(a->cap, r->capacity);
    u64_arg(a->sold, r->sold);
    u64_arg(a->ver, r->version);
}

int hf_pool_mirror_write(struct hf_request *req, const struct hf_target *t, const char *token,
                         const struct hf_pool_row *rows, const struct hf_pool_row *def,
                         uint32_t timeout_ms, hf_redis_cb *cb, void *privdata) {
    struct row_args *a = calloc(t->n + 1, sizeof *a);
    if (!a) return -ENOMEM;
    struct hf_argv args;
    hf_argv_init(&args);
    row_to_args(def, &a[t->n]);
    hf_argv_add_str(&args, token ? token : "");
    hf_argv_add_str(&args, a[t->n].cap);
    hf_argv_add_str(&args, a[t->n].ver);
    for (size_t i = 0; i < t->n; i++) {
        row_to_args(rows ? &rows[i] : NULL, &a[i]);
        hf_argv_add_str(&args, a[i].own);
        hf_argv_add_str(&args, a[i].cap);
        hf_argv_add_str(&args, a[i].sold);
        hf_argv_add_str(&args, a[i].ver);
    }
    /* The partition's default, then per pool its hash and its holds. */
    int rc = hf_front_call(req->d->redis, NULL, HF_FN_POOL_MARK_SOLD,
                           hf_keys_run(t->keys, 1, t->keys->waiters), &args, timeout_ms, cb,
                           privdata);
    hf_argv_free(&args);
    free(a);
    return rc;
}

static bool read_ll(const PGresult *res, int row, int col, long long *out) {
    if (PQgetisnull(res, row, col)) {
        *out = 0;
        return false;
    }
    *out = strtoll(PQgetvalue(res, row, col), NULL, 10);
    return true;
}

bool hf_pool_state_parse(const PGresult *res, size_t n, struct hf_pool_row *rows,
                         struct hf_pool_row *def) {
    if (PQntuples(res) != (int)n + 1 || PQnfields(res) < 5) return false;
    for (size_t i = 0; i <= n; i++) {
        struct hf_pool_row *r = i < n ? &rows[i] : def;
        int row = (int)i;
        r->known = true;
        r->own = PQgetvalue(res, row, 1)[0] == 't';
        read_ll(res, row, 2, &r->capacity);
        read_ll(res, row, 3, &r->sold);
        read_ll(res, row, 4, &r->version);
    }
    return strcmp(PQgetvalue(res, (int)n, 0), "*") == 0;
}

static void mirror_done(struct hf_target_load *m, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void mirror_done(struct hf_target_load *m, bool ok, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->why, sizeof m->why, fmt, ap);
    va_end(ap);
    m->done(m->arg, ok, m->why);
}

static void on_mirror_written(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct hf_target_load *m = privdata;
    if (status != HF_REDIS_OK || r->type != REDIS_REPLY_INTEGER)
        mirror_done(m, false, "redis %s (loading the capacity mirror)",
                    hf_redis_failure_text(status, r));
    else
        mirror_done(m, true, "loaded");
}

static void on_pool_state(void *privdata, const struct hf_pg_result *r) {
    struct hf_target_load *m = privdata;
    struct hf_request *req = m->req;
    if (r->status != HF_PG_OK) {
        mirror_done(m, false, "postgres %s while reading the pools' capacity: %s",
                    hf_pg_status_name(r->status), r->message);
        return;
    }
    const struct hf_target *t = m->t;
    struct hf_pool_row *rows = calloc(t->n + 1, sizeof *rows);
    if (!rows) {
        mirror_done(m, false, "out of memory");
        return;
    }
    if (!hf_pool_state_parse(r->res, t->n, rows, &rows[t->n])) {
        free(rows);
        mirror_done(m, false, "unexpected result from holdfast.pool_state()");
        return;
    }
    int rc = hf_pool_mirror_write(req, t, NULL, rows, &rows[t->n],
                                  hf_request_backend_timeout(req,
                                                             req->cfg->redis_command_timeout_ms),
                                  on_mirror_written, m);
    free(rows);
    if (rc != 0) mirror_done(m, false, "redis not connected (loading the capacity mirror)");
}

void hf_pool_mirror_load(struct hf_target_load *m) {
    struct hf_request *req = m->req;
    const struct hf_target *t = m->t;
    if (!req->d->pg || !req->d->pg_ready) {
        mirror_done(m, false, "postgres is not connected, and the capacity of the pools is "
                              "not in redis");
        return;
    }
    char *names = hf_pg_text_array(t->items, t->n);
    if (!names) {
        mirror_done(m, false, "out of memory");
        return;
    }
    const char *values[3] = {t->ns->name, req->partition, names};
    uint32_t left = hf_request_remaining_ms(req);
    int rc = hf_pg_query(req->d->pg, HF_SQL_POOL_STATE, 3, values, NULL, NULL, left,
                         req->cfg->pg_statement_timeout_ms + 1000, on_pool_state, m);
    free(names);
    if (rc != 0)
        mirror_done(m, false, "postgres %s (reading the pools' capacity)",
                    rc == -ENOTCONN ? "is not connected" : strerror(-rc));
}
