/* kind_seats.c - targets of kind seats: 1..N ids of a partition, each one
 * hold key holding the token; with journey segments each id becomes one item
 * per leg ("<id>@<leg>", docs/segments.md), so from the door on a segment is
 * an ordinary multi-id request. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "claim.h"
#include "numfmt.h"
#include "ops_common.h"
#include "validate.h"

#define CONFIRMED_PREFIX "!confirmed:"

/* ---- parse ---- */

static bool no_pool_fields(struct hf_request *req, const struct hf_target *t,
                           const struct hf_target_fields *f, enum hf_target_need need) {
    const char *field = f->n_units ? "units" : f->n_pools ? "pools" : NULL;
    if (need == HF_NEED_POOL_NAMES) field = "pools";
    if (!field) return true;
    hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), field, NULL,
                    "namespace '%s' is of kind seats: name ids, not %s", t->ns->name, field);
    return false;
}

static bool ids_ok(struct hf_request *req, char *const *ids, size_t n) {
    if (n == 0) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "ids", NULL, "at least one id is required");
        return false;
    }
    if (n > req->cfg->max_ids) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "ids", NULL,
                        "%zu ids exceed limits.max_ids (%u)", n, req->cfg->max_ids);
        return false;
    }
    char field[32];
    for (size_t i = 0; i < n; i++) {
        if (hf_valid_name(ids[i], strlen(ids[i]))) continue;
        snprintf(field, sizeof field, "ids[%zu]", i);
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), field, NULL,
                        "ids must be 1-128 bytes of [A-Za-z0-9._-]");
        return false;
    }
    size_t dup = hf_first_duplicate(ids, n);
    if (dup < n) {
        snprintf(field, sizeof field, "ids[%zu]", dup);
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), field, ids[dup], "id '%s' appears twice",
                        ids[dup]);
        return false;
    }
    return true;
}

static bool segment_ok(struct hf_request *req, const struct hf_namespace *ns, size_t n_ids,
                       const Holdfast__V1__Segment *seg) {
    if (!ns->max_legs) {
        if (!seg) return true;
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "segment", NULL,
                        "namespace '%s' has no journey segments (max_legs is 0)", ns->name);
        return false;
    }
    if (!seg) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "segment", NULL,
                        "namespace '%s' sells by leg: the request needs a segment", ns->name);
        return false;
    }
    if (seg->from_stop >= seg->to_stop || seg->to_stop - seg->from_stop > ns->max_legs) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "segment", NULL,
                        "segment must go forward, from_stop < to_stop, over at most %u legs "
                        "(namespace '%s' max_legs)", ns->max_legs, ns->name);
        return false;
    }
    size_t legs = seg->to_stop - seg->from_stop;
    if (n_ids * legs > req->cfg->max_ids) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "segment", NULL,
                        "%zu ids x %zu legs exceed limits.max_ids (%u)", n_ids, legs,
                        req->cfg->max_ids);
        return false;
    }
    return true;
}

/* Every id becomes one item per leg, "<id>@<leg>" ('@' is not a name
 * character, so no id can stand for a leg): overlapping trips meet on a
 * shared leg, adjacent ones share none. One allocation: the pointers, then
 * the strings. */
static char **expand_legs(char **ids, size_t n_ids, const Holdfast__V1__Segment *seg) {
    size_t legs = seg->to_stop - seg->from_stop, bytes = 0;
    for (size_t i = 0; i < n_ids; i++) bytes += legs * (strlen(ids[i]) + 12);
    char **out = malloc(n_ids * legs * sizeof *out + bytes);
    if (!out) return NULL;
    char *p = (char *)(out + n_ids * legs);
    size_t k = 0;
    for (size_t i = 0; i < n_ids; i++) {
        size_t len = strlen(ids[i]);
        for (uint32_t leg = seg->from_stop; leg < seg->to_stop; leg++) {
            out[k++] = p;
            memcpy(p, ids[i], len);
            p += len;
            *p++ = '@';
            p += hf_u64_dec(p, leg) + 1;
        }
    }
    return out;
}

static bool parse(struct hf_request *req, struct hf_target *t, const struct hf_target_fields *f,
                  enum hf_target_need need) {
    if (!no_pool_fields(req, t, f, need) || !ids_ok(req, f->ids, f->n_ids) ||
        !segment_ok(req, t->ns, f->n_ids, f->segment))
        return false;
    t->items = f->ids;
    t->n = f->n_ids;
    if (f->segment) {
        char **legs = expand_legs(f->ids, f->n_ids, f->segment);
        if (!legs) {
            hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL, "out of memory");
            return false;
        }
        t->owned = legs;
        t->items = legs;
        t->n = f->n_ids * (f->segment->to_stop - f->segment->from_stop);
    }
    t->labels = t->items;
    return true;
}

