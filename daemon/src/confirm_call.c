/* confirm_call.c - the flow Confirm and Cancel share. */
#include "confirm_call.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confirm_db.h"
#include "log.h"
#include "metrics.h"
#include "policy.h"
#include "pg_pool.h"
#include "redis_front.h"
#include "validate.h"

/* A sent statement's connection is dropped (and the outcome resolved on
 * another) only this long after the server's own statement_timeout: the
 * request's deadline answers the caller, never ends a shared connection. */
#define PG_GRACE_MS 1000
/* Lock waits inside the SQL functions give up this long before the
 * request's deadline, so a blocked confirm ends with a clean rollback. */
#define LOCK_MARGIN_MS 150
/* The Redis update after a commit must finish before the request's deadline
 * (or the answer would be DEADLINE_EXCEEDED for a committed confirm). */
#define AFTER_RESERVE_MS 10

static void free_claim_call(void *ctx) {
    struct claim_call *cc = ctx;
    hf_outcome_clear(&cc->out);
    hf_keyset_free(cc->clear_keys);
    free(cc->ids_array);
    hf_target_clear(&cc->target);
    if (cc->pools) hf_pool_target_clear(cc->pools);
    free(cc->pools);
}

/* The context both kinds of target start from. */
static struct claim_call *claim_init(struct hf_request *req, const struct claim_kind *kind) {
    struct claim_call *cc = hf_request_context(req, sizeof *cc, free_claim_call);
    if (!cc) return NULL;
    cc->req = req;
    cc->t = &cc->target;
    cc->kind = kind;
    cc->payload = "";
    cc->reference = "";
    return cc;
}

struct claim_call *hf_claim_create(struct hf_request *req, const struct claim_kind *kind,
                                   const char *ns, const char *partition, char **ids,
                                   size_t n_ids, const Holdfast__V1__Segment *segment) {
    struct claim_call *cc = claim_init(req, kind);
    if (!cc || !hf_target_parse(req, cc->t, ns, partition, ids, n_ids, segment)) return NULL;
    return cc;
}

/* The namespace's admit hook sees Confirms and Cancels too, and may refuse
 * them (PERMISSION_DENIED); a failing hook refuses (INTERNAL). */
static bool admitted_by_policy(struct claim_call *cc) {
    struct hf_request *req = cc->req;
    struct hf_hold_facts facts = {
        .op = cc->kind->word,
        .partition = req->partition,
        .ids = cc->t->ids,
        .n_ids = cc->t->n_ids,
        .correlation_id = req->correlation_id,
        .uid = req->peer_uid,
        .gid = req->peer_gid,
        .idempotency_key = cc->key,
        .reference = cc->reference,
    };
    return hf_admitted(req, cc->t->ns, &facts, NULL);
}

struct claim_call *hf_claim_create_pools(struct hf_request *req, const struct claim_kind *kind,
                                         const char *ns, const char *partition, size_t n_ids,
                                         Holdfast__V1__PoolTake *const *units, size_t n_units) {
    struct claim_call *cc = claim_init(req, kind);
    if (!cc) return NULL;
    cc->pools = calloc(1, sizeof *cc->pools);
    if (!cc->pools) {
        hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL, "out of memory");
        return NULL;
    }
    cc->t = &cc->pools->t;
    if (!hf_pool_target_parse(req, cc->pools, ns, partition, n_ids, units, n_units, NULL, 0,
                              true, false))
        return NULL;
    return cc;
}

bool hf_claim_check(struct claim_call *cc, const char *key, const char *reference) {
    struct hf_request *req = cc->req;
    const struct hf_target *t = cc->t;
    if (!t->ns->confirmable) {
        hf_request_fail(req, HF_CODE(FAILED_PRECONDITION), "namespace", NULL,
                        "namespace '%s' is not confirmable", t->ns->name);
        return false;
    }
    if (!req->d->pg) {
        hf_request_fail(req, HF_CODE(FAILED_PRECONDITION), NULL, NULL,
                        "%s needs PostgreSQL (postgres.dsn), which this daemon does not have "
                        "configured", req->op->name);
        return false;
    }
    if (!key || !*key) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "idempotency_key", NULL,
                        "idempotency_key is required");
        return false;
    }
    if (!hf_valid_ref_id(key, strlen(key))) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "idempotency_key", NULL,
                        "idempotency_key must be 1-128 bytes of [A-Za-z0-9._:-]");
        return false;
    }
    size_t rlen = reference ? strlen(reference) : 0;
    if (rlen > HF_MAX_REFERENCE_BYTES || !hf_valid_utf8(reference, rlen)) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "reference", NULL,
                        "reference must be at most %d bytes of UTF-8", HF_MAX_REFERENCE_BYTES);
        return false;
    }
    /* Refuse before the hold is stretched, rather than after. */
    if (!req->d->pg_ready) {
        req->db_outcome = "not_sent";
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "postgres is not connected");
        return false;
    }
    cc->key = key;
    cc->reference = reference ? reference : "";
    return admitted_by_policy(cc);
}

