/* ops_confirm.c - Confirm and Cancel: turning a hold into a PostgreSQL claim
 * and back ("Confirm" in the design: the part that must never be wrong).
 *
 * Confirm: validate -> Redis confirm_check (every id still holds this token;
 * the TTL is stretched to the confirm window; gives the fence) ->
 * holdfast.confirm() (one statement, one transaction: idempotency, fence
 * check, claims) -> owner-checked mark (or release) of the hold -> answer
 * from the database's result. A failed mark never changes that answer.
 * Hold gone -> holdfast.lookup() first: a retry of a confirm that already
 * committed gets its stored result, not HOLD_LOST.
 * In doubt (sent, then the connection was lost or the call's deadline passed)
 * -> holdfast.resolve() on another connection, which ends the server process
 * that had the statement and then looks the key up; still unknown ->
 * UNAVAILABLE, and a retry with the same idempotency key is safe.
 *
 * Cancel: holdfast.cancel() (claims into the history, idempotent by key) ->
 * drop the confirmed markers in Redis.
 *
 * The token goes to Redis only: PostgreSQL gets the fence, never the token. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confirm_db.h"
#include "log.h"
#include "metrics.h"
#include "ops_common.h"
#include "pg_pool.h"
#include "scripts.h"
#include "validate.h"

/* A statement may outlive its request by this much, so that a result that
 * is only a little late still settles the outcome on the same connection. */
#define PG_GRACE_MS 250
/* Lock waits inside the SQL functions give up this long before the
 * request's deadline, so a blocked confirm ends with a clean rollback. */
#define LOCK_MARGIN_MS 50
/* The Redis mark after a commit must finish before the request's deadline
 * (or the answer would be DEADLINE_EXCEEDED for a committed confirm). */
#define MARK_RESERVE_MS 10
#define RESOLVE_RETRY_MS 50
/* How long resolve() waits for the old server process to end. */
#define RESOLVE_WAIT_MS 1000

#define OUTCOME_COLUMNS "code, replayed, resource, fence, reference, at_ms"
static const char SQL_CONFIRM[] =
    "SELECT " OUTCOME_COLUMNS " FROM holdfast.confirm($1, $2, $3::text[], $4::bigint, $5, $6,"
    " $7::bytea, $8::integer)";
static const char SQL_CANCEL[] =
    "SELECT " OUTCOME_COLUMNS " FROM holdfast.cancel($1, $2, $3::text[], $4, $5, $6::integer)";
static const char SQL_LOOKUP[] =
    "SELECT " OUTCOME_COLUMNS " FROM holdfast.lookup($1, $2, $3, $4, $5::text[], $6, $7::bytea)";
static const char SQL_RESOLVE[] =
    "SELECT " OUTCOME_COLUMNS " FROM holdfast.resolve($1, $2, $3, $4, $5::text[], $6, $7::bytea,"
    " $8::integer, $9::bigint, $10::integer)";

enum out_code { OUT_OK, OUT_CONFLICT, OUT_STALE, OUT_MISMATCH, OUT_ABSENT, OUT_UNKNOWN };

struct out_row {
    char *resource;
    int64_t fence; /* 0 when NULL */
    char *reference;
    int64_t at_ms;
};

/* A result row set of holdfast.confirm/cancel/lookup/resolve, copied out of
 * the PGresult (which is only borrowed by the callback). */
struct outcome {
    enum out_code code;
    bool replayed;
    size_t n;
    struct out_row *rows; /* the rows that name a resource */
};

/* One Confirm or Cancel: the op's context. */
struct cc {
    struct hf_target target;
    struct hf_request *req;
    struct hf_target *t;      /* &target */
    bool cancel;
    const char *token;        /* Confirm: borrowed from the request; Redis only */
    uint64_t fence;
    const char *key;
    const char *reference;
    const char *payload;
    size_t payload_len;
    char *ids_array;          /* the ids as a PostgreSQL text[] literal */
    bool hold_ours;           /* confirm_check passed: ours to mark after a commit */
    long long hold_state;     /* confirm_check's code when the hold was gone */
    long long hold_index;
    int backend_pid;          /* of the in-doubt statement, 0 if unknown */
    int64_t backend_start_us;
    uint64_t resolve_until;   /* loop time */
    char resolve_why[160];
    struct hf_keyset *clear_keys; /* Cancel: keys of the cancelled ids */
    struct outcome out;
};

