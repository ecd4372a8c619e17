/* ops_common.c - the checks every operation shares. */
#include "ops_common.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "metrics.h"
#include "policy.h"
#include "token.h"
#include "validate.h"

/* Small lists are compared pairwise; larger ones are sorted, so that a
 * request with limits.max_ids ids costs O(n log n) on the loop. */
#define PAIRWISE_MAX 16

struct id_at {
    const char *id;
    size_t index;
};

static int by_id_then_index(const void *a, const void *b) {
    const struct id_at *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    if (c) return c;
    return x->index < y->index ? -1 : x->index > y->index;
}

size_t hf_first_duplicate(char *const *ids, size_t n) {
    if (n <= PAIRWISE_MAX) {
        for (size_t i = 1; i < n; i++)
            for (size_t j = 0; j < i; j++)
                if (strcmp(ids[i], ids[j]) == 0) return i;
        return n;
    }
    struct id_at *sorted = malloc(n * sizeof *sorted);
    if (!sorted) return n; /* cannot tell; Redis would see the same key twice, harmlessly */
    for (size_t i = 0; i < n; i++) sorted[i] = (struct id_at){ids[i], i};
    qsort(sorted, n, sizeof *sorted, by_id_then_index);
    /* In each run of equal ids every element but the first repeats an
     * earlier one; the earliest such repeat is the one reported. */
    size_t first = n;
    for (size_t i = 1; i < n; i++)
        if (strcmp(sorted[i].id, sorted[i - 1].id) == 0 && sorted[i].index < first)
            first = sorted[i].index;
    free(sorted);
    return first;
}

void hf_target_clear(struct hf_target *t) {
    hf_keyset_free(t->keys);
    t->keys = NULL;
    free(t->legs);
    t->legs = NULL;
}

/* Journey segments: every id becomes one resource per leg, "<id>@<leg>"
 * ('@' is not a name character, so no id can stand for a leg), and from
 * there on the request is an ordinary multi-id request: all or nothing,
 * overlapping trips meet on a shared leg, adjacent ones share none. One
 * allocation: the pointers, then the strings. */
static bool expand_legs(struct hf_request *req, struct hf_target *t, char **ids, size_t n_ids,
                        const Holdfast__V1__Segment *seg) {
    const struct hf_namespace *ns = t->ns;
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
    size_t bytes = 0;
    for (size_t i = 0; i < n_ids; i++) bytes += legs * (strlen(ids[i]) + 12);
    char **out = malloc(n_ids * legs * sizeof *out + bytes);
    if (!out) {
        hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL, "out of memory");
        return false;
    }
    char *p = (char *)(out + n_ids * legs);
    size_t k = 0;
    for (size_t i = 0; i < n_ids; i++) {
        size_t len = strlen(ids[i]);
        for (uint32_t leg = seg->from_stop; leg < seg->to_stop; leg++) {
            out[k++] = p;
            memcpy(p, ids[i], len);
            p += len;
            *p++ = '@';
            char digits[11];
            size_t n = 0;
            uint32_t v = leg;
            do {
                digits[n++] = (char)('0' + v % 10);
                v /= 10;
            } while (v);
            while (n) *p++ = digits[--n];
            *p++ = '\0';
        }
    }
    t->legs = out;
    t->ids = out;
    t->n_ids = n_ids * legs;
    return true;
}

static void free_target_context(void *ctx) { hf_target_clear(ctx); }

struct hf_target *hf_target_context(struct hf_request *req) {
    return hf_request_context(req, sizeof(struct hf_target), free_target_context);
}

bool hf_target_parse(struct hf_request *req, struct hf_target *t, const char *ns_name,
                     const char *partition, char **ids, size_t n_ids,
                     const Holdfast__V1__Segment *segment) {
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
    if (!partition || !hf_valid_name(partition, strlen(partition))) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "partition", NULL,
                        "partition must be 1-128 bytes of [A-Za-z0-9._-]");
        return false;
    }
    req->partition = partition;
    if (n_ids == 0) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "ids", NULL, "at least one id is required");
        return false;
    }
    if (n_ids > req->cfg->max_ids) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "ids", NULL,
                        "%zu ids exceed limits.max_ids (%u)", n_ids, req->cfg->max_ids);
        return false;
    }
    for (size_t i = 0; i < n_ids; i++) {
        if (!hf_valid_name(ids[i], strlen(ids[i]))) {
            char field[32];
            snprintf(field, sizeof field, "ids[%zu]", i);
            hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), field, NULL,
                            "ids must be 1-128 bytes of [A-Za-z0-9._-]");
            return false;
        }
    }
    size_t dup = hf_first_duplicate(ids, n_ids);
    if (dup < n_ids) {
        char field[32];
        snprintf(field, sizeof field, "ids[%zu]", dup);
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), field, ids[dup], "id '%s' appears twice",
                        ids[dup]);
        return false;
    }
    t->ns = ns;
    t->ids = ids;
    t->n_ids = n_ids;
    if (!expand_legs(req, t, ids, n_ids, segment)) return false;
    req->ids = t->ids;
    req->n_ids = t->n_ids;
    t->keys = hf_keyset_build(ns->name, partition, t->ids, t->n_ids);
    if (!t->keys) {
        hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL, "out of memory");
        return false;
    }
    return true;
}

