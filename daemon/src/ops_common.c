/* ops_common.c - dispatch and the checks every operation shares. */
#include "ops.h"

#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "log.h"
#include "token.h"
#include "validate.h"

#define CODE(x) HOLDFAST__V1__CODE__CODE_##x

void hf_ops_dispatch(struct hf_request *req) {
    if (req->conn && hf_conn_in_flight(req->conn) > req->cfg->max_inflight_per_conn) {
        hf_request_fail(req, CODE(RESOURCE_EXHAUSTED), NULL, NULL,
                        "more than limits.max_inflight_per_conn (%u) requests in flight",
                        req->cfg->max_inflight_per_conn);
        return;
    }
    switch (req->op) {
    case HF_OP_HOLD: hf_op_hold(req); break;
    case HF_OP_EXTEND: hf_op_extend(req); break;
    case HF_OP_RELEASE: hf_op_release(req); break;
    case HF_OP_STATUS: hf_op_status(req); break;
    case HF_OP_CONFIRM: hf_op_confirm(req); break;
    case HF_OP_CANCEL: hf_op_cancel(req); break;
    case HF_OP_HEALTH: hf_op_health(req); break;
    case HF_OP_METRICS: hf_op_metrics(req); break;
    default:
        hf_request_fail(req, CODE(UNIMPLEMENTED), "method", NULL,
                        "unknown method (field number not known to this daemon)");
        break;
    }
}

static void free_target(void *p) {
    struct hf_target *t = p;
    hf_keyset_free(t->keys);
    free(t);
}

bool hf_target_parse(struct hf_request *req, const char *ns_name, const char *partition,
                     char **ids, size_t n_ids, struct hf_target **out) {
    if (!ns_name || !*ns_name) {
        hf_request_fail(req, CODE(INVALID_ARGUMENT), "namespace", NULL, "namespace is required");
        return false;
    }
    if (!hf_valid_name(ns_name, strlen(ns_name))) {
        hf_request_fail(req, CODE(INVALID_ARGUMENT), "namespace", NULL,
                        "namespace must be 1-128 bytes of [A-Za-z0-9._-]");
        return false;
    }
    const struct hf_namespace *ns = hf_config_namespace(req->cfg, ns_name);
    if (!ns) {
        hf_request_fail(req, CODE(NOT_FOUND), "namespace", NULL,
                        "namespace '%s' is not configured", ns_name);
        return false;
    }
    req->ns = ns->name;
    if (!partition || !hf_valid_name(partition, strlen(partition))) {
        hf_request_fail(req, CODE(INVALID_ARGUMENT), "partition", NULL,
                        "partition must be 1-128 bytes of [A-Za-z0-9._-]");
        return false;
    }
    req->partition = partition;
    if (n_ids == 0) {
        hf_request_fail(req, CODE(INVALID_ARGUMENT), "ids", NULL, "at least one id is required");
        return false;
    }
    if (n_ids > req->cfg->max_ids) {
        hf_request_fail(req, CODE(INVALID_ARGUMENT), "ids", NULL,
                        "%zu ids exceed limits.max_ids (%u)", n_ids, req->cfg->max_ids);
        return false;
    }
    for (size_t i = 0; i < n_ids; i++) {
        if (!hf_valid_name(ids[i], strlen(ids[i]))) {
            char field[32];
            snprintf(field, sizeof field, "ids[%zu]", i);
            hf_request_fail(req, CODE(INVALID_ARGUMENT), field, NULL,
                            "ids must be 1-128 bytes of [A-Za-z0-9._-]");
            return false;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(ids[i], ids[j]) == 0) {
                char field[32];
                snprintf(field, sizeof field, "ids[%zu]", i);
                hf_request_fail(req, CODE(INVALID_ARGUMENT), field, ids[i],
                                "id '%s' appears twice", ids[i]);
                return false;
            }
        }
    }
    req->ids = ids;
    req->n_ids = n_ids;
    struct hf_target *t = calloc(1, sizeof *t);
    if (t) t->keys = hf_keyset_build(ns->name, partition, ids, n_ids);
    if (!t || !t->keys) {
        free(t);
        hf_request_fail(req, CODE(RESOURCE_EXHAUSTED), NULL, NULL, "out of memory");
        return false;
    }
    t->ns = ns;
    t->ids = ids;
    t->n_ids = n_ids;
    req->op_state = t;
    req->op_state_free = free_target;
    *out = t;
    return true;
}

bool hf_ttl_resolve(struct hf_request *req, const struct hf_namespace *ns, uint32_t asked,
                    uint32_t *ttl) {
    if (asked == 0) {
        *ttl = ns->default_ttl_ms;
        return true;
    }
    if (asked < ns->min_ttl_ms || asked > ns->max_ttl_ms) {
        hf_request_fail(req, CODE(INVALID_ARGUMENT), "ttl_ms", NULL,
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
        hf_request_fail(req, CODE(INVALID_ARGUMENT), "token", NULL, "token is required");
        return false;
    }
    if (!hf_token_parse(token, len, NULL)) {
        hf_request_fail(req, CODE(INVALID_ARGUMENT), "token", NULL,
                        "token is not a holdfast token");
        return false;
    }
    hf_request_note_token(req, token, len);
    return true;
}

void hf_answer_redis_failure(struct hf_request *req, const struct hf_namespace *ns,
                             enum hf_redis_status status, const char *what) {
    const char *why = status == HF_REDIS_TIMEOUT ? "timed out"
                      : status == HF_REDIS_DISCONNECTED ? "connection lost"
                      : "not connected";
    if (ns && ns->on_redis_down == HF_BEST_EFFORT &&
        (req->op == HF_OP_HOLD || req->op == HF_OP_EXTEND || req->op == HF_OP_RELEASE)) {
        hf_response_msg resp = HOLDFAST__V1__RESPONSE__INIT;
        char message[160];
        snprintf(message, sizeof message,
                 "degraded: redis %s (%s); nothing is held (best_effort)", why, what);
        resp.code = CODE(OK);
        resp.degraded = true;
        resp.message = message;
        hf_request_reply(req, &resp);
        return;
    }
    hf_request_fail(req, CODE(UNAVAILABLE), NULL, NULL, "redis %s (%s)", why, what);
}

void hf_answer_script_code(struct hf_request *req, const struct hf_target *t, long long code,
                           long long index) {
    const char *id = index >= 1 && (size_t)index <= t->n_ids ? t->ids[index - 1] : NULL;
    switch (code) {
    case 2:
        hf_request_fail(req, CODE(HELD_BY_ANOTHER), NULL, id, "'%s' is held by another token",
                        id ? id : "?");
        break;
    case 3:
        hf_request_fail(req, CODE(NOT_HELD), NULL, id, "'%s' is not held (expired or never held)",
                        id ? id : "?");
        break;
    case 4:
        hf_request_fail(req, CODE(CONFIRMED), NULL, id, "'%s' is already confirmed",
                        id ? id : "?");
        break;
    default:
        hf_request_fail(req, CODE(INTERNAL), NULL, NULL, "unexpected script result %lld", code);
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
