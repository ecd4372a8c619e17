/* ops_extend.c - Extend: owner-checked, all-or-nothing TTL stretch. */
#include <stdio.h>
#include <string.h>

#include "numfmt.h"
#include "ops_common.h"
#include "ops_pool.h"
#include "pools.h"
#include "redis_front.h"


static void on_extend_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct hf_request *req = privdata;
    struct hf_target *t = req->ctx;
    long long code;
    if (status != HF_REDIS_OK) {
        hf_answer_redis_failure(req, t->ns, status, "extend");
    } else if (!hf_reply_code(r, &code)) {
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "redis refused the extend script");
    } else if (code != HF_SC_GRANTED) {
        hf_answer_script_code(req, t, code, hf_reply_int(r, 1));
    } else {
        hf_response_msg resp = HOLDFAST__V1__RESPONSE__INIT;
        Holdfast__V1__ExtendResponse er = HOLDFAST__V1__EXTEND_RESPONSE__INIT;
        er.ttl_ms = req->msg->extend->ttl_ms;
        resp.code = HF_CODE(OK);
        resp.result_case = HOLDFAST__V1__RESPONSE__RESULT_EXTEND;
        resp.extend = &er;
        hf_request_reply(req, &resp);
    }
    hf_request_op_done(req);
}

void hf_op_extend(struct hf_request *req) {
    Holdfast__V1__ExtendRequest *m = req->msg->extend;
    if (hf_pool_request(req, m->namespace_, m->n_pools)) {
        hf_pool_extend(req);
        return;
    }
    struct hf_target *t = hf_target_context(req);
    uint32_t ttl;
    if (!t || !hf_target_parse(req, t, m->namespace_, m->partition, m->ids, m->n_ids,
                         m->segment)) return;
    if (!hf_ttl_resolve(req, t->ns, m->ttl_ms, &ttl)) return;
    if (!hf_token_check(req, m->token, true)) return;
    m->ttl_ms = ttl; /* echoed in the answer */
    char ttl_s[24];
    size_t ttl_len = hf_u64_dec(ttl_s, ttl);
    const char *args[] = {m->token, ttl_s};
    size_t lens[] = {strlen(m->token), ttl_len};
    hf_request_op_start(req);
    if (hf_front_call(req->d->redis, NULL, HF_FN_EXTEND, t->keys->count - 1,
                        t->keys->keys + 1, t->keys->lens + 1, 2, args, lens,
                        req->cfg->redis_command_timeout_ms,
                        on_extend_reply, req) != 0) {
        hf_answer_redis_failure(req, t->ns, HF_REDIS_NOT_SENT, "extend");
        hf_request_op_done(req);
    }
}