static const char *op_word(const struct cc *cc) { return cc->cancel ? "cancel" : "confirm"; }

static void outcome_clear(struct outcome *o) {
    for (size_t i = 0; i < o->n; i++) {
        free(o->rows[i].resource);
        free(o->rows[i].reference);
    }
    free(o->rows);
    memset(o, 0, sizeof *o);
}

static void free_cc(void *ctx) {
    struct cc *cc = ctx;
    outcome_clear(&cc->out);
    hf_keyset_free(cc->clear_keys);
    free(cc->ids_array);
    hf_target_clear(&cc->target);
}

static void cc_done(struct cc *cc) {
    if (!cc->req->answered) {
        /* Every path answers before it ends; this is a safety net. */
        log_error("%s cid=%s: ended without an answer", op_word(cc), cc->req->correlation_id);
        hf_request_fail(cc->req, HF_CODE(INTERNAL), NULL, NULL, "internal error");
    }
    hf_request_op_done(cc->req);
}

/* {"12","13"}: ids are validated names, quoted anyway. */
static char *pg_text_array(char *const *ids, size_t n) {
    size_t cap = 3;
    for (size_t i = 0; i < n; i++) cap += 2 * strlen(ids[i]) + 3;
    char *out = malloc(cap), *p = out;
    if (!out) return NULL;
    *p++ = '{';
    for (size_t i = 0; i < n; i++) {
        if (i) *p++ = ',';
        *p++ = '"';
        for (const char *s = ids[i]; *s; s++) {
            if (*s == '"' || *s == '\\') *p++ = '\\';
            *p++ = *s;
        }
        *p++ = '"';
    }
    *p++ = '}';
    *p = '\0';
    return out;
}

/* The context, with its target parsed. NULL: the request has been answered. */
static struct cc *cc_create(struct hf_request *req, bool cancel, const char *ns,
                            const char *partition, char **ids, size_t n_ids) {
    struct cc *cc = hf_request_context(req, sizeof *cc, free_cc);
    if (!cc) return NULL;
    cc->req = req;
    cc->t = &cc->target;
    cc->cancel = cancel;
    cc->payload = "";
    if (!hf_target_parse(req, cc->t, ns, partition, ids, n_ids)) return NULL;
    return cc;
}

/* Checks passed: from here every path ends in cc_done. */
static bool cc_start(struct cc *cc) {
    cc->ids_array = pg_text_array(cc->t->ids, cc->t->n_ids);
    if (!cc->ids_array) {
        hf_request_fail(cc->req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL, "out of memory");
        return false;
    }
    hf_request_op_start(cc->req);
    return true;
}

/* ---- validation ---- */

/* What Confirm and Cancel both need. false: the request has been answered. */
static bool check_common(struct hf_request *req, const struct hf_target *t, const char *key,
                         const char *reference) {
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
    return true;
}

/* ---- results ---- */

static bool parse_outcome(const PGresult *res, struct outcome *o) {
    outcome_clear(o);
    int n = PQntuples(res);
    if (n < 1 || PQnfields(res) < 6) return false;
    static const struct {
        const char *name;
        enum out_code code;
    } codes[] = {{"OK", OUT_OK},           {"CONFLICT", OUT_CONFLICT},
                 {"STALE", OUT_STALE},     {"IDEMPOTENCY_MISMATCH", OUT_MISMATCH},
                 {"ABSENT", OUT_ABSENT},   {"UNKNOWN", OUT_UNKNOWN}};
    const char *code = PQgetvalue(res, 0, 0);
    size_t k = 0;
    while (k < sizeof codes / sizeof codes[0] && strcmp(codes[k].name, code) != 0) k++;
    if (k == sizeof codes / sizeof codes[0]) return false;
    o->code = codes[k].code;
    o->replayed = PQgetvalue(res, 0, 1)[0] == 't';
    o->rows = calloc((size_t)n, sizeof *o->rows);
    if (!o->rows) return false;
    for (int i = 0; i < n; i++) {
        if (PQgetisnull(res, i, 2)) continue;
        struct out_row *row = &o->rows[o->n++];
        row->resource = strdup(PQgetvalue(res, i, 2));
        row->fence = PQgetisnull(res, i, 3) ? 0 : strtoll(PQgetvalue(res, i, 3), NULL, 10);
        row->reference = PQgetisnull(res, i, 4) ? NULL : strdup(PQgetvalue(res, i, 4));
        row->at_ms = PQgetisnull(res, i, 5) ? 0 : strtoll(PQgetvalue(res, i, 5), NULL, 10);
        if (!row->resource) return false;
    }
    return true;
}

