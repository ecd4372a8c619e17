/* ops_status.c - Status: a diagnostic view (state, TTL, ownership by a given
 * token). Never permission for anything, and never returns a token. */
#include <stdlib.h>
#include <string.h>

#include "ops_common.h"
#include "ops_pool.h"
#include "pools.h"
#include "redis_front.h"


static void on_status_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct hf_request *req = privdata;
    struct hf_target *t = req->ctx;
    if (status != HF_REDIS_OK) {
        hf_answer_redis_failure(req, NULL, status, "status");
    } else if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 * t->n_ids) {
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "redis refused the status script");
    } else {
        Holdfast__V1__ResourceStatus *items = calloc(t->n_ids, sizeof *items);
        Holdfast__V1__ResourceStatus **ptrs = calloc(t->n_ids, sizeof *ptrs);
        if (!items || !ptrs) {
            hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL, "out of memory");
        } else {
            for (size_t i = 0; i < t->n_ids; i++) {
                holdfast__v1__resource_status__init(&items[i]);
                long long state = hf_reply_int(r, 3 * i);
                items[i].id = t->ids[i];
                items[i].state = state == HF_SC_NOT_HELD
                                     ? HOLDFAST__V1__RESOURCE_STATE__RESOURCE_STATE_FREE
                                 : state == HF_SC_CONFIRMED
                                     ? HOLDFAST__V1__RESOURCE_STATE__RESOURCE_STATE_CONFIRMED
                                     : HOLDFAST__V1__RESOURCE_STATE__RESOURCE_STATE_HELD;
                items[i].ttl_ms = hf_reply_int(r, 3 * i + 1);
                items[i].owned = hf_reply_int(r, 3 * i + 2) == 1;
                ptrs[i] = &items[i];
            }
            hf_response_msg resp = HOLDFAST__V1__RESPONSE__INIT;
            Holdfast__V1__StatusResponse sr = HOLDFAST__V1__STATUS_RESPONSE__INIT;
            sr.n_resources = t->n_ids;
            sr.resources = ptrs;
            resp.code = HF_CODE(OK);
            resp.result_case = HOLDFAST__V1__RESPONSE__RESULT_STATUS;
            resp.status = &sr;
            hf_request_reply(req, &resp);
        }
        free(items);
        free(ptrs);
    }
    hf_request_op_done(req);
}

void hf_op_status(struct hf_request *req) {
    Holdfast__V1__StatusRequest *m = req->msg->status;
    if (hf_pool_request(req, m->namespace_, m->n_pools)) {
        hf_pool_status(req);
        return;
    }
    struct hf_target *t = hf_target_context(req);
    if (!t || !hf_target_parse(req, t, m->namespace_, m->partition, m->ids, m->n_ids,
                         m->segment)) return;
    if (!hf_token_check(req, m->token, false)) return;
    const char *token = m->token ? m->token : "";
    const char *args[] = {token};
    size_t lens[] = {strlen(token)};
    hf_request_op_start(req);
    if (hf_front_call(req->d->redis, NULL, HF_FN_STATUS, t->keys->count - 1,
                        t->keys->keys + 1, t->keys->lens + 1, 1, args, lens,
                        req->cfg->redis_command_timeout_ms,
                        on_status_reply, req) != 0) {
        hf_answer_redis_failure(req, NULL, HF_REDIS_NOT_SENT, "status");
        hf_request_op_done(req);
    }
}
