/* request.c - the request layer: clients' in-flight lists, dispatch
 * through the op table, deadline, the single answer, log line, metrics. */
#include "request.h"

#include <assert.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "log.h"
#include "metrics.h"
#include "session.h"
#include "token.h"

struct hf_client {
    struct hf_daemon *d;
    const struct hf_client_io *io;
    void *io_ctx;
    uint32_t uid, gid;
    /* Every request not yet freed: answered ones too while their backend
     * calls go on, so a client that floods short deadlines is still bounded
     * by limits.max_inflight_per_conn. */
    struct hf_request *requests;
    unsigned in_flight;
    struct hf_session *session; /* NULL until the first session hold */
};

/* ---- clients ---- */

struct hf_client *hf_client_create(struct hf_daemon *d, const struct hf_client_io *io,
                                   void *io_ctx, uint32_t uid, uint32_t gid) {
    struct hf_client *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->d = d;
    c->io = io;
    c->io_ctx = io_ctx;
    c->uid = uid;
    c->gid = gid;
    return c;
}

unsigned hf_client_in_flight(const struct hf_client *c) { return c->in_flight; }

size_t hf_client_session_holds(const struct hf_client *c) {
    return hf_session_holds(c->session);
}

static void client_add(struct hf_client *c, struct hf_request *req) {
    req->client = c;
    DL_PREPEND2(c->requests, req, client_prev, client_next);
    c->in_flight++;
}

static void client_remove(struct hf_client *c, struct hf_request *req) {
    DL_DELETE2(c->requests, req, client_prev, client_next);
    req->client = NULL;
    c->in_flight--;
}

void hf_client_gone(struct hf_client *c) {
    if (!c) return;
    while (c->requests) {
        struct hf_request *req = c->requests;
        client_remove(c, req);
        void (*cb)(void *) = req->gone_cb;
        req->gone_cb = NULL;
        if (cb) cb(req->gone_arg);
    }
    hf_session_close(c->session); /* releases the session holds */
    free(c);
}

/* ---- a request's life ---- */

static void on_deadline(uv_timer_t *t) {
    struct hf_request *req = t->data;
    hf_request_fail(req, HF_CODE(DEADLINE_EXCEEDED), NULL, NULL,
                    "deadline of %u ms exceeded", req->msg->timeout_ms);
}