static void answer_confirmed(struct cc *cc) {
    struct hf_request *req = cc->req;
    if (req->answered) return;
    const struct outcome *o = &cc->out;
    Holdfast__V1__Claim *claims = calloc(o->n ? o->n : 1, sizeof *claims);
    Holdfast__V1__Claim **ptrs = calloc(o->n ? o->n : 1, sizeof *ptrs);
    if (!claims || !ptrs) {
        free(claims);
        free(ptrs);
        hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL,
                        "out of memory (the confirm is committed; retry with the same "
                        "idempotency key to get its result)");
        return;
    }
    hf_response_msg resp = HOLDFAST__V1__RESPONSE__INIT;
    Holdfast__V1__ConfirmResponse cr = HOLDFAST__V1__CONFIRM_RESPONSE__INIT;
    for (size_t i = 0; i < o->n; i++) {
        holdfast__v1__claim__init(&claims[i]);
        claims[i].resource_id = o->rows[i].resource;
        claims[i].fence = (uint64_t)o->rows[i].fence;
        claims[i].reference = o->rows[i].reference ? o->rows[i].reference : "";
        claims[i].confirmed_at_unix_ms = o->rows[i].at_ms;
        ptrs[i] = &claims[i];
    }
    cr.fence = o->n ? (uint64_t)o->rows[0].fence : cc->fence;
    cr.n_claims = o->n;
    cr.claims = ptrs;
    cr.replayed = o->replayed;
    resp.code = HF_CODE(OK);
    resp.result_case = HOLDFAST__V1__RESPONSE__RESULT_CONFIRM;
    resp.confirm = &cr;
    hf_request_reply(req, &resp);
    free(claims);
    free(ptrs);
}

static void answer_cancelled(struct cc *cc) {
    hf_response_msg resp = HOLDFAST__V1__RESPONSE__INIT;
    Holdfast__V1__CancelResponse cr = HOLDFAST__V1__CANCEL_RESPONSE__INIT;
    cr.cancelled = (uint32_t)cc->out.n;
    cr.replayed = cc->out.replayed;
    resp.code = HF_CODE(OK);
    resp.result_case = HOLDFAST__V1__RESPONSE__RESULT_CANCEL;
    resp.cancel = &cr;
    hf_request_reply(cc->req, &resp);
}

/* A Redis call made after the database has decided must end before the
 * request's deadline; with too little time left, answer first. */
static uint32_t after_timeout(struct cc *cc, bool *answer_first) {
    struct hf_request *req = cc->req;
    uint32_t timeout = req->cfg->redis_command_timeout_ms;
    *answer_first = false;
    if (req->answered) return timeout;
    uint32_t left = hf_request_remaining_ms(req);
    if (left <= 2 * MARK_RESERVE_MS) *answer_first = true;
    else if (left - MARK_RESERVE_MS < timeout) timeout = left - MARK_RESERVE_MS;
    return timeout;
}

static void after_failed(struct cc *cc, const char *why) {
    struct hf_request *req = cc->req;
    req->after_result = "failed";
    if (!cc->cancel) hf_metrics_inc(HF_C_RELEASE_AFTER_CONFIRM_FAILED);
    log_warn("%s cid=%s: committed, but the redis update after it failed (%s); %s", op_word(cc),
             req->correlation_id, why,
             cc->cancel ? "the confirmed markers stay until they expire"
                        : "the hold expires by itself at the end of the confirm window");
}

