/* kind_pools.c - targets of kind pools (docs/pools.md): units of 1..N pools
 * of a partition ("adult=2"), counted in Redis per pool (live holds) against
 * the capacity and sales PostgreSQL keeps (the mirror, pool_mirror.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "claim.h"
#include "numfmt.h"
#include "ops_common.h"
#include "pool_mirror.h"
#include "validate.h"

/* Units one request may take from, confirm for or cancel of one pool. */
#define MAX_UNITS 1000000u
/* "<pool>=<count>": a name, '=', up to 10 digits, NUL. */
#define LABEL_MAX (HF_NAME_MAX + 12)

/* ---- parse ---- */

/* The parsed items, in one allocation: names, counts, labels, the counts'
 * digits and their lengths. */
struct pool_items {
    char **names;
    uint32_t *counts;
    char **labels;
    const char **count_v;
    size_t *count_lens;
    char *text;
};

static struct pool_items *items_alloc(size_t n, bool counts) {
    size_t m = n ? n : 1;
    size_t size = sizeof(struct pool_items) + m * (2 * sizeof(char *) + sizeof(const char *) +
                                                   sizeof(size_t) + sizeof(uint32_t)) +
                  (counts ? m * (LABEL_MAX + 21) : 0);
    struct pool_items *p = calloc(1, size);
    if (!p) return NULL;
    p->names = (char **)(p + 1);
    p->labels = p->names + m;
    p->count_v = (const char **)(p->labels + m);
    p->count_lens = (size_t *)(p->count_v + m);
    p->counts = (uint32_t *)(p->count_lens + m);
    p->text = (char *)(p->counts + m);
    return p;
}

static bool fields_fit(struct hf_request *req, const struct hf_target *t,
                       const struct hf_target_fields *f, const char *field, size_t n,
                       enum hf_target_need need) {
    const char *name = t->ns->name;
    if (f->n_ids > 0) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "ids", NULL,
                        "namespace '%s' is of kind pools: name %s, not ids", name, field);
        return false;
    }
    if (f->segment) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "segment", NULL,
                        "namespace '%s' is of kind pools: it has no journey segments", name);
        return false;
    }
    if (n == 0 && need != HF_NEED_POOL_NAMES) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), field, NULL,
                        "at least one pool is required");
        return false;
    }
    if (n > req->cfg->max_ids) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), field, NULL,
                        "%zu pools exceed limits.max_ids (%u)", n, req->cfg->max_ids);
        return false;
    }
    return true;
}

/* The i-th unit: its count checked, its label and digits written. */
static bool take_count(struct hf_request *req, struct pool_items *p, size_t i, uint32_t count) {
    if (count == 0 || count > MAX_UNITS) {
        char f[48];
        snprintf(f, sizeof f, "units[%zu].count", i);
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), f, p->names[i],
                        "a count must be 1..%u units, got %u", MAX_UNITS, count);
        return false;
    }
    p->counts[i] = count;
    char *label = p->text + i * (LABEL_MAX + 21), *digits = label + LABEL_MAX;
    size_t nl = strlen(p->names[i]);
    memcpy(label, p->names[i], nl);
    label[nl] = '=';
    hf_u64_dec(label + nl + 1, count);
    p->labels[i] = label;
    p->count_v[i] = digits;
    p->count_lens[i] = hf_u64_dec(digits, count);
    return true;
}

static bool parse(struct hf_request *req, struct hf_target *t, const struct hf_target_fields *f,
                  enum hf_target_need need) {
    bool with_counts = need == HF_NEED_ITEMS;
    const char *field = with_counts ? "units" : "pools";
    size_t n = with_counts ? f->n_units : f->n_pools;
    if (!fields_fit(req, t, f, field, n, need)) return false;
    struct pool_items *p = items_alloc(n, with_counts);
    if (!p) {
        hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL, "out of memory");
        return false;
    }
    t->owned = p;
    for (size_t i = 0; i < n; i++) {
        const char *name = with_counts ? f->units[i]->pool : f->pools[i];
        if (!name || !hf_valid_name(name, strlen(name))) {
            char fl[48];
            snprintf(fl, sizeof fl, with_counts ? "units[%zu].pool" : "pools[%zu]", i);
            hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), fl, NULL,
                            "pool names must be 1-128 bytes of [A-Za-z0-9._-]");
            return false;
        }
        p->names[i] = (char *)name;
        p->labels[i] = (char *)name;
        if (with_counts && !take_count(req, p, i, f->units[i]->count)) return false;
    }
    size_t dup = hf_first_duplicate(p->names, n);
    if (dup < n) {
        char fl[48];
        snprintf(fl, sizeof fl, with_counts ? "units[%zu].pool" : "pools[%zu]", dup);
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), fl, p->names[dup],
                        "pool '%s' appears twice", p->names[dup]);
        return false;
    }
    t->items = p->names;
    t->n = n;
    t->labels = p->labels;
    t->counts = with_counts ? p->counts : NULL;
    t->count_args = (struct hf_strs){p->count_v, p->count_lens, with_counts ? n : 0};
    return true;
}