static void generate_correlation_id(char out[HF_NAME_MAX + 1]) {
    unsigned char raw[8] = {0};
    static const char hex[] = "0123456789abcdef";
    if (hf_random_bytes(raw, sizeof raw) != 0) memset(raw, 0, sizeof raw);
    for (size_t i = 0; i < sizeof raw; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[2 * sizeof raw] = '\0';
}

static const struct hf_op_def *op_of(const struct hf_op_table *t, int method) {
    for (size_t i = 0; i + 1 < t->n; i++)
        if (t->ops[i].method == method) return &t->ops[i];
    return &t->ops[t->n - 1]; /* unknown */
}

/* Freed requests wait here for the next frame (at most CACHE_MAX of them):
 * no malloc, no free, no zeroing of the arena per request. */
enum { CACHE_MAX = 256 };
static struct hf_request *free_requests;
static unsigned n_free_requests;

static struct hf_request *request_alloc(void) {
    struct hf_request *req = free_requests;
    if (req) {
        free_requests = req->free_next;
        n_free_requests--;
    } else if (!(req = malloc(sizeof *req))) {
        return NULL;
    }
    /* Zeroed up to the buffers, which are set up as they are used. */
    memset(req, 0, offsetof(struct hf_request, arena_buf));
    req->arena = (struct hf_arena){.buf = req->arena_buf, .cap = sizeof req->arena_buf};
    return req;
}

static void request_free(struct hf_request *req) {
    if (n_free_requests >= CACHE_MAX) {
        free(req);
        return;
    }
    req->free_next = free_requests;
    free_requests = req;
    n_free_requests++;
}

void hf_request_cache_drain(void) {
    while (free_requests) {
        struct hf_request *req = free_requests;
        free_requests = req->free_next;
        free(req);
    }
    n_free_requests = 0;
}

static void on_handle_closed(uv_handle_t *h) {
    struct hf_request *req = h->data;
    if (--req->open_handles > 0) return;
    struct hf_daemon *d = req->d;
    if (req->ctx_free) req->ctx_free(req->ctx);
    free(req->ctx);
    hf_request_msg_free_in(&req->arena, req->msg);
    hf_config_unref(req->cfg);
    request_free(req);
    d->in_flight--;
    hf_metrics_gauge_set(HF_G_IN_FLIGHT, d->in_flight);
    if (d->in_flight == 0 && d->draining && d->on_idle) d->on_idle(d);
}

static void unref(struct hf_request *req) {
    if (--req->refs > 0) return;
    /* Answered and nothing of its op pending: its slot is free now. */
    struct hf_client *c = req->client;
    if (c) {
        client_remove(c, req);
        if (c->in_flight == 0 && c->io->settled) c->io->settled(c->io_ctx);
    }
    req->open_handles = 1 + req->op_timer_used;
    uv_close((uv_handle_t *)&req->deadline, on_handle_closed);
    if (req->op_timer_used) uv_close((uv_handle_t *)&req->op_timer, on_handle_closed);
}

/* bad_string: the name of a string field that holds a NUL or invalid UTF-8,
 * or NULL. */
static void dispatch(struct hf_client *c, struct hf_request *req, hf_request_msg *msg,
                     const char *bad_string) {
    struct hf_daemon *d = c->d;
    req->d = d;
    req->msg = msg;
    req->cfg = hf_config_ref(d->cfg);
    req->op = op_of(d->ops, (int)msg->method_case);
    req->id = msg->id;
    req->started_ns = uv_hrtime();
    req->refs = 1; /* the answer */
    req->peer_uid = c->uid;
    req->peer_gid = c->gid;
    strcpy(req->token_fp, "-");
    d->in_flight++;
    hf_metrics_gauge_set(HF_G_IN_FLIGHT, d->in_flight);
    client_add(c, req);

    uint32_t timeout = msg->timeout_ms ? msg->timeout_ms : req->cfg->default_timeout_ms;
    if (timeout > req->cfg->max_timeout_ms) timeout = req->cfg->max_timeout_ms;
    if (timeout < req->cfg->min_timeout_ms) timeout = req->cfg->min_timeout_ms;
    msg->timeout_ms = timeout;
    req->deadline_ms = uv_now(d->loop) + timeout;
    uv_timer_init(d->loop, &req->deadline);
    req->deadline.data = req;
    uv_timer_start(&req->deadline, on_deadline, timeout, 0);

    if (bad_string) {
        /* Checked before anything reads a field: a value cut short at a NUL
         * would name another resource, key or namespace. */
        generate_correlation_id(req->correlation_id);
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), bad_string, NULL,
                        "%s must be UTF-8 without NUL bytes", bad_string);
        return;
    }
    const char *cid = msg->correlation_id;
    bool cid_ok = cid && *cid && hf_valid_ref_id(cid, strlen(cid));
    if (cid_ok)
        memcpy(req->correlation_id, cid, strlen(cid) + 1);
    else
        generate_correlation_id(req->correlation_id);
    /* Never an error (W3C trace context): an invalid one is only ignored. */
    const char *tp = msg->traceparent;
    if (tp && *tp)
        req->traceparent_invalid = !hf_traceparent_parse(tp, strlen(tp), req->traceparent);
    if (cid && *cid && !cid_ok) {
        hf_request_fail(req, HF_CODE(INVALID_ARGUMENT), "correlation_id", NULL,
                        "correlation_id must be 1-128 bytes of [A-Za-z0-9._:-]");
        return;
    }
    if (d->draining) {
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL, "the daemon is shutting down");
        return;
    }
    if (c->in_flight > req->cfg->max_inflight_per_conn) {
        hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL,
                        "more than limits.max_inflight_per_conn (%u) requests in flight",
                        req->cfg->max_inflight_per_conn);
        return;
    }
    req->op->handler(req);
}

void hf_client_frame(struct hf_client *c, const uint8_t *payload, size_t len) {
    struct hf_request *req = request_alloc();
    if (!req) {
        c->io->fatal(c->io_ctx, HF_CODE(RESOURCE_EXHAUSTED), "out of memory");
        return;
    }
    hf_request_msg *msg = hf_frame_unpack_request_in(&req->arena, payload, len);
    if (!msg) {
        request_free(req);
        hf_metrics_inc(HF_C_FRAMES_REJECTED);
        log_warn("client connection: undecodable request frame (%zu bytes); closing", len);
        c->io->fatal(c->io_ctx, HF_CODE(INVALID_ARGUMENT), "frame is not a holdfast.v1.Request");
        return;
    }
    char bad[64];
    dispatch(c, req, msg, hf_frame_strings_ok(payload, len, bad, sizeof bad) ? NULL : bad);
}

uint32_t hf_request_remaining_ms(const struct hf_request *req) {
    uint64_t now = uv_now(req->d->loop);
    return now + 1 >= req->deadline_ms ? 1 : (uint32_t)(req->deadline_ms - now);
}

