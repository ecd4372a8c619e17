/* ops_extend.c - Extend: an owner-checked, all-or-nothing TTL stretch of a
 * hold's ids or units. */
#include "ops_common.h"
#include "target.h"

static void on_extend_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct hf_request *req = privdata;
    struct hf_target *t = req->ctx;
    long long code;
    if (status != HF_REDIS_OK) {
        hf_answer_redis_failure(req, t->ns, status, "extend");
    } else if (!hf_reply_code(r, &code)) {
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "redis refused the extend script");
    } else if (code != HF_SC_GRANTED) {
        hf_target_answer_reply(req, t, r);
    } else {
        Holdfast__V1__ExtendResponse er = HOLDFAST__V1__EXTEND_RESPONSE__INIT;
        er.ttl_ms = req->msg->extend->ttl_ms;
        HF_REPLY_OK(req, extend, EXTEND, &er);
    }
    hf_request_op_done(req);
}

void hf_op_extend(struct hf_request *req) {
    Holdfast__V1__ExtendRequest *m = req->msg->extend;
    struct hf_target *t = hf_target_context(req);
    struct hf_target_fields f = {
        .ns = m->namespace_, .partition = m->partition, .ids = m->ids, .n_ids = m->n_ids,
        .segment = m->segment, .pools = m->pools, .n_pools = m->n_pools};
    uint32_t ttl;
    if (!t || !hf_target_parse(req, t, &f, HF_NEED_NAMES)) return;
    if (!hf_ttl_resolve(req, t->ns, m->ttl_ms, &ttl)) return;
    if (!hf_token_check(req, m->token, true)) return;
    m->ttl_ms = ttl; /* echoed in the answer */
    struct hf_argv args;
    hf_argv_init(&args);
    hf_argv_add_str(&args, m->token);
    hf_argv_add_u64(&args, ttl);
    hf_request_op_start(req);
    if (hf_target_call(req, t, HF_STEP_EXTEND, NULL, &args, on_extend_reply, req) != 0) {
        hf_answer_redis_failure(req, t->ns, HF_REDIS_NOT_SENT, "extend");
        hf_request_op_done(req);
    }
}
