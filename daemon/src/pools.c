/* pools.c - the pool target, pool answers and the capacity mirror. */
#include "pools.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confirm_outcome.h"
#include "redis_front.h"
#include "validate.h"

const char HF_SQL_POOL_STATE[] =
    "SELECT pool, own, capacity, sold, version FROM holdfast.pool_state($1, $2, $3::text[])";

bool hf_pool_request(const struct hf_request *req, const char *ns_name, size_t n_pool_items) {
    if (n_pool_items > 0) return true;
    if (!ns_name || !*ns_name) return false;
    const struct hf_namespace *ns = hf_config_namespace(req->cfg, ns_name);
    return ns && ns->kind == HF_KIND_POOLS;
}

void hf_pool_target_clear(struct hf_pool_target *p) {
    hf_target_clear(&p->t);
    free(p->counts);
    free(p->units);
    free(p->count_s);
    free(p->names);
    memset(p, 0, sizeof *p);
}

/* The first pool that repeats an earlier one, or n. */
static size_t first_repeat(char *const *names, size_t n) {
    return hf_first_duplicate(names, n);
}

bool hf_pool_target_parse(struct hf_request *req, struct hf_pool_target *p, const char *ns_name,
                          const char *partition, size_t n_ids,
                          Holdfast__V1__PoolTake *const *units, size_t n_units,
                          char **pools, size_t n_pools, bool with_counts, bool allow_empty) {
    const char *field = with_counts ? "units" : "pools";
    size_t n = with_counts ? n_units : n_pools;
    if (!ns_name || !*ns_name) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "namespace", NULL, "namespace is required");
        return false;
    }
    if (!hf_valid_name(ns_name, strlen(ns_name))) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "namespace", NULL,
                        "namespace must be 1-128 bytes of [A-Za-z0-9._-]");
        return false;
    }
    const struct hf_namespace *ns = hf_config_namespace(req->cfg, ns_name);
    if (!ns) {
        hf_request_fail(req, HF_CODE(NOT_FOUND), "namespace", NULL,
                        "namespace '%s' is not configured", ns_name);
        return false;
    }
    req->ns = ns->name;
    if (ns->kind != HF_KIND_POOLS) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), field, NULL,
                        "namespace '%s' is of kind seats: name ids, not %s", ns->name, field);
        return false;
    }
    if (!partition || !hf_valid_name(partition, strlen(partition))) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "partition", NULL,
                        "partition must be 1-128 bytes of [A-Za-z0-9._-]");
        return false;
    }
    req->partition = partition;
    if (n_ids > 0) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "ids", NULL,
                        "namespace '%s' is of kind pools: name %s, not ids", ns->name, field);
        return false;
    }
    if (n == 0 && !allow_empty) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), field, NULL,
                        "at least one pool is required");
        return false;
    }
    if (n > req->cfg->max_ids) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), field, NULL,
                        "%zu pools exceed limits.max_ids (%u)", n, req->cfg->max_ids);
        return false;
    }
    p->names = calloc(n ? n : 1, sizeof *p->names);
    p->count_s = calloc(n ? n : 1, sizeof *p->count_s + 12);
    if (with_counts) {
        p->counts = calloc(n ? n : 1, sizeof *p->counts);
        p->units = calloc(n ? n : 1, sizeof *p->units + HF_NAME_MAX + 12);
    }
    if (!p->names || !p->count_s || (with_counts && (!p->counts || !p->units))) {
        hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL, "out of memory");
        return false;
    }
    char *digits = (char *)(p->count_s + (n ? n : 1));
    char *items = with_counts ? (char *)(p->units + (n ? n : 1)) : NULL;
    for (size_t i = 0; i < n; i++) {
        char f[48];
        const char *name = with_counts ? units[i]->pool : pools[i];
        if (!name || !hf_valid_name(name, strlen(name))) {
            if (with_counts) snprintf(f, sizeof f, "units[%zu].pool", i);
            else snprintf(f, sizeof f, "pools[%zu]", i);
            hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), f, NULL,
                            "pool names must be 1-128 bytes of [A-Za-z0-9._-]");
            return false;
        }
        p->names[i] = (char *)name;
        p->count_s[i] = digits + 12 * i;
        if (!with_counts) {
            strcpy(p->count_s[i], "0");
            continue;
        }
        uint32_t count = units[i]->count;
        if (count == 0 || count > HF_POOL_MAX_UNITS) {
            snprintf(f, sizeof f, "units[%zu].count", i);
            hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), f, name,
                            "a count must be 1..%u units, got %u", HF_POOL_MAX_UNITS, count);
            return false;
        }
        p->counts[i] = count;
        snprintf(p->count_s[i], 12, "%u", count);
        p->units[i] = items + (HF_NAME_MAX + 12) * i;
        snprintf(p->units[i], HF_NAME_MAX + 12, "%s=%u", name, count);
    }
    p->n = n;
    size_t dup = first_repeat(p->names, n);
    if (dup < n) {
        char f[48];
        snprintf(f, sizeof f, with_counts ? "units[%zu].pool" : "pools[%zu]", dup);
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), f, p->names[dup],
                        "pool '%s' appears twice", p->names[dup]);
        return false;
    }
    p->t.keys = hf_pool_keyset_build(ns->name, partition, p->names, n);
    if (!p->t.keys) {
        hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL, "out of memory");
        return false;
    }
    p->t.ns = ns;
    p->t.ids = with_counts ? p->units : p->names;
    p->t.n_ids = n;
    /* The log line names the units ("adult=2") or the pools. */
    req->ids = p->t.ids;
    req->n_ids = n;
    return true;
}