bool hf_ttl_resolve(struct hf_request *req, const struct hf_namespace *ns, uint32_t asked,
                    uint32_t *ttl) {
    if (asked == 0) {
        *ttl = ns->default_ttl_ms;
        return true;
    }
    if (asked < ns->min_ttl_ms || asked > ns->max_ttl_ms) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "ttl_ms", NULL,
                        "ttl_ms %u outside namespace '%s' bounds %u..%u", asked, ns->name,
                        ns->min_ttl_ms, ns->max_ttl_ms);
        return false;
    }
    *ttl = asked;
    return true;
}

bool hf_token_check(struct hf_request *req, const char *token, bool required) {
    size_t len = token ? strlen(token) : 0;
    if (len == 0 && !required) return true;
    if (len == 0) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "token", NULL, "token is required");
        return false;
    }
    if (!hf_token_parse(token, len, NULL)) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "token", NULL,
                        "token is not a holdfast token");
        return false;
    }
    hf_request_note_token(req, token, len);
    return true;
}

void hf_answer_redis_failure(struct hf_request *req, const struct hf_namespace *ns,
                             enum hf_redis_status status, const char *what) {
    const char *why = hf_redis_status_name(status);
    if (ns && ns->on_redis_down == HF_BEST_EFFORT &&
        (req->op->flags & HF_OP_DEGRADABLE)) {
        hf_response_msg resp = HOLDFAST__V1__RESPONSE__INIT;
        char message[160];
        snprintf(message, sizeof message,
                 "degraded: redis %s (%s); nothing is held (best_effort)", why, what);
        resp.code = HF_CODE(OK);
        resp.degraded = true;
        resp.message = message;
        hf_request_reply(req, &resp);
        return;
    }
    hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "redis %s (%s)", why, what);
}

void hf_answer_script_code(struct hf_request *req, const struct hf_target *t, long long code,
                           long long index) {
    const char *id = index >= 1 && (size_t)index <= t->n_ids ? t->ids[index - 1] : NULL;
    switch (code) {
    case 2:
        hf_request_fail(req, HF_CODE(HELD_BY_ANOTHER), NULL, id, "'%s' is held by another token",
                        id ? id : "?");
        break;
    case 3:
        hf_request_fail(req, HF_CODE(NOT_HELD), NULL, id, "'%s' is not held (expired or never held)",
                        id ? id : "?");
        break;
    case 4:
        hf_request_fail(req, HF_CODE(CONFIRMED), NULL, id, "'%s' is already confirmed",
                        id ? id : "?");
        break;
    default:
        hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL, "unexpected script result %lld", code);
        break;
    }
}

bool hf_reply_code(const redisReply *r, long long *code) {
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_INTEGER)
        return false;
    *code = r->element[0]->integer;
    return true;
}

long long hf_reply_int(const redisReply *r, size_t i) {
    if (!r || r->type != REDIS_REPLY_ARRAY || i >= r->elements) return 0;
    const redisReply *e = r->element[i];
    if (e->type == REDIS_REPLY_INTEGER) return e->integer;
    if (e->type == REDIS_REPLY_STRING) return strtoll(e->str, NULL, 10);
    return 0;
}

bool hf_admitted(struct hf_request *req, const struct hf_namespace *ns,
                 const struct hf_hold_facts *facts, uint32_t *ttl) {
    char why[256];
    switch (hf_policy_admit(req->cfg, ns, facts, ttl, why, sizeof why)) {
    case HF_ADMIT:
        return true;
    case HF_DENY:
        hf_request_fail(req, HF_CODE(PERMISSION_DENIED), NULL, NULL, "admit hook: %s", why);
        return false;
    default:
        hf_metrics_inc(HF_C_POLICY_HOOK_FAILURES);
        /* policy.c logs the reasons, at a bounded rate. */
        hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL, "the namespace's admit hook failed");
        return false;
    }
}