bool hf_claim_start(struct claim_call *cc) {
    cc->ids_array = hf_pg_text_array(cc->t->ids, cc->t->n_ids);
    if (!cc->ids_array) {
        hf_request_fail(cc->req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL, "out of memory");
        return false;
    }
    hf_request_op_start(cc->req);
    return true;
}

void hf_claim_done(struct claim_call *cc) {
    if (!cc->req->answered) {
        /* Every path answers before it ends; this is a safety net. */
        log_error("%s cid=%s: ended without an answer", cc->kind->word, cc->req->correlation_id);
        hf_request_fail(cc->req, HF_CODE(INTERNAL), NULL, NULL, "internal error");
    }
    hf_request_op_done(cc->req);
}

uint32_t hf_claim_lock_budget(const struct claim_call *cc) {
    uint32_t left = hf_request_remaining_ms(cc->req);
    if (left > 2 * LOCK_MARGIN_MS) return left - LOCK_MARGIN_MS;
    return left / 2 ? left / 2 : 1;
}

/* ---- answers ---- */

void hf_claim_settle(struct claim_call *cc) {
    struct hf_request *req = cc->req;
    struct hf_outcome *o = &cc->out;
    const char *id = o->n ? o->rows[0].resource : NULL;
    const char *again = o->replayed ? " (replayed)" : "";
    switch (o->code) {
    case HF_OUT_OK:
        req->db_outcome = o->replayed ? "replay" : "commit";
        cc->kind->on_ok(cc);
        return;
    case HF_OUT_CONFLICT:
        req->db_outcome = o->replayed ? "replay" : "rollback";
        if (cc->kind->units)
            hf_request_fail(req, HF_CODE(CONFLICT), NULL, id,
                            "this hold (fence %" PRId64 ") is already confirmed, or the "
                            "idempotency key already has a sale; nothing was sold%s",
                            o->n ? o->rows[0].fence : 0, again);
        else
            hf_request_fail(req, HF_CODE(CONFLICT), NULL, id, "'%s' is already claimed%s",
                            id ? id : "?", again);
        break;
    case HF_OUT_SOLD_OUT:
        req->db_outcome = o->replayed ? "replay" : "rollback";
        hf_request_fail(req, HF_CODE(CONFLICT), NULL, id,
                        "pool '%s' has only %" PRId64 " units left unsold; nothing was sold%s",
                        id ? id : "?", o->n ? o->rows[0].fence : 0, again);
        break;
    case HF_OUT_STALE:
        req->db_outcome = o->replayed ? "replay" : "rollback";
        hf_request_fail(req, HF_CODE(STALE), NULL, id,
                        "'%s' was seen with a newer fence (%" PRId64 ") than this hold's%s",
                        id ? id : "?", o->n ? o->rows[0].fence : 0, again);
        break;
    case HF_OUT_HOLD_LOST:
        req->db_outcome = o->replayed ? "replay" : "lost";
        hf_request_fail(req, HF_CODE(HOLD_LOST), NULL, id,
                        "'%s' %s%s; this idempotency key keeps this answer", id ? id : "?",
                        cc->gone_why && !o->replayed ? cc->gone_why
                                                     : "is no longer held by this token",
                        again);
        break;
    case HF_OUT_CONFIRMED:
        req->db_outcome = o->replayed ? "replay" : "lost";
        hf_request_fail(req, HF_CODE(CONFIRMED), NULL, id,
                        "'%s' is already confirmed%s; this idempotency key keeps this answer",
                        id ? id : "?", again);
        break;
    case HF_OUT_NOT_CLAIMED:
        req->db_outcome = o->replayed ? "replay" : "rollback";
        if (cc->kind->units)
            hf_request_fail(req, HF_CODE(NOT_FOUND), NULL, id,
                            "pool '%s' has only %" PRId64 " units sold under this reference; "
                            "nothing was cancelled%s", id ? id : "?", o->n ? o->rows[0].fence : 0,
                            again);
        else
            hf_request_fail(req, HF_CODE(NOT_FOUND), NULL, id,
                            "'%s' is not claimed; nothing was cancelled%s", id ? id : "?", again);
        break;
    case HF_OUT_OTHER_REFERENCE:
        req->db_outcome = o->replayed ? "replay" : "rollback";
        hf_request_fail(req, HF_CODE(CONFLICT), NULL, id,
                        "'%s' is claimed under another reference; nothing was cancelled%s",
                        id ? id : "?", again);
        break;
    case HF_OUT_MISMATCH:
        req->db_outcome = "rollback";
        hf_request_fail(req, HF_CODE(IDEMPOTENCY_MISMATCH), "idempotency_key", NULL,
                        "idempotency_key '%s' was already used with a different request",
                        cc->key);
        break;
    default:
        req->db_outcome = "unknown";
        hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL, "unexpected result from the database");
        break;
    }
    hf_claim_done(cc);
}