static const char *redis_failure(enum hf_redis_status status, const redisReply *r) {
    if (status == HF_REDIS_TIMEOUT) return "timed out";
    if (status != HF_REDIS_OK) return "connection lost";
    return r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply";
}

static void on_mark_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct cc *cc = privdata;
    struct hf_request *req = cc->req;
    if (status == HF_REDIS_OK && r->type == REDIS_REPLY_INTEGER) {
        long long n = r->integer;
        if (n == (long long)cc->t->n_ids) {
            req->after_result = cc->t->ns->confirmed_marker_ttl_ms ? "marked" : "released";
        } else {
            /* Not ours any more (expired past the confirm window, or lost in
             * a failover): PostgreSQL holds the claim all the same. */
            req->after_result = n == 0 ? "hold_gone" : "partly_marked";
            log_warn("confirm cid=%s: committed, but only %lld of %zu holds were still this "
                     "token's to mark", req->correlation_id, n, cc->t->n_ids);
        }
    } else {
        after_failed(cc, redis_failure(status, r));
    }
    answer_confirmed(cc);
    cc_done(cc);
}

/* After a commit: swap the holds for the confirmed marker (or delete them),
 * owner-checked by the token. */
static void mark_hold(struct cc *cc) {
    struct hf_request *req = cc->req;
    bool answer_first;
    uint32_t timeout = after_timeout(cc, &answer_first);
    if (answer_first) answer_confirmed(cc);
    char ttl[16];
    snprintf(ttl, sizeof ttl, "%u", cc->t->ns->confirmed_marker_ttl_ms);
    const char *args[] = {cc->token, ttl};
    size_t lens[] = {strlen(cc->token), strlen(ttl)};
    struct hf_keyset *ks = cc->t->keys;
    if (!req->d->scripts ||
        hf_scripts_call(req->d->scripts, NULL, HF_FN_MARK_CONFIRMED, ks->count - 1, ks->keys + 1,
                        ks->lens + 1, 2, args, lens, timeout, on_mark_reply, cc) != 0) {
        after_failed(cc, "redis not connected");
        answer_confirmed(cc);
        cc_done(cc);
    }
}

static void on_clear_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct cc *cc = privdata;
    if (status == HF_REDIS_OK && r->type == REDIS_REPLY_INTEGER)
        cc->req->after_result = "cleared";
    else
        after_failed(cc, redis_failure(status, r));
    answer_cancelled(cc);
    cc_done(cc);
}

/* After a committed cancel: drop the confirmed markers of the cancelled ids
 * so the resources can be held again at once. */
static void clear_markers(struct cc *cc) {
    struct hf_request *req = cc->req;
    char **ids = calloc(cc->out.n, sizeof *ids);
    size_t n = 0;
    for (size_t i = 0; ids && i < cc->out.n; i++)
        for (size_t j = 0; j < cc->t->n_ids; j++)
            if (strcmp(cc->out.rows[i].resource, cc->t->ids[j]) == 0) ids[n++] = cc->t->ids[j];
    cc->clear_keys = ids && n ? hf_keyset_build(cc->t->ns->name, req->partition, ids, n) : NULL;
    free(ids);
    bool answer_first;
    uint32_t timeout = after_timeout(cc, &answer_first);
    if (answer_first) answer_cancelled(cc);
    struct hf_keyset *ks = cc->clear_keys;
    if (!ks || !req->d->scripts ||
        hf_scripts_call(req->d->scripts, NULL, HF_FN_CANCEL_CLEAR, ks->count - 1, ks->keys + 1,
                        ks->lens + 1, 0, NULL, NULL, timeout, on_clear_reply, cc) != 0) {
        after_failed(cc, ks ? "redis not connected" : "out of memory");
        answer_cancelled(cc);
        cc_done(cc);
    }
}