/* ---- answers ---- */

static void answer_code(struct hf_request *req, const struct hf_target *t, long long code,
                        long long index, long long extra) {
    (void)extra;
    const char *id = hf_target_item(t, index);
    switch (code) {
    case HF_SC_HELD_BY_ANOTHER:
        hf_request_fail(req, HF_CODE(HELD_BY_ANOTHER), NULL, id, "'%s' is held by another token",
                        id);
        break;
    case HF_SC_NOT_HELD:
        hf_request_fail(req, HF_CODE(NOT_HELD), NULL, id,
                        "'%s' is not held (expired or never held)", id);
        break;
    case HF_SC_CONFIRMED:
        hf_request_fail(req, HF_CODE(CONFIRMED), NULL, id, "'%s' is already confirmed", id);
        break;
    default:
        hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL, "unexpected script result %lld", code);
        break;
    }
}

/* hf1_status: {state, pttl, owned} per id; state NOT_HELD means free. */
static bool answer_status(struct hf_request *req, const struct hf_target *t,
                          const redisReply *r) {
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 * t->n) return false;
    Holdfast__V1__ResourceStatus **items;
    void *mem = hf_request_items(req, t->n, sizeof **items, (void ***)&items, "out of memory");
    if (!mem) return true;
    for (size_t i = 0; i < t->n; i++) {
        holdfast__v1__resource_status__init(items[i]);
        long long state = hf_reply_int(r, 3 * i);
        items[i]->id = t->items[i];
        items[i]->state = state == HF_SC_NOT_HELD
                              ? HOLDFAST__V1__RESOURCE_STATE__RESOURCE_STATE_FREE
                          : state == HF_SC_CONFIRMED
                              ? HOLDFAST__V1__RESOURCE_STATE__RESOURCE_STATE_CONFIRMED
                              : HOLDFAST__V1__RESOURCE_STATE__RESOURCE_STATE_HELD;
        items[i]->ttl_ms = hf_reply_int(r, 3 * i + 1);
        items[i]->owned = hf_reply_int(r, 3 * i + 2) == 1;
    }
    Holdfast__V1__StatusResponse sr = HOLDFAST__V1__STATUS_RESPONSE__INIT;
    sr.n_resources = t->n;
    sr.resources = items;
    HF_REPLY_OK(req, status, STATUS, &sr);
    free(mem);
    return true;
}

static void release_message(const struct hf_target *t, long long code, long long index,
                            uint32_t released, char *out, size_t len) {
    const char *what = code == HF_SC_HELD_BY_ANOTHER ? "is held by another token"
                       : code == HF_SC_CONFIRMED     ? "is confirmed"
                                                     : "is not held (expired or never held)";
    snprintf(out, len, "'%s' %s; %u of %zu released", hf_target_item(t, index), what, released,
             t->n);
}

/* ---- claims ---- */

static bool is_gone(long long code) {
    return code == HF_SC_NOT_HELD || code == HF_SC_HELD_BY_ANOTHER || code == HF_SC_CONFIRMED;
}

/* confirm_gone's code and id: the key answers CONFIRMED when a marker
 * replaced the hold, else HOLD_LOST. */
static size_t gone_params(const struct hf_target *t, long long code, long long index,
                          const char **values) {
    values[0] = code == HF_SC_CONFIRMED ? "CONFIRMED" : "HOLD_LOST";
    values[1] = index >= 1 && (size_t)index <= t->n ? t->items[index - 1] : t->items[0];
    return 2;
}

/* After a commit: swap the holds for the confirmed marker (or delete them),
 * owner-checked by the token. */
static int mark(struct hf_claim *c, uint32_t timeout_ms, hf_redis_cb *cb, void *privdata) {
    struct hf_argv args;
    hf_argv_init(&args);
    hf_argv_add_str(&args, c->token);
    hf_argv_add_u64(&args, c->target.ns->confirmed_marker_ttl_ms);
    return hf_front_call(c->req->d->redis, NULL, HF_FN_MARK_CONFIRMED,
                         hf_keys_run(c->target.keys, 1, c->target.keys->waiters), &args, timeout_ms,
                         cb, privdata);
}

static size_t marks_expected(const struct hf_claim *c) { return c->target.n; }

static const char *marked(const struct hf_claim *c) {
    return c->target.ns->confirmed_marker_ttl_ms ? "marked" : "released";
}

