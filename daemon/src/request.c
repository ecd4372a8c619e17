/* request.c - request lifecycle: deadline, answer, log line, metrics. */
#include "request.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "conn.h"
#include "log.h"
#include "metrics.h"
#include "ops.h"

static void on_deadline(uv_timer_t *t) {
    struct hf_request *req = t->data;
    hf_request_fail(req, HOLDFAST__V1__CODE__CODE_DEADLINE_EXCEEDED, NULL, NULL,
                    "deadline of %u ms exceeded", req->msg->timeout_ms);
}

static void generate_correlation_id(char out[HF_NAME_MAX + 1]) {
    unsigned char raw[8] = {0};
    if (getrandom(raw, sizeof raw, GRND_NONBLOCK) != (ssize_t)sizeof raw)
        memset(raw, 0, sizeof raw);
    for (size_t i = 0; i < sizeof raw; i++) sprintf(out + 2 * i, "%02x", raw[i]);
}

void hf_request_dispatch(struct hf_daemon *d, struct hf_conn *conn, hf_request_msg *msg) {
    struct hf_request *req = calloc(1, sizeof *req);
    if (!req) {
        hf_request_msg_free(msg);
        hf_conn_fatal(conn, HOLDFAST__V1__CODE__CODE_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    req->d = d;
    req->msg = msg;
    req->cfg = hf_config_ref(d->cfg);
    req->op = hf_op_of(msg->method_case);
    req->id = msg->id;
    req->started_ns = uv_hrtime();
    req->refs = 1; /* the answer */
    strcpy(req->token_fp, "-");
    d->in_flight++;
    hf_metrics_gauge_set(HF_G_IN_FLIGHT, d->in_flight);
    hf_conn_request_add(conn, req);
    hf_conn_peer(conn, &req->peer_uid, &req->peer_gid);

    uint32_t timeout = msg->timeout_ms ? msg->timeout_ms : req->cfg->default_timeout_ms;
    if (timeout > req->cfg->max_timeout_ms) timeout = req->cfg->max_timeout_ms;
    msg->timeout_ms = timeout;
    req->deadline_ms = uv_now(d->loop) + timeout;
    uv_timer_init(d->loop, &req->deadline);
    req->deadline.data = req;
    uv_timer_start(&req->deadline, on_deadline, timeout, 0);

    const char *cid = msg->correlation_id;
    bool cid_ok = cid && *cid && hf_valid_ref_id(cid, strlen(cid));
    if (cid_ok)
        snprintf(req->correlation_id, sizeof req->correlation_id, "%s", cid);
    else
        generate_correlation_id(req->correlation_id);
    if (cid && *cid && !cid_ok) {
        hf_request_fail(req, HOLDFAST__V1__CODE__CODE_INVALID_ARGUMENT, "correlation_id", NULL,
                        "correlation_id must be 1-128 bytes of [A-Za-z0-9._:-]");
        return;
    }
    if (d->draining) {
        hf_request_fail(req, HOLDFAST__V1__CODE__CODE_UNAVAILABLE, NULL, NULL,
                        "the daemon is shutting down");
        return;
    }
    hf_ops_dispatch(req);
}

uint32_t hf_request_remaining_ms(const struct hf_request *req) {
    uint64_t now = uv_now(req->d->loop);
    return now + 1 >= req->deadline_ms ? 1 : (uint32_t)(req->deadline_ms - now);
}

uint32_t hf_request_backend_timeout(const struct hf_request *req, uint32_t limit_ms) {
    uint32_t left = hf_request_remaining_ms(req);
    return left < limit_ms ? left : limit_ms;
}

static void on_request_closed(uv_handle_t *h) {
    struct hf_request *req = h->data;
    struct hf_daemon *d = req->d;
    if (req->op_state_free) req->op_state_free(req->op_state);
    hf_request_msg_free(req->msg);
    hf_config_unref(req->cfg);
    free(req);
    d->in_flight--;
    hf_metrics_gauge_set(HF_G_IN_FLIGHT, d->in_flight);
    if (d->in_flight == 0 && d->draining && d->on_idle) d->on_idle(d);
}

void hf_request_ref(struct hf_request *req) { req->refs++; }

void hf_request_unref(struct hf_request *req) {
    if (--req->refs > 0) return;
    uv_close((uv_handle_t *)&req->deadline, on_request_closed);
}

void hf_request_note_token(struct hf_request *req, const char *token, size_t len) {
    hf_token_fingerprint(token, len, req->token_fp);
}

void hf_request_detach(struct hf_request *req) { req->conn = NULL; }

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

static void log_request(const struct hf_request *req, const hf_response_msg *resp,
                        uint64_t latency_us) {
    enum hf_log_level level =
        resp->code == HOLDFAST__V1__CODE__CODE_INTERNAL ? HF_LOG_ERROR : HF_LOG_INFO;
    if (!hf_log_enabled(level)) return;
    struct line l = {.len = 0};
    put(&l, "req cid=");
    put(&l, req->correlation_id);
    put(&l, " op=");
    put(&l, hf_op_name(req->op));
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
    if (req->db_outcome) {
        put(&l, " db=");
        put(&l, req->db_outcome);
    }
    if (req->after_result) {
        put(&l, " after=");
        put(&l, req->after_result);
    }
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
    if (req->conn) {
        size_t len;
        uint8_t *frame = hf_frame_pack_response(resp, &len);
        struct hf_conn *conn = req->conn;
        hf_conn_request_done(conn, req);
        if (frame) hf_conn_send(conn, frame, len);
        else hf_conn_fatal(conn, HOLDFAST__V1__CODE__CODE_RESOURCE_EXHAUSTED, "out of memory");
    }
    hf_request_unref(req);
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