uint32_t hf_request_backend_timeout(const struct hf_request *req, uint32_t limit_ms) {
    uint32_t left = hf_request_remaining_ms(req);
    return left < limit_ms ? left : limit_ms;
}

/* ---- the op's context, reference and timer ---- */

void *hf_request_context(struct hf_request *req, size_t size, void (*free_fn)(void *ctx)) {
    assert(!req->ctx);
    req->ctx = calloc(1, size);
    if (!req->ctx) {
        hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL, "out of memory");
        return NULL;
    }
    req->ctx_free = free_fn;
    return req->ctx;
}

void hf_request_op_start(struct hf_request *req) {
    assert(!req->op_busy);
    req->op_busy = true;
    req->refs++;
}

void hf_request_op_done(struct hf_request *req) {
    assert(req->op_busy);
    req->op_busy = false;
    if (req->op_timer_used) uv_timer_stop(&req->op_timer);
    unref(req);
}

static void on_op_timer(uv_timer_t *t) {
    struct hf_request *req = t->data;
    req->op_timer_cb(req->op_timer_arg);
}

void hf_request_timer_start(struct hf_request *req, uint64_t ms, void (*cb)(void *arg),
                            void *arg) {
    assert(req->op_busy);
    if (!req->op_timer_used) {
        uv_timer_init(req->d->loop, &req->op_timer);
        req->op_timer.data = req;
        req->op_timer_used = true;
    }
    req->op_timer_cb = cb;
    req->op_timer_arg = arg;
    uv_timer_start(&req->op_timer, on_op_timer, ms, 0);
}

void hf_request_timer_stop(struct hf_request *req) {
    if (req->op_timer_used) uv_timer_stop(&req->op_timer);
}

bool hf_request_client_gone(const struct hf_request *req) { return !req->client; }

void hf_request_on_client_gone(struct hf_request *req, void (*cb)(void *arg), void *arg) {
    req->gone_cb = cb;
    req->gone_arg = arg;
}

struct hf_session *hf_request_session(struct hf_request *req, bool create) {
    struct hf_client *c = req->client;
    if (!c) return NULL;
    if (!c->session && create) c->session = hf_session_create(c->d, c->io->send, c->io_ctx);
    return c->session;
}

void hf_request_session_pause(struct hf_request *req, const char *token, bool confirm) {
    if (req->session_token || !req->client) return;
    if (hf_session_pause(req->client->session, token, confirm)) {
        req->session_token = token;
        req->session_confirm = confirm;
    }
}

/* The answer ends the pause: a committed Confirm's hold leaves the session. */
static void session_answered(struct hf_request *req, hf_code code) {
    const char *token = req->session_token;
    req->session_token = NULL;
    if (req->client)
        hf_session_resume(req->client->session, token, req->session_confirm,
                          req->session_confirm && code == HF_CODE(OK));
}

void hf_request_log_fields(struct hf_request *req,
                           size_t (*fn)(const void *ctx, char *out, size_t cap)) {
    req->log_fields = fn;
}

void hf_request_note_token(struct hf_request *req, const char *token, size_t len) {
    hf_token_fingerprint(token, len, req->token_fp);
}

/* A bounded string builder for the request line: memcpy, not printf, since
 * this runs once per request. */
struct line {
    char buf[1024];
    size_t len;
};

static void put(struct line *l, const char *s) {
    size_t n = strlen(s);
    if (n > sizeof l->buf - l->len) n = sizeof l->buf - l->len;
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}

static void put_u64(struct line *l, uint64_t v) {
    char digits[24];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n && l->len < sizeof l->buf) l->buf[l->len++] = digits[--n];
}

/* "12,13,14", shortened past a few hundred bytes. */
static void put_ids(struct line *l, const struct hf_request *req) {
    if (!req->ids || req->n_ids == 0) {
        put(l, "-");
        return;
    }
    size_t start = l->len;
    for (size_t i = 0; i < req->n_ids; i++) {
        if (l->len - start + strlen(req->ids[i]) > 300) {
            put(l, "...(+");
            put_u64(l, req->n_ids - i);
            put(l, ")");
            return;
        }
        if (i) put(l, ",");
        put(l, req->ids[i]);
    }
}

/* log.requests and log.requests_sample, as access logs offer: every line,
 * the errors only, none, or 1 in N of the OK answers. */