/* ---- answers ---- */

static void answer_code(struct hf_request *req, const struct hf_target *t, long long code,
                        long long index, long long extra) {
    const char *pool = hf_target_item(t, index);
    bool in_range = index >= 1 && (size_t)index <= t->n;
    unsigned asked = in_range && t->counts ? t->counts[index - 1] : 0;
    switch (code) {
    case HF_SC_HELD_BY_ANOTHER:
        if (extra < 0) /* a wait that ran out behind other waiters */
            hf_request_fail(req, HF_CODE(HELD_BY_ANOTHER), NULL, pool,
                            "pool '%s': other holds waiting in line came first", pool);
        else
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
                        extra < 0 ? 0 : extra);
        break;
    case HF_SC_POOL_COUNT_MISMATCH: {
        char f[48];
        snprintf(f, sizeof f, "units[%lld].count", index - 1);
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), f, pool,
                        "pool '%s': this token holds %lld units, not %u", pool, extra, asked);
        break;
    }
    case HF_SC_POOL_MISS:
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "the capacity of the pools is not in redis, even after loading it");
        break;
    default:
        hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL, "unexpected script result %lld",
                        code);
        break;
    }
}

static uint64_t non_negative(long long v) { return v > 0 ? (uint64_t)v : 0; }

/* hf1_pool_status: {GRANTED, then per pool capacity, sold, held, units of
 * the token, ms left of its hold}. */
static bool answer_status(struct hf_request *req, const struct hf_target *t,
                          const redisReply *r) {
    long long code;
    if (!hf_reply_code(r, &code) || code != HF_SC_GRANTED || r->elements != 1 + 5 * t->n)
        return false;
    Holdfast__V1__PoolStatus **items;
    void *mem = hf_request_items(req, t->n, sizeof **items, (void ***)&items, "out of memory");
    if (!mem) return true;
    for (size_t i = 0; i < t->n; i++) {
        holdfast__v1__pool_status__init(items[i]);
        long long cap = hf_reply_int(r, 1 + 5 * i), sold = hf_reply_int(r, 2 + 5 * i);
        long long held = hf_reply_int(r, 3 + 5 * i);
        items[i]->pool = t->items[i];
        items[i]->capacity = non_negative(cap);
        items[i]->sold = non_negative(sold);
        items[i]->held = non_negative(held);
        items[i]->free = non_negative(cap - sold - held);
        items[i]->owned = (uint32_t)hf_reply_int(r, 4 + 5 * i);
        items[i]->ttl_ms = hf_reply_int(r, 5 + 5 * i);
    }
    Holdfast__V1__StatusResponse sr = HOLDFAST__V1__STATUS_RESPONSE__INIT;
    sr.n_pools = t->n;
    sr.pools = items;
    HF_REPLY_OK(req, status, STATUS, &sr);
    free(mem);
    return true;
}

static void release_message(const struct hf_target *t, long long code, long long index,
                            uint32_t released, char *out, size_t len) {
    (void)code; /* a pool release answers NOT_HELD only */
    snprintf(out, len,
             "pool '%s': this token holds no units (expired, released or never held); "
             "%u units released", hf_target_item(t, index), released);
}

/* ---- claims ---- */

static bool is_gone(long long code) { return code == HF_SC_NOT_HELD; }

static size_t gone_params(const struct hf_target *t, long long code, long long index,
                          const char **values) {
    (void)code;
    values[0] = index >= 1 && (size_t)index <= t->n ? t->items[index - 1] : t->items[0];
    return 1;
}

/* The pools' state after the call, from the result rows, in the target's
 * order (rows of a replay carry none: known stays false). */
static struct hf_pool_row *rows_state(const struct hf_claim *c) {
    const struct hf_target *t = &c->target;
    struct hf_pool_row *rows = calloc(t->n ? t->n : 1, sizeof *rows);
    if (!rows) return NULL;
    for (size_t i = 0; i < c->out.n; i++) {
        const struct hf_outcome_row *o = &c->out.rows[i];
        if (!o->has_state) continue;
        for (size_t j = 0; j < t->n; j++) {
            if (strcmp(o->resource, t->items[j]) != 0) continue;
            rows[j] = (struct hf_pool_row){.known = true, .own = o->own, .capacity = o->capacity,
                                           .sold = o->sold, .version = o->version};
        }
    }
    return rows;
}

/* The pools' new state into the mirror, and (token not NULL) the token's
 * units out of the holds: sold, or given back when this answers an earlier
 * sale. */
static int write_mirror(struct hf_claim *c, const char *token, uint32_t timeout_ms,
                        hf_redis_cb *cb, void *privdata) {
    struct hf_pool_row *rows = rows_state(c);
    if (!rows) return -1;
    int rc = hf_pool_mirror_write(c->req, &c->target, token, rows, NULL, timeout_ms, cb,
                                  privdata);
    free(rows);
    return rc;
}

static int mark(struct hf_claim *c, uint32_t timeout_ms, hf_redis_cb *cb, void *privdata) {
    return write_mirror(c, c->token, timeout_ms, cb, privdata);
}

