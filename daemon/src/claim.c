/* claim.c - the library Confirm and Cancel share (see claim.h). */
#include "claim.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "ops_common.h"
#include "pg_pool.h"
#include "policy.h"
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
/* Leading parameters of every claim statement: ns, partition, the labels. */
#define COMMON_PARAMS 3
#define MAX_PARAMS 12

static void free_claim(void *ctx) {
    struct hf_claim *c = ctx;
    hf_outcome_clear(&c->out);
    hf_keyset_free(c->clear_keys);
    free(c->ids_array);
    hf_target_clear(&c->target);
}

static size_t claim_log_fields(const void *ctx, char *out, size_t cap) {
    return hf_db_note_format(&((const struct hf_claim *)ctx)->note, out, cap);
}

struct hf_claim *hf_claim_create(struct hf_request *req, const struct hf_target_fields *f,
                                 bool confirm) {
    struct hf_claim *c = hf_request_context(req, sizeof *c, free_claim);
    if (!c) return NULL;
    c->req = req;
    c->payload = "";
    c->reference = "";
    hf_request_log_fields(req, claim_log_fields);
    if (!hf_target_parse(req, &c->target, f, HF_NEED_ITEMS)) return NULL;
    c->confirm = confirm;
    c->op = confirm ? c->target.kind->confirm_op : c->target.kind->cancel_op;
    return c;
}

/* The namespace's admit hook sees Confirms and Cancels too, and may refuse
 * them (PERMISSION_DENIED); a failing hook refuses (INTERNAL). */
static bool admitted_by_policy(struct hf_claim *c) {
    struct hf_request *req = c->req;
    struct hf_hold_facts facts = {
        .op = c->confirm ? "confirm" : "cancel",
        .partition = req->partition,
        .ids = c->target.labels,
        .n_ids = c->target.n,
        .correlation_id = req->correlation_id,
        .uid = req->peer_uid,
        .gid = req->peer_gid,
        .idempotency_key = c->key,
        .reference = c->reference,
    };
    return hf_admitted(req, c->target.ns, &facts, NULL);
}

bool hf_claim_check(struct hf_claim *c, const char *key, const char *reference) {
    struct hf_request *req = c->req;
    const struct hf_target *t = &c->target;
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
        c->note.db = "not_sent";
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "postgres is not connected");
        return false;
    }
    c->key = key;
    c->reference = reference ? reference : "";
    return admitted_by_policy(c);
}

bool hf_claim_start(struct hf_claim *c) {
    c->ids_array = hf_pg_text_array(c->target.labels, c->target.n);
    if (!c->ids_array) {
        hf_request_fail(c->req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL, "out of memory");
        return false;
    }
    hf_request_op_start(c->req);
    return true;
}

void hf_claim_done(struct hf_claim *c) {
    if (!c->req->answered) {
        /* Every path answers before it ends; this is a safety net. */
        log_error("%s cid=%s: ended without an answer", c->op, c->req->correlation_id);
        hf_request_fail(c->req, HF_CODE(INTERNAL), NULL, NULL, "internal error");
    }
    hf_request_op_done(c->req);
}

uint32_t hf_claim_lock_budget(const struct hf_claim *c) {
    uint32_t left = hf_request_remaining_ms(c->req);
    if (left > 2 * LOCK_MARGIN_MS) return left - LOCK_MARGIN_MS;
    return left / 2 ? left / 2 : 1;
}

/* ---- refusals ---- */

