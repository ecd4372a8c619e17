/* ops_status.c - Status: a diagnostic view of a target (seats: state, TTL,
 * ownership by a given token; pools: capacity, sold, held, free, the
 * token's units). Never permission for anything, and never returns a token. */
#include "ops_common.h"
#include "target.h"

/* The op's context. */
struct status_call {
    struct hf_target target;
    struct hf_request *req;
    const char *token;
    bool loaded;
    struct hf_target_load load;
};

static void free_status_call(void *ctx) { hf_target_clear(&((struct status_call *)ctx)->target); }

static void send_status(struct status_call *sc);

static void on_loaded(void *arg, bool ok, const char *why) {
    struct status_call *sc = arg;
    if (!ok) hf_request_fail(sc->req, HF_CODE(UNAVAILABLE), NULL, NULL, "%s", why);
    if (!ok || sc->req->answered) {
        hf_request_op_done(sc->req);
        return;
    }
    send_status(sc);
}

static void on_status_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct status_call *sc = privdata;
    struct hf_request *req = sc->req;
    long long code;
    if (status != HF_REDIS_OK) {
        hf_answer_redis_failure(req, NULL, status, "status");
    } else if (hf_reply_code(r, &code) && hf_target_missing_state(&sc->target, code) &&
               !req->answered) {
        if (sc->loaded) {
            hf_target_answer_reply(req, &sc->target, r); /* still missing */
        } else {
            sc->loaded = true;
            sc->load = (struct hf_target_load){
                .req = req, .t = &sc->target, .done = on_loaded, .arg = sc};
            hf_target_load_state(&sc->load);
            return;
        }
    } else if (!hf_target_answer_status(req, &sc->target, r)) {
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "redis refused the status script");
    }
    hf_request_op_done(req);
}

static void send_status(struct status_call *sc) {
    struct hf_argv args;
    hf_argv_init(&args);
    hf_argv_add_str(&args, sc->token);
    if (hf_target_call(sc->req, &sc->target, HF_STEP_STATUS, NULL, &args, on_status_reply, sc) !=
        0) {
        hf_answer_redis_failure(sc->req, NULL, HF_REDIS_NOT_SENT, "status");
        hf_request_op_done(sc->req);
    }
}

void hf_op_status(struct hf_request *req) {
    Holdfast__V1__StatusRequest *m = req->msg->status;
    struct status_call *sc = hf_request_context(req, sizeof *sc, free_status_call);
    if (!sc) return;
    sc->req = req;
    struct hf_target_fields f = {
        .ns = m->namespace_, .partition = m->partition, .ids = m->ids, .n_ids = m->n_ids,
        .segment = m->segment, .pools = m->pools, .n_pools = m->n_pools};
    if (!hf_target_parse(req, &sc->target, &f, HF_NEED_NAMES)) return;
    if (!hf_token_check(req, m->token, false)) return;
    sc->token = m->token ? m->token : "";
    hf_request_op_start(req);
    send_status(sc);
}