/* Answer from the database's decision (new, replayed or resolved). */
static void settle(struct cc *cc) {
    struct hf_request *req = cc->req;
    struct outcome *o = &cc->out;
    const char *id = o->n ? o->rows[0].resource : NULL;
    const char *again = o->replayed ? " (replayed)" : "";
    switch (o->code) {
    case OUT_OK:
        req->db_outcome = o->replayed ? "replay" : "commit";
        if (cc->cancel) {
            if (!o->replayed && o->n > 0) {
                clear_markers(cc);
                return;
            }
            answer_cancelled(cc);
        } else if (cc->hold_ours) {
            mark_hold(cc);
            return;
        } else {
            answer_confirmed(cc);
        }
        break;
    case OUT_CONFLICT:
        req->db_outcome = o->replayed ? "replay" : "rollback";
        hf_request_fail(req, HF_CODE(CONFLICT), NULL, id, "'%s' is already claimed%s",
                        id ? id : "?", again);
        break;
    case OUT_STALE:
        req->db_outcome = o->replayed ? "replay" : "rollback";
        hf_request_fail(req, HF_CODE(STALE), NULL, id,
                        "'%s' was seen with a newer fence (%" PRId64 ") than this hold's%s",
                        id ? id : "?", o->n ? o->rows[0].fence : 0, again);
        break;
    case OUT_MISMATCH:
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
    cc_done(cc);
}

/* A statement the server refused: nothing was committed. */
static void answer_pg_error(struct cc *cc, const struct hf_pg_result *r) {
    struct hf_request *req = cc->req;
    const char *s = r->sqlstate;
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
                  op_word(cc), req->correlation_id, r->message, s);
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "postgres schema holdfast is missing or not usable (SQLSTATE %s)", s);
        break;
    case HF_SQLSTATE_OTHER:
        log_error("%s cid=%s: postgres refused the statement: %s (SQLSTATE %s)", op_word(cc),
                  req->correlation_id, r->message, s);
        hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL,
                        "the database refused the %s (SQLSTATE %s); nothing was committed",
                        op_word(cc), s);
        break;
    }
}

/* ---- in doubt ---- */

static void resolve_attempt(struct cc *cc);

static void give_up(struct cc *cc, const char *why) {
    struct hf_request *req = cc->req;
    req->db_outcome = "unknown";
    log_warn("%s cid=%s: the outcome could not be settled (%s)", op_word(cc), req->correlation_id,
             why);
    hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                    "the database connection failed after the %s was sent and its outcome is "
                    "unknown (%s); retry with the same idempotency key", op_word(cc), why);
    cc_done(cc);
}

static void on_resolve_timer(struct hf_request *req) { resolve_attempt(req->ctx); }

static void resolve_retry(struct cc *cc, const char *why) {
    snprintf(cc->resolve_why, sizeof cc->resolve_why, "%s", why);
    if (uv_now(cc->req->d->loop) + RESOLVE_RETRY_MS >= cc->resolve_until) {
        give_up(cc, cc->resolve_why);
        return;
    }
    hf_request_timer_start(cc->req, RESOLVE_RETRY_MS, on_resolve_timer);
}

static void on_resolve_result(void *privdata, const struct hf_pg_result *r) {
    struct cc *cc = privdata;
    struct hf_request *req = cc->req;
    if (r->status != HF_PG_OK) {
        resolve_retry(cc, r->message);
        return;
    }
    if (!parse_outcome(r->res, &cc->out)) {
        resolve_retry(cc, "unexpected result from holdfast.resolve()");
        return;
    }
    switch (cc->out.code) {
    case OUT_ABSENT:
        /* The server process that had it is gone and the key is not there:
         * it rolled back. */
        log_info("%s cid=%s: in-doubt outcome settled: it did not commit", op_word(cc),
                 req->correlation_id);
        req->db_outcome = "rollback";
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "the database connection failed before the %s's result; it did not "
                        "commit, retry with the same idempotency key", op_word(cc));
        cc_done(cc);
        return;
    case OUT_UNKNOWN:
        resolve_retry(cc, "the server process that ran it has not ended yet");
        return;
    default:
        /* The key holds this request's result: it committed (or conflicted). */
        log_info("%s cid=%s: in-doubt outcome settled from the idempotency record: %s",
                 op_word(cc), req->correlation_id, cc->out.code == OUT_OK ? "committed"
                 : "rolled back");
        cc->out.replayed = false;
        settle(cc);
        return;
    }
}