void hf_claim_refused(struct hf_claim *c) {
    struct hf_request *req = c->req;
    const struct hf_outcome *o = &c->out;
    bool units = c->target.kind->layout == HF_KEYS_POOLS;
    const char *id = o->n ? o->rows[0].resource : "?";
    int64_t number = o->n ? o->rows[0].fence : 0; /* the fence, or a count of units */
    const char *again = o->replayed ? " (replayed)" : "";
    const char *settled = o->replayed ? "replay" : "rollback";
    switch (o->code) {
    case HF_OUT_CONFLICT:
        c->note.db = settled;
        if (units)
            hf_request_fail(req, HF_CODE(CONFLICT), NULL, id,
                            "this hold (fence %" PRId64 ") is already confirmed, or the "
                            "idempotency key already has a sale; nothing was sold%s",
                            number, again);
        else
            hf_request_fail(req, HF_CODE(CONFLICT), NULL, id, "'%s' is already claimed%s", id,
                            again);
        break;
    case HF_OUT_SOLD_OUT:
        c->note.db = settled;
        hf_request_fail(req, HF_CODE(CONFLICT), NULL, id,
                        "pool '%s' has only %" PRId64 " units left unsold; nothing was sold%s",
                        id, number, again);
        break;
    case HF_OUT_STALE:
        c->note.db = settled;
        hf_request_fail(req, HF_CODE(STALE), NULL, id,
                        "'%s' was seen with a newer fence (%" PRId64 ") than this hold's%s", id,
                        number, again);
        break;
    case HF_OUT_HOLD_LOST:
        c->note.db = o->replayed ? "replay" : "lost";
        hf_request_fail(req, HF_CODE(HOLD_LOST), NULL, id,
                        "'%s' %s%s; this idempotency key keeps this answer", id,
                        c->gone_why && !o->replayed ? c->gone_why
                                                    : "is no longer held by this token",
                        again);
        break;
    case HF_OUT_CONFIRMED:
        c->note.db = o->replayed ? "replay" : "lost";
        hf_request_fail(req, HF_CODE(CONFIRMED), NULL, id,
                        "'%s' is already confirmed%s; this idempotency key keeps this answer",
                        id, again);
        break;
    case HF_OUT_NOT_CLAIMED:
        c->note.db = settled;
        if (units)
            hf_request_fail(req, HF_CODE(NOT_FOUND), NULL, id,
                            "pool '%s' has only %" PRId64 " units sold under this reference; "
                            "nothing was cancelled%s", id, number, again);
        else
            hf_request_fail(req, HF_CODE(NOT_FOUND), NULL, id,
                            "'%s' is not claimed; nothing was cancelled%s", id, again);
        break;
    case HF_OUT_OTHER_REFERENCE:
        c->note.db = settled;
        hf_request_fail(req, HF_CODE(CONFLICT), NULL, id,
                        "'%s' is claimed under another reference; nothing was cancelled%s", id,
                        again);
        break;
    case HF_OUT_MISMATCH:
        c->note.db = "rollback";
        hf_request_fail(req, HF_CODE(IDEMPOTENCY_MISMATCH), "idempotency_key", NULL,
                        "idempotency_key '%s' was already used with a different request",
                        c->key);
        break;
    default:
        c->note.db = "unknown";
        hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL, "unexpected result from the database");
        break;
    }
    hf_claim_done(c);
}

/* The database's decision is in c->out: OK goes on in the op. */
static void decided(struct hf_claim *c) {
    if (c->out.code != HF_OUT_OK) {
        hf_claim_refused(c);
        return;
    }
    c->note.db = c->out.replayed ? "replay" : "commit";
    c->decided(c);
}

/* A statement the server refused: nothing was committed. */
static void answer_pg_error(struct hf_claim *c, const struct hf_pg_result *r) {
    struct hf_request *req = c->req;
    const char *s = r->sqlstate;
    c->note.db = "rollback";
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
                  c->op, req->correlation_id, r->message, s);
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "postgres schema holdfast is missing or not usable (SQLSTATE %s)", s);
        break;
    case HF_SQLSTATE_OTHER:
        log_error("%s cid=%s: postgres refused the statement: %s (SQLSTATE %s)", c->op,
                  req->correlation_id, r->message, s);
        hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL,
                        "the database refused the %s (SQLSTATE %s); nothing was committed", c->op,
                        s);
        break;
    }
}

/* ---- the statement ---- */

static void on_resolved(void *arg, enum hf_resolved how, const char *why) {
    struct hf_claim *c = arg;
    struct hf_request *req = c->req;
    switch (how) {
    case HF_RESOLVED_RECORDED:
        decided(c);
        return;
    case HF_RESOLVED_ROLLED_BACK:
        c->note.db = "rollback";
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "the database connection failed before the %s's result; it did not "
                        "commit, retry with the same idempotency key", c->op);
        break;
    case HF_RESOLVED_UNKNOWN:
        c->note.db = "unknown";
        log_warn("%s cid=%s: the outcome could not be settled (%s)", c->op, req->correlation_id,
                 why);
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "the database connection failed after the %s was sent and its outcome is "
                        "unknown (%s); retry with the same idempotency key", c->op, why);
        break;
    }
    hf_claim_done(c);
}