static bool request_line_wanted(const struct hf_config *cfg, hf_code code) {
    static uint32_t ok_seen;
    switch (cfg->log_requests) {
    case HF_LOG_REQUESTS_OFF: return false;
    case HF_LOG_REQUESTS_ERRORS: return code != HF_CODE(OK);
    case HF_LOG_REQUESTS_ALL: break;
    }
    if (code != HF_CODE(OK) || cfg->log_requests_sample <= 1) return true;
    return ok_seen++ % cfg->log_requests_sample == 0;
}

static void log_request(const struct hf_request *req, const hf_response_msg *resp,
                        uint64_t latency_us) {
    enum hf_log_level level = resp->code == HF_CODE(INTERNAL) ? HF_LOG_ERROR : HF_LOG_INFO;
    /* Probes come every few seconds: debug unless log.probes asks for them. */
    if (level == HF_LOG_INFO && (req->op->flags & HF_OP_PROBE) && !req->cfg->log_probes)
        level = HF_LOG_DEBUG;
    if (level == HF_LOG_INFO && !request_line_wanted(req->cfg, resp->code)) return;
    if (!hf_log_enabled(level)) return;
    struct line l = {.len = 0};
    put(&l, "req cid=");
    put(&l, req->correlation_id);
    if (req->traceparent[0]) {
        /* The trace-id alone: "00-<trace-id>-..." */
        char trace_id[33];
        memcpy(trace_id, req->traceparent + 3, 32);
        trace_id[32] = '\0';
        put(&l, " trace=");
        put(&l, trace_id);
    } else if (req->traceparent_invalid) {
        put(&l, " trace=invalid");
    }
    put(&l, " op=");
    put(&l, req->op->name);
    put(&l, " ns=");
    put(&l, req->ns ? req->ns : "-");
    put(&l, " partition=");
    put(&l, req->partition ? req->partition : "-");
    put(&l, " ids=");
    put_ids(&l, req);
    put(&l, " result=");
    put(&l, hf_code_name(resp->code));
    put(&l, " latency_us=");
    put_u64(&l, latency_us);
    put(&l, " token_fp=");
    put(&l, req->token_fp);
    if (resp->degraded) put(&l, " degraded=1");
    if (req->log_fields && req->ctx)
        l.len += req->log_fields(req->ctx, l.buf + l.len, sizeof l.buf - l.len);
    if (resp->message && *resp->message) {
        /* Messages are the daemon's own text; quotes are safe to wrap them in. */
        put(&l, " msg=\"");
        put(&l, resp->message);
        put(&l, "\"");
    }
    hf_log_line(level, l.buf, l.len);
}

void hf_request_reply(struct hf_request *req, hf_response_msg *resp) {
    if (req->answered) return;
    req->answered = true;
    uv_timer_stop(&req->deadline);
    resp->id = req->id;
    resp->correlation_id = req->correlation_id;
    uint64_t latency_us = (uv_hrtime() - req->started_ns) / 1000;
    hf_metrics_request(req->op, resp->code, resp->degraded, latency_us);
    if (resp->degraded) hf_metrics_inc(HF_C_DEGRADED_ANSWERS);
    log_request(req, resp, latency_us);
    if (req->session_token) session_answered(req, resp->code);
    struct hf_client *c = req->client;
    if (c) {
        size_t len;
        uint8_t *frame = hf_frame_pack_response(resp, &len);
        if (frame) c->io->send(c->io_ctx, frame, len);
        else c->io->fatal(c->io_ctx, HF_CODE(RESOURCE_EXHAUSTED), "out of memory");
    }
    unref(req);
}

void *hf_request_items(struct hf_request *req, size_t n, size_t size, void ***ptrs,
                       const char *oom) {
    size_t m = n ? n : 1;
    size_t aligned = (size + 15) & ~(size_t)15;
    char *mem = calloc(1, m * aligned + m * sizeof(void *));
    if (!mem) {
        hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL, "%s", oom);
        return NULL;
    }
    void **p = (void **)(mem + m * aligned);
    for (size_t i = 0; i < n; i++) p[i] = mem + i * aligned;
    *ptrs = p;
    return mem;
}

void hf_request_fail(struct hf_request *req, hf_code code, const char *field,
                     const char *resource_id, const char *fmt, ...) {
    if (req->answered) return;
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    hf_response_msg resp = HOLDFAST__V1__RESPONSE__INIT;
    Holdfast__V1__ErrorDetail detail = HOLDFAST__V1__ERROR_DETAIL__INIT;
    resp.code = code;
    resp.message = message;
    if (field || resource_id) {
        detail.field = (char *)(field ? field : "");
        detail.resource_id = (char *)(resource_id ? resource_id : "");
        resp.error = &detail;
    }
    hf_request_reply(req, &resp);
}