/* A statement the server refused: nothing was committed. */
static void answer_pg_error(struct claim_call *cc, const struct hf_pg_result *r) {
    struct hf_request *req = cc->req;
    const char *s = r->sqlstate;
    const char *word = cc->kind->word;
    req->db_outcome = "rollback";
    switch (hf_sqlstate_classify(s)) {
    case HF_SQLSTATE_DEADLINE:
        /* lock_timeout (set from this request's deadline) or statement_timeout */
        hf_request_fail(req, HF_CODE(DEADLINE_EXCEEDED), NULL, NULL,
                        "the database did not finish in time (%s); nothing was committed", r->message);
        break;
    case HF_SQLSTATE_RETRYABLE:
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "postgres: %s (SQLSTATE %s); nothing was committed, retry with the same "
                        "idempotency key", r->message, s);
        break;
    case HF_SQLSTATE_SCHEMA:
        log_error("%s cid=%s: postgres schema or privileges are not usable: %s (SQLSTATE %s); "
                  "run holdfastd --migrate and check the role's grants",
                  word, req->correlation_id, r->message, s);
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "postgres schema holdfast is missing or not usable (SQLSTATE %s)", s);
        break;
    case HF_SQLSTATE_OTHER:
        log_error("%s cid=%s: postgres refused the statement: %s (SQLSTATE %s)", word,
                  req->correlation_id, r->message, s);
        hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL,
                        "the database refused the %s (SQLSTATE %s); nothing was committed", word,
                        s);
        break;
    }
}

/* ---- the statement ---- */

static void on_resolved(void *arg, enum hf_resolved how, const char *why) {
    struct claim_call *cc = arg;
    struct hf_request *req = cc->req;
    const char *word = cc->kind->word;
    switch (how) {
    case HF_RESOLVED_RECORDED:
        hf_claim_settle(cc);
        return;
    case HF_RESOLVED_ROLLED_BACK:
        req->db_outcome = "rollback";
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "the database connection failed before the %s's result; it did not "
                        "commit, retry with the same idempotency key", word);
        break;
    case HF_RESOLVED_UNKNOWN:
        req->db_outcome = "unknown";
        log_warn("%s cid=%s: the outcome could not be settled (%s)", word, req->correlation_id,
                 why);
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "the database connection failed after the %s was sent and its outcome is "
                        "unknown (%s); retry with the same idempotency key", word, why);
        break;
    }
    hf_claim_done(cc);
}

static void on_statement_result(void *privdata, const struct hf_pg_result *r) {
    struct claim_call *cc = privdata;
    struct hf_request *req = cc->req;
    switch (r->status) {
    case HF_PG_OK:
        if (!hf_outcome_parse(r->res, &cc->out) || cc->out.code >= HF_OUT_ABSENT) {
            req->db_outcome = "unknown";
            log_error("%s cid=%s: unexpected result from holdfast.%s()", cc->kind->word,
                      req->correlation_id, cc->kind->word);
            hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL,
                            "unexpected result from the database");
            hf_claim_done(cc);
            return;
        }
        hf_claim_settle(cc);
        return;
    case HF_PG_ERROR:
        answer_pg_error(cc, r);
        hf_claim_done(cc);
        return;
    case HF_PG_NOT_SENT:
        req->db_outcome = "not_sent";
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "postgres: %s; nothing was sent",
                        r->message);
        hf_claim_done(cc);
        return;
    case HF_PG_IN_DOUBT:
        cc->resolve = (struct hf_resolve){
            .req = req,
            .op = cc->kind->word,
            .ns = cc->t->ns->name,
            .key = cc->key,
            .partition = req->partition,
            .ids_array = cc->ids_array,
            .reference = cc->reference,
            .payload = cc->payload,
            .payload_len = cc->payload_len,
            .out = &cc->out,
            .done = on_resolved,
            .arg = cc,
        };
        hf_resolve_start(&cc->resolve, r);
        return;
    }
}