static void on_statement_result(void *privdata, const struct hf_pg_result *r) {
    struct hf_claim *c = privdata;
    struct hf_request *req = c->req;
    switch (r->status) {
    case HF_PG_OK:
        if (!hf_outcome_parse(r->res, &c->out) || c->out.code >= HF_OUT_ABSENT) {
            c->note.db = "unknown";
            log_error("%s cid=%s: unexpected result from holdfast.%s()", c->op,
                      req->correlation_id, c->op);
            hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL,
                            "unexpected result from the database");
            hf_claim_done(c);
            return;
        }
        decided(c);
        return;
    case HF_PG_ERROR:
        answer_pg_error(c, r);
        break;
    case HF_PG_NOT_SENT:
        c->note.db = "not_sent";
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "postgres: %s; nothing was sent",
                        r->message);
        break;
    case HF_PG_IN_DOUBT:
        c->resolve = (struct hf_resolve){
            .req = req,
            .op = c->op,
            .ns = c->target.ns->name,
            .key = c->key,
            .partition = req->partition,
            .ids_array = c->ids_array,
            .reference = c->reference,
            .payload = c->payload,
            .payload_len = c->payload_len,
            .out = &c->out,
            .done = on_resolved,
            .arg = c,
        };
        hf_resolve_start(&c->resolve, r);
        return;
    }
    hf_claim_done(c);
}

void hf_claim_run(struct hf_claim *c, const char *sql, const char *const *more, int n_more,
                  int payload_at, void (*then)(struct hf_claim *c)) {
    struct hf_request *req = c->req;
    const char *values[MAX_PARAMS] = {c->target.ns->name, req->partition, c->ids_array};
    int lengths[MAX_PARAMS] = {0}, formats[MAX_PARAMS] = {0};
    int n = COMMON_PARAMS + n_more;
    for (int i = 0; i < n_more && COMMON_PARAMS + i < MAX_PARAMS; i++)
        values[COMMON_PARAMS + i] = more[i];
    if (payload_at >= 0) {
        lengths[COMMON_PARAMS + payload_at] = (int)c->payload_len;
        formats[COMMON_PARAMS + payload_at] = 1;
    }
    c->decided = then;
    char traced[1024];
    const char *text = hf_sql_traced(req->traceparent, sql, traced, sizeof traced);
    /* Sent within the request's deadline or not at all; lock waits inside
     * end by then too (hf_claim_lock_budget). The plain text is a prepared
     * statement of its session; a traced one (a comment per request) is not. */
    uint32_t send_within = hf_request_remaining_ms(req);
    uint32_t run = req->cfg->pg_statement_timeout_ms + PG_GRACE_MS;
    int rc = n > MAX_PARAMS ? -EINVAL
             : text == sql  ? hf_pg_query_prepared(req->d->pg, sql, n, values, lengths, formats,
                                                   send_within, run, on_statement_result, c)
                            : hf_pg_query(req->d->pg, text, n, values, lengths, formats,
                                          send_within, run, on_statement_result, c);
    if (rc != 0) {
        c->note.db = "not_sent";
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "postgres %s",
                        rc == -ENOTCONN ? "is not connected" : strerror(-rc));
        hf_claim_done(c);
    }
}

/* ---- after the database decided ---- */

uint32_t hf_claim_after_timeout(struct hf_claim *c, bool *answer_first) {
    struct hf_request *req = c->req;
    uint32_t timeout = req->cfg->redis_command_timeout_ms;
    *answer_first = false;
    if (req->answered) return timeout;
    uint32_t left = hf_request_remaining_ms(req);
    if (left <= 2 * AFTER_RESERVE_MS) *answer_first = true;
    else if (left - AFTER_RESERVE_MS < timeout) timeout = left - AFTER_RESERVE_MS;
    return timeout;
}

void hf_claim_after_failed(struct hf_claim *c, const char *why, const char *what_follows) {
    c->note.after = "failed";
    log_warn("%s cid=%s: committed, but the redis update after it failed (%s); %s", c->op,
             c->req->correlation_id, why, what_follows);
}
