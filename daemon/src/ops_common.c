/* ops_common.c - the checks and answers the operations share. */
#include "ops_common.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "metrics.h"
#include "policy.h"
#include "token.h"
#include "validate.h"

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