static void resolve_attempt(struct cc *cc) {
    struct hf_request *req = cc->req;
    uint64_t now = uv_now(req->d->loop);
    if (now >= cc->resolve_until) {
        give_up(cc, cc->resolve_why[0] ? cc->resolve_why : "no time left");
        return;
    }
    uint32_t left = (uint32_t)(cc->resolve_until - now);
    uint32_t wait = left / 2 ? left / 2 : 1;
    if (wait > RESOLVE_WAIT_MS) wait = RESOLVE_WAIT_MS;
    char pid[16], start[24], wait_s[16];
    /* pid 0 = the statement's server process is not known: never final. */
    snprintf(pid, sizeof pid, "%d", cc->backend_start_us ? cc->backend_pid : 0);
    snprintf(start, sizeof start, "%" PRId64, cc->backend_start_us);
    snprintf(wait_s, sizeof wait_s, "%u", wait);
    const char *values[10] = {op_word(cc), cc->t->ns->name, cc->key, req->partition, cc->ids_array,
                              cc->reference, cc->payload, pid, start, wait_s};
    int lengths[10] = {0, 0, 0, 0, 0, 0, (int)cc->payload_len, 0, 0, 0};
    int formats[10] = {0, 0, 0, 0, 0, 0, 1, 0, 0, 0};
    int rc = hf_pg_query(req->d->pg, SQL_RESOLVE, 10, values, lengths, formats, left,
                         on_resolve_result, cc);
    if (rc == -ESHUTDOWN || (rc != 0 && !req->d->pg)) give_up(cc, "shutting down");
    else if (rc != 0) resolve_retry(cc, "postgres is not connected");
}

static void start_resolve(struct cc *cc, const struct hf_pg_result *r) {
    struct hf_request *req = cc->req;
    hf_metrics_inc(HF_C_CONFIRM_IN_DOUBT);
    cc->backend_pid = r->backend_pid;
    cc->backend_start_us = r->backend_start_us;
    snprintf(cc->resolve_why, sizeof cc->resolve_why, "%s", r->message);
    /* After the answer (the deadline passed) it is still worth knowing: a
     * committed confirm still gets its hold marked. */
    cc->resolve_until = req->answered ? uv_now(req->d->loop) + req->cfg->pg_statement_timeout_ms
                                      : req->deadline_ms;
    log_warn("%s cid=%s: outcome unknown (%s); asking the database on another connection",
             op_word(cc), req->correlation_id, r->message);
    resolve_attempt(cc);
}

/* ---- the main statement ---- */

static void on_statement_result(void *privdata, const struct hf_pg_result *r) {
    struct cc *cc = privdata;
    struct hf_request *req = cc->req;
    switch (r->status) {
    case HF_PG_OK:
        if (!parse_outcome(r->res, &cc->out) || cc->out.code >= OUT_ABSENT) {
            req->db_outcome = "unknown";
            log_error("%s cid=%s: unexpected result from holdfast.%s()", op_word(cc),
                      req->correlation_id, op_word(cc));
            hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL, "unexpected result from the database");
            cc_done(cc);
            return;
        }
        settle(cc);
        return;
    case HF_PG_ERROR:
        answer_pg_error(cc, r);
        cc_done(cc);
        return;
    case HF_PG_NOT_SENT:
        req->db_outcome = "not_sent";
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "postgres: %s; nothing was sent",
                        r->message);
        cc_done(cc);
        return;
    case HF_PG_IN_DOUBT:
        start_resolve(cc, r);
        return;
    }
}

static void statement_not_sent(struct cc *cc, int rc) {
    cc->req->db_outcome = "not_sent";
    hf_request_fail(cc->req, HF_CODE(UNAVAILABLE), NULL, NULL, "postgres %s",
                    rc == -ENOTCONN ? "is not connected" : strerror(-rc));
    cc_done(cc);
}