const char *const *hf_pool_pair_keys(const struct hf_pool_target *p, size_t *n,
                                     const size_t **lens) {
    *n = 2 * p->n;
    *lens = p->t.keys->lens + HF_POOL_KEYS_BEFORE;
    return p->t.keys->keys + HF_POOL_KEYS_BEFORE;
}

const char *const *hf_pool_default_keys(const struct hf_pool_target *p, size_t *n,
                                        const size_t **lens) {
    *n = 2 * p->n + 1;
    *lens = p->t.keys->lens + 1;
    return p->t.keys->keys + 1;
}

void hf_pool_answer_code(struct hf_request *req, const struct hf_pool_target *p,
                         long long code, long long index, long long extra) {
    bool in_range = index >= 1 && (size_t)index <= p->n;
    const char *pool = in_range ? p->names[index - 1] : "?";
    unsigned asked = in_range && p->counts ? p->counts[index - 1] : 0;
    switch (code) {
    case HF_SC_HELD_BY_ANOTHER:
        hf_request_fail(req, HF_CODE(HELD_BY_ANOTHER), NULL, pool,
                        "pool '%s': %u units asked, %lld free; the rest is held by others",
                        pool, asked, extra);
        break;
    case HF_SC_NOT_HELD:
        hf_request_fail(req, HF_CODE(NOT_HELD), NULL, pool,
                        "pool '%s': this token holds no units (expired, released or never held)",
                        pool);
        break;
    case HF_SC_CONFIRMED:
        hf_request_fail(req, HF_CODE(CONFIRMED), NULL, pool,
                        "pool '%s': %u units asked, %lld left unsold (sold out)", pool, asked,
                        extra);
        break;
    case HF_SC_POOL_COUNT_MISMATCH: {
        char f[48];
        snprintf(f, sizeof f, "units[%lld].count", index - 1);
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), f, pool,
                        "pool '%s': this token holds %lld units, not %u", pool, extra, asked);
        break;
    }
    default:
        hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL, "unexpected script result %lld",
                        code);
        break;
    }
}

/* ---- the mirror ---- */

/* "own", "capacity", "sold", "version" of one row; version "-1" = unknown. */
struct row_args {
    char own[2], cap[24], sold[24], ver[24];
};

static void row_to_args(const struct hf_pool_row *r, struct row_args *a) {
    if (!r || !r->known) {
        strcpy(a->own, "0");
        strcpy(a->cap, "0");
        strcpy(a->sold, "0");
        strcpy(a->ver, "-1");
        return;
    }
    snprintf(a->own, sizeof a->own, "%d", r->own ? 1 : 0);
    snprintf(a->cap, sizeof a->cap, "%lld", r->capacity);
    snprintf(a->sold, sizeof a->sold, "%lld", r->sold);
    snprintf(a->ver, sizeof a->ver, "%lld", r->version);
}