static void answer_confirmed(struct hf_claim *c) {
    struct hf_request *req = c->req;
    if (req->answered) return;
    const struct hf_outcome *o = &c->out;
    Holdfast__V1__Claim **claims;
    void *mem = hf_request_items(req, o->n, sizeof **claims, (void ***)&claims,
                                 "out of memory (the confirm is committed; retry with the same "
                                 "idempotency key to get its result)");
    if (!mem) return;
    for (size_t i = 0; i < o->n; i++) {
        holdfast__v1__claim__init(claims[i]);
        claims[i]->resource_id = o->rows[i].resource;
        claims[i]->fence = (uint64_t)o->rows[i].fence;
        claims[i]->reference = o->rows[i].reference ? o->rows[i].reference : "";
        claims[i]->confirmed_at_unix_ms = o->rows[i].at_ms;
    }
    Holdfast__V1__ConfirmResponse cr = HOLDFAST__V1__CONFIRM_RESPONSE__INIT;
    cr.fence = o->n ? (uint64_t)o->rows[0].fence : c->fence;
    cr.n_claims = o->n;
    cr.claims = claims;
    cr.replayed = o->replayed;
    HF_REPLY_OK(req, confirm, CONFIRM, &cr);
    free(mem);
}

/* After a committed cancel: drop the confirmed markers of the cancelled ids
 * so the resources can be held again at once. */
static int after_cancel(struct hf_claim *c, uint32_t timeout_ms, hf_redis_cb *cb,
                        void *privdata) {
    const struct hf_target *t = &c->target;
    if (c->out.n == 0) return 1;
    char **ids = calloc(c->out.n, sizeof *ids);
    size_t n = 0;
    for (size_t i = 0; ids && i < c->out.n; i++)
        for (size_t j = 0; j < t->n; j++)
            if (strcmp(c->out.rows[i].resource, t->items[j]) == 0) ids[n++] = t->items[j];
    if (!ids) return -1;
    if (n) c->clear_keys = hf_keyset_build(HF_KEYS_SEATS, t->ns->name, t->partition, ids, n);
    free(ids);
    if (!n) return 1;
    if (!c->clear_keys) return -1;
    return hf_front_call(c->req->d->redis, NULL, HF_FN_CANCEL_CLEAR,
                         hf_keys_run(c->clear_keys, 1, c->clear_keys->waiters), NULL, timeout_ms,
                         cb, privdata);
}

static void answer_cancelled(struct hf_claim *c) {
    if (c->req->answered) return;
    Holdfast__V1__CancelResponse cr = HOLDFAST__V1__CANCEL_RESPONSE__INIT;
    cr.cancelled = (uint32_t)c->out.n;
    cr.replayed = c->out.replayed;
    HF_REPLY_OK(c->req, cancel, CANCEL, &cr);
}

const struct hf_kind hf_kind_seats = {
    .name = "seats",
    .layout = HF_KEYS_SEATS,
    .steps = {
        [HF_STEP_HOLD] = {HF_FN_HOLD, 0},
        [HF_STEP_HOLD_WAIT] = {HF_FN_HOLD_WAIT, 0},
        [HF_STEP_EXTEND] = {HF_FN_EXTEND, 1},
        [HF_STEP_RELEASE] = {HF_FN_RELEASE, 1},
        [HF_STEP_STATUS] = {HF_FN_STATUS, 1},
        [HF_STEP_CONFIRM_CHECK] = {HF_FN_CONFIRM_CHECK, 1},
    },
    .sessions = true,
    .release_wakes = true,
    .delex = true,
    .parse = parse,
    .answer_code = answer_code,
    .answer_status = answer_status,
    .release_message = release_message,
    .confirm_op = "confirm",
    .cancel_op = "cancel",
    .sql_confirm = "SELECT " HF_OUTCOME_COLUMNS " FROM holdfast.confirm($1, $2, $3::text[],"
                   " $4::bigint, $5, $6, $7::bytea, $8::integer)",
    .sql_gone = "SELECT " HF_OUTCOME_COLUMNS " FROM holdfast.confirm_gone($1, $2, $3::text[],"
                " $4, $5, $6::bytea, $7, $8, $9::integer)",
    .sql_cancel = "SELECT " HF_OUTCOME_COLUMNS " FROM holdfast.cancel($1, $2, $3::text[], $4, $5,"
                  " $6::integer)",
    .is_gone = is_gone,
    .gone_params = gone_params,
    .mark = mark,
    .marks_expected = marks_expected,
    .marked = marked,
    .wakes_on_sale = true,
    .answer_confirmed = answer_confirmed,
    .after_cancel = after_cancel,
    .after_cancel_done = "cleared",
    .after_cancel_fails = "the confirmed markers stay until they expire",
    .after_mark_fails = "the hold expires by itself at the end of the confirm window",
    .answer_cancelled = answer_cancelled,
};