/* Lock waits end this long after the statement starts, at the latest. */
static uint32_t lock_budget(uint32_t left) {
    if (left > 2 * LOCK_MARGIN_MS) return left - LOCK_MARGIN_MS;
    return left / 2 ? left / 2 : 1;
}

static void run_confirm(struct cc *cc) {
    struct hf_request *req = cc->req;
    uint32_t left = hf_request_remaining_ms(req);
    char fence[24], lock[16];
    snprintf(fence, sizeof fence, "%" PRIu64, cc->fence);
    snprintf(lock, sizeof lock, "%u", lock_budget(left));
    const char *values[8] = {cc->t->ns->name, req->partition, cc->ids_array, fence,
                             cc->key,         cc->reference,  cc->payload,   lock};
    int lengths[8] = {0, 0, 0, 0, 0, 0, (int)cc->payload_len, 0};
    int formats[8] = {0, 0, 0, 0, 0, 0, 1, 0};
    int rc = hf_pg_query(req->d->pg, SQL_CONFIRM, 8, values, lengths, formats,
                         left + PG_GRACE_MS, on_statement_result, cc);
    if (rc != 0) statement_not_sent(cc, rc);
}

static void run_cancel(struct cc *cc) {
    struct hf_request *req = cc->req;
    uint32_t left = hf_request_remaining_ms(req);
    char lock[16];
    snprintf(lock, sizeof lock, "%u", lock_budget(left));
    const char *values[6] = {cc->t->ns->name, req->partition, cc->ids_array,
                             cc->key,         cc->reference,  lock};
    int rc = hf_pg_query(req->d->pg, SQL_CANCEL, 6, values, NULL, NULL, left + PG_GRACE_MS,
                         on_statement_result, cc);
    if (rc != 0) statement_not_sent(cc, rc);
}

/* ---- the hold is gone: did this confirm already commit? ---- */

static void answer_hold_gone(struct cc *cc) {
    struct hf_request *req = cc->req;
    long long i = cc->hold_index;
    const char *id = i >= 1 && (size_t)i <= cc->t->n_ids ? cc->t->ids[i - 1] : NULL;
    if (cc->hold_state == HF_SC_CONFIRMED)
        hf_request_fail(req, HF_CODE(CONFIRMED), NULL, id, "'%s' is already confirmed", id ? id : "?");
    else if (cc->hold_state == HF_SC_HELD_BY_ANOTHER)
        hf_request_fail(req, HF_CODE(HOLD_LOST), NULL, id,
                        "'%s' is held by another token: this hold was lost", id ? id : "?");
    else
        hf_request_fail(req, HF_CODE(HOLD_LOST), NULL, id,
                        "'%s' is no longer held by this token (expired or released)",
                        id ? id : "?");
}

static void on_lookup_result(void *privdata, const struct hf_pg_result *r) {
    struct cc *cc = privdata;
    struct hf_request *req = cc->req;
    if (r->status != HF_PG_OK || !parse_outcome(r->res, &cc->out) || cc->out.code == OUT_UNKNOWN) {
        /* HOLD_LOST would be a lie if an earlier attempt committed. */
        req->db_outcome = "unknown";
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "the hold is gone and postgres could not say whether this confirm "
                        "already committed (%s); retry with the same idempotency key",
                        r->status == HF_PG_OK ? "unexpected result" : r->message);
        cc_done(cc);
        return;
    }
    if (cc->out.code == OUT_ABSENT) {
        req->db_outcome = "none";
        answer_hold_gone(cc);
        cc_done(cc);
        return;
    }
    settle(cc); /* a replay of the stored result, or a mismatch */
}