int hf_pool_mirror_write(struct hf_request *req, const struct hf_pool_target *p,
                         const char *token, const struct hf_pool_row *rows,
                         const struct hf_pool_row *def, uint32_t timeout_ms, hf_redis_cb *cb,
                         void *privdata) {
    size_t nargs = 3 + 4 * p->n;
    struct row_args *a = calloc(p->n + 1, sizeof *a);
    const char **args = calloc(nargs, sizeof *args);
    size_t *lens = calloc(nargs, sizeof *lens);
    int rc = -ENOMEM;
    if (a && args && lens) {
        row_to_args(def, &a[p->n]);
        args[0] = token ? token : "";
        args[1] = a[p->n].cap;
        args[2] = a[p->n].ver;
        for (size_t i = 0; i < p->n; i++) {
            row_to_args(rows ? &rows[i] : NULL, &a[i]);
            args[3 + 4 * i] = a[i].own;
            args[4 + 4 * i] = a[i].cap;
            args[5 + 4 * i] = a[i].sold;
            args[6 + 4 * i] = a[i].ver;
        }
        for (size_t i = 0; i < nargs; i++) lens[i] = strlen(args[i]);
        size_t nkeys;
        const size_t *keylens;
        const char *const *keys = hf_pool_default_keys(p, &nkeys, &keylens);
        rc = req->d->redis ? hf_front_call(req->d->redis, NULL, HF_FN_POOL_MARK_SOLD, nkeys,
                                           keys, keylens, nargs, args, lens, timeout_ms, cb,
                                           privdata)
                           : -ENOTCONN;
    }
    free(a);
    free(args);
    free(lens);
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

static void mirror_done(struct hf_pool_mirror *m, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void mirror_done(struct hf_pool_mirror *m, bool ok, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->why, sizeof m->why, fmt, ap);
    va_end(ap);
    m->done(m->arg, ok, m->why);
}

static void on_mirror_written(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct hf_pool_mirror *m = privdata;
    if (status != HF_REDIS_OK || r->type != REDIS_REPLY_INTEGER)
        mirror_done(m, false, "redis %s (loading the capacity mirror)",
                    hf_redis_failure_text(status, r));
    else
        mirror_done(m, true, "loaded");
}

static void on_pool_state(void *privdata, const struct hf_pg_result *r) {
    struct hf_pool_mirror *m = privdata;
    struct hf_request *req = m->req;
    if (r->status != HF_PG_OK) {
        mirror_done(m, false, "postgres %s while reading the pools' capacity: %s",
                    hf_pg_status_name(r->status), r->message);
        return;
    }
    const struct hf_pool_target *p = m->p;
    struct hf_pool_row *rows = calloc(p->n + 1, sizeof *rows);
    if (!rows) {
        mirror_done(m, false, "out of memory");
        return;
    }
    if (!hf_pool_state_parse(r->res, p->n, rows, &rows[p->n])) {
        free(rows);
        mirror_done(m, false, "unexpected result from holdfast.pool_state()");
        return;
    }
    int rc = hf_pool_mirror_write(req, p, NULL, rows, &rows[p->n],
                                  hf_request_backend_timeout(req,
                                                             req->cfg->redis_command_timeout_ms),
                                  on_mirror_written, m);
    free(rows);
    if (rc != 0) mirror_done(m, false, "redis not connected (loading the capacity mirror)");
}

void hf_pool_mirror_load(struct hf_pool_mirror *m) {
    struct hf_request *req = m->req;
    const struct hf_pool_target *p = m->p;
    if (!req->d->pg || !req->d->pg_ready) {
        mirror_done(m, false, "postgres is not connected, and the capacity of the pools is "
                              "not in redis");
        return;
    }
    char *names = hf_pg_text_array(p->names, p->n);
    if (!names) {
        mirror_done(m, false, "out of memory");
        return;
    }
    const char *values[3] = {p->t.ns->name, req->partition, names};
    uint32_t left = hf_request_remaining_ms(req);
    int rc = hf_pg_query(req->d->pg, HF_SQL_POOL_STATE, 3, values, NULL, NULL, left,
                         req->cfg->pg_statement_timeout_ms + 1000, on_pool_state, m);
    free(names);
    if (rc != 0)
        mirror_done(m, false, "postgres %s (reading the pools' capacity)",
                    rc == -ENOTCONN ? "is not connected" : strerror(-rc));
}