void hf_claim_run(struct claim_call *cc, const char *sql, int nparams, const char *const *values,
                  const int *lengths, const int *formats) {
    struct hf_request *req = cc->req;
    char traced[1024];
    const char *text = hf_sql_traced(req->traceparent, sql, traced, sizeof traced);
    /* Sent within the request's deadline or not at all; lock waits inside
     * end by then too (hf_claim_lock_budget). The plain text is a prepared
     * statement of its session; a traced one (a comment per request) is not. */
    uint32_t send_within = hf_request_remaining_ms(req);
    uint32_t run = req->cfg->pg_statement_timeout_ms + PG_GRACE_MS;
    int rc = text == sql ? hf_pg_query_prepared(req->d->pg, sql, nparams, values, lengths,
                                                formats, send_within, run, on_statement_result, cc)
                         : hf_pg_query(req->d->pg, text, nparams, values, lengths, formats,
                                       send_within, run, on_statement_result, cc);
    if (rc != 0) {
        req->db_outcome = "not_sent";
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "postgres %s",
                        rc == -ENOTCONN ? "is not connected" : strerror(-rc));
        hf_claim_done(cc);
    }
}

/* ---- after the database decided ---- */

uint32_t hf_claim_after_timeout(struct claim_call *cc, bool *answer_first) {
    struct hf_request *req = cc->req;
    uint32_t timeout = req->cfg->redis_command_timeout_ms;
    *answer_first = false;
    if (req->answered) return timeout;
    uint32_t left = hf_request_remaining_ms(req);
    if (left <= 2 * AFTER_RESERVE_MS) *answer_first = true;
    else if (left - AFTER_RESERVE_MS < timeout) timeout = left - AFTER_RESERVE_MS;
    return timeout;
}

void hf_claim_after_failed(struct claim_call *cc, const char *why) {
    struct hf_request *req = cc->req;
    req->after_result = "failed";
    log_warn("%s cid=%s: committed, but the redis update after it failed (%s); %s",
             cc->kind->word, req->correlation_id, why, cc->kind->if_update_fails);
}

bool hf_claim_check_reply(struct claim_call *cc, enum hf_redis_status status,
                          const redisReply *r, const char *script, long long *code) {
    struct hf_request *req = cc->req;
    if (status != HF_REDIS_OK) {
        hf_answer_redis_failure(req, cc->t->ns, status, "confirm check");
    } else if (!hf_reply_code(r, code)) {
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "redis refused the %s script",
                        script);
    } else if (req->answered) {
        /* The deadline passed meanwhile: start nothing nobody waits for. */
    } else if (*code == HF_SC_GRANTED && hf_reply_int(r, 1) != (long long)cc->fence) {
        hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL,
                        "confirm_check returned a fence that does not match the token");
    } else {
        cc->hold_ours = *code == HF_SC_GRANTED;
        return true;
    }
    hf_claim_done(cc);
    return false;
}

/* ---- after a committed confirm ---- */

static void confirm_marked_fail(struct claim_call *cc, const char *why) {
    hf_metrics_inc(HF_C_RELEASE_AFTER_CONFIRM_FAILED);
    hf_claim_after_failed(cc, why);
}

static void on_mark_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct claim_call *cc = privdata;
    struct hf_request *req = cc->req;
    if (status == HF_REDIS_OK && r->type == REDIS_REPLY_INTEGER) {
        long long n = r->integer;
        size_t expected = cc->kind->marks_expected(cc);
        if (n > 0 && cc->kind->after_marked) cc->kind->after_marked(cc, n);
        if (n == (long long)expected) {
            req->after_result = cc->kind->marked(cc);
        } else {
            /* Not ours any more (expired past the confirm window, or lost in
             * a failover): PostgreSQL holds the sale all the same. */
            req->after_result = n == 0 ? "hold_gone" : "partly_marked";
            log_warn("confirm cid=%s: committed, but only %lld of %zu %s were still this "
                     "token's to mark", req->correlation_id, n, expected,
                     cc->kind->units ? "pools" : "holds");
        }
    } else {
        confirm_marked_fail(cc, hf_redis_failure_text(status, r));
    }
    cc->kind->answer(cc);
    hf_claim_done(cc);
}

void hf_claim_confirmed(struct claim_call *cc) {
    if (cc->hold_ours) {
        bool answer_first;
        uint32_t timeout = hf_claim_after_timeout(cc, &answer_first);
        if (answer_first) cc->kind->answer(cc);
        const char *unsent = cc->kind->mark(cc, timeout, on_mark_reply);
        if (!unsent) return;
        confirm_marked_fail(cc, unsent);
    }
    cc->kind->answer(cc);
    hf_claim_done(cc);
}