static void run_lookup(struct cc *cc) {
    struct hf_request *req = cc->req;
    const char *values[7] = {"confirm", cc->t->ns->name, cc->key, req->partition, cc->ids_array,
                             cc->reference, cc->payload};
    int lengths[7] = {0, 0, 0, 0, 0, 0, (int)cc->payload_len};
    int formats[7] = {0, 0, 0, 0, 0, 0, 1};
    int rc = hf_pg_query(req->d->pg, SQL_LOOKUP, 7, values, lengths, formats,
                         hf_request_remaining_ms(req), on_lookup_result, cc);
    if (rc != 0) {
        req->db_outcome = "unknown";
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "the hold is gone and postgres is not connected to say whether this "
                        "confirm already committed; retry with the same idempotency key");
        cc_done(cc);
    }
}

/* ---- Redis: is the hold still ours? ---- */

static void on_check_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct cc *cc = privdata;
    struct hf_request *req = cc->req;
    long long code;
    if (status != HF_REDIS_OK) {
        hf_answer_redis_failure(req, cc->t->ns, status, "confirm check");
        cc_done(cc);
        return;
    }
    if (!hf_reply_code(r, &code)) {
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "redis refused the confirm_check script");
        cc_done(cc);
        return;
    }
    if (req->answered) {
        /* The deadline passed meanwhile: start nothing nobody waits for. */
        cc_done(cc);
        return;
    }
    if (code == HF_SC_GRANTED) {
        if (hf_reply_int(r, 1) != (long long)cc->fence) {
            hf_request_fail(req, HF_CODE(INTERNAL), NULL, NULL,
                            "confirm_check returned a fence that does not match the token");
            cc_done(cc);
            return;
        }
        cc->hold_ours = true;
        run_confirm(cc);
        return;
    }
    cc->hold_state = code;
    cc->hold_index = hf_reply_int(r, 1);
    run_lookup(cc);
}

void hf_op_confirm(struct hf_request *req) {
    Holdfast__V1__ConfirmRequest *m = req->msg->confirm;
    struct cc *cc = cc_create(req, false, m->namespace_, m->partition, m->ids, m->n_ids);
    if (!cc) return;
    struct hf_target *t = cc->t;
    if (!hf_token_check(req, m->token, true)) return;
    if (m->payload.len > HF_MAX_PAYLOAD_BYTES) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "payload", NULL,
                        "payload is %zu bytes; at most %d", m->payload.len, HF_MAX_PAYLOAD_BYTES);
        return;
    }
    uint64_t fence = 0;
    hf_token_parse(m->token, strlen(m->token), &fence);
    if (fence == 0 || fence > INT64_MAX) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "token", NULL,
                        "the token's fence is out of range");
        return;
    }
    if (!check_common(req, t, m->idempotency_key, m->reference)) return;
    if (!cc_start(cc)) return;
    cc->token = m->token;
    cc->fence = fence;
    cc->key = m->idempotency_key;
    cc->reference = m->reference ? m->reference : "";
    if (m->payload.len) {
        cc->payload = (const char *)m->payload.data;
        cc->payload_len = m->payload.len;
    }
    char window[16];
    snprintf(window, sizeof window, "%u", t->ns->confirm_window_ms);
    const char *args[] = {cc->token, window};
    size_t lens[] = {strlen(cc->token), strlen(window)};
    struct hf_keyset *ks = t->keys;
    if (!req->d->scripts ||
        hf_scripts_call(req->d->scripts, NULL, HF_FN_CONFIRM_CHECK, ks->count - 1, ks->keys + 1,
                        ks->lens + 1, 2, args, lens,
                        hf_request_backend_timeout(req, req->cfg->redis_command_timeout_ms),
                        on_check_reply, cc) != 0) {
        hf_answer_redis_failure(req, t->ns, HF_REDIS_NOT_SENT, "confirm check");
        cc_done(cc);
    }
}

void hf_op_cancel(struct hf_request *req) {
    Holdfast__V1__CancelRequest *m = req->msg->cancel;
    struct cc *cc = cc_create(req, true, m->namespace_, m->partition, m->ids, m->n_ids);
    if (!cc) return;
    if (!check_common(req, cc->t, m->idempotency_key, m->reference)) return;
    if (!cc_start(cc)) return;
    cc->key = m->idempotency_key;
    cc->reference = m->reference ? m->reference : "";
    run_cancel(cc);
}