static size_t marks_expected(const struct hf_claim *c) { return c->target.n; }

static const char *marked(const struct hf_claim *c) {
    return c->out.replayed ? "released" : "sold";
}

/* The request's units, for the answers (a replay answers the same units:
 * they are part of the request the key is bound to). NULL: answered. */
static void *units_of(struct hf_claim *c, Holdfast__V1__PoolTake ***units, const char *what) {
    const struct hf_target *t = &c->target;
    char oom[160];
    snprintf(oom, sizeof oom, "out of memory (the %s is committed; retry with the same "
                              "idempotency key to get its result)", what);
    void *mem = hf_request_items(c->req, t->n, sizeof ***units, (void ***)units, oom);
    for (size_t i = 0; mem && i < t->n; i++) {
        holdfast__v1__pool_take__init((*units)[i]);
        (*units)[i]->pool = t->items[i];
        (*units)[i]->count = t->counts[i];
    }
    return mem;
}

static void answer_confirmed(struct hf_claim *c) {
    if (c->req->answered) return;
    Holdfast__V1__PoolTake **units;
    void *mem = units_of(c, &units, "confirm");
    if (!mem) return;
    const struct hf_outcome *o = &c->out;
    Holdfast__V1__ConfirmResponse cr = HOLDFAST__V1__CONFIRM_RESPONSE__INIT;
    cr.fence = o->n && o->rows[0].fence > 0 ? (uint64_t)o->rows[0].fence : c->fence;
    cr.replayed = o->replayed;
    cr.n_units = c->target.n;
    cr.units = units;
    cr.confirmed_at_unix_ms = o->n ? o->rows[0].at_ms : 0;
    HF_REPLY_OK(c->req, confirm, CONFIRM, &cr);
    free(mem);
}

static int after_cancel(struct hf_claim *c, uint32_t timeout_ms, hf_redis_cb *cb,
                        void *privdata) {
    return write_mirror(c, NULL, timeout_ms, cb, privdata);
}

static void answer_cancelled(struct hf_claim *c) {
    if (c->req->answered) return;
    Holdfast__V1__PoolTake **units;
    void *mem = units_of(c, &units, "cancel");
    if (!mem) return;
    /* The wire's count is 32-bit; max_ids pools of at most MAX_UNITS each
     * can exceed it, so it saturates (the units list has every count). */
    uint64_t total = 0;
    for (size_t i = 0; i < c->target.n; i++) total += c->target.counts[i];
    Holdfast__V1__CancelResponse cr = HOLDFAST__V1__CANCEL_RESPONSE__INIT;
    cr.cancelled = total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
    cr.replayed = c->out.replayed;
    cr.n_units = c->target.n;
    cr.units = units;
    HF_REPLY_OK(c->req, cancel, CANCEL, &cr);
    free(mem);
}

const struct hf_kind hf_kind_pools = {
    .name = "pools",
    .layout = HF_KEYS_POOLS,
    .steps = {
        [HF_STEP_HOLD] = {HF_FN_POOL_HOLD, 0},
        [HF_STEP_HOLD_WAIT] = {HF_FN_POOL_HOLD_WAIT, 0},
        [HF_STEP_EXTEND] = {HF_FN_POOL_EXTEND, 2},
        [HF_STEP_RELEASE] = {HF_FN_POOL_RELEASE, 2},
        [HF_STEP_STATUS] = {HF_FN_POOL_STATUS, 1},
        [HF_STEP_CONFIRM_CHECK] = {HF_FN_POOL_CONFIRM_CHECK, 2},
    },
    .load_state = hf_pool_mirror_load,
    .parse = parse,
    .answer_code = answer_code,
    .answer_status = answer_status,
    .release_message = release_message,
    .confirm_op = "pool_confirm",
    .cancel_op = "pool_cancel",
    .sql_confirm = "SELECT code, replayed, resource, fence, reference, at_ms, own, capacity,"
                   " sold, version FROM holdfast.pool_confirm($1, $2, $3::text[], $4::bigint,"
                   " $5, $6, $7::bytea, $8::integer)",
    .sql_gone = "SELECT " HF_OUTCOME_COLUMNS " FROM holdfast.pool_confirm_gone($1, $2,"
                " $3::text[], $4, $5, $6::bytea, $7, $8::integer)",
    .sql_cancel = "SELECT code, replayed, resource, fence, reference, at_ms, own, capacity, sold,"
                  " version FROM holdfast.pool_cancel($1, $2, $3::text[], $4, $5, $6::integer)",
    .is_gone = is_gone,
    .gone_params = gone_params,
    .mark = mark,
    .marks_expected = marks_expected,
    .marked = marked,
    .answer_confirmed = answer_confirmed,
    .after_cancel = after_cancel,
    .after_cancel_done = "mirrored",
    .after_cancel_fails = "the mirror catches up at the pool's next change",
    .after_mark_fails = "the hold's units return to the pool at the end of the confirm window "
                        "and the mirror catches up at the pool's next change",
    .answer_cancelled = answer_cancelled,
};
