/* request.h - the request layer: each client's requests in flight and their
 * limit, and one request's life: decode, dispatch through the op table,
 * deadline, the single answer, the log line and the metrics.
 *
 * The op-state rule: an op keeps what it needs in ONE context allocated
 * through the request (hf_request_context). While the op waits for a
 * backend or for its timer, the context holds exactly one reference on the
 * request (hf_request_op_start ... hf_request_op_done); the answer holds
 * another. The request, its context and its timers are freed when both are
 * gone, so a backend reply that arrives after the deadline still finds its
 * context. Timers an op needs belong to the request. */
#ifndef HF_REQUEST_H
#define HF_REQUEST_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "daemon.h"
#include "frame.h"
#include "op.h"
#include "token.h"
#include "validate.h"

struct hf_client;
struct hf_session;

/* How the request layer answers a client; main wires it to the connection. */
struct hf_client_io {
    /* Queue a packed frame (ownership passes). */
    void (*send)(void *io_ctx, uint8_t *frame, size_t len);
    /* Answer with an error not tied to a request, then close. */
    void (*fatal)(void *io_ctx, hf_code code, const char *message);
    /* Its last request was freed (an answered one whose backend call ended
     * after the answer went out, too): its idle time may start. */
    void (*settled)(void *io_ctx);
};

/* Sized for a typical Hold's message (envelope, namespace, partition, a few
 * ids, correlation id); a request can be in flight by the thousand. */
#define HF_REQUEST_ARENA 512

struct hf_request {
    struct hf_daemon *d;
    struct hf_client *client;           /* NULL once the client has gone */
    struct hf_request *client_prev, *client_next;
    hf_request_msg *msg;                /* decoded envelope, owned */
    struct hf_config *cfg;              /* the config it started under */
    const struct hf_op_def *op;
    uint64_t id;
    char correlation_id[HF_NAME_MAX + 1];
    /* The request's W3C traceparent, validated and in its version-00 form;
     * "" when it carried none or an invalid one (ignored, as the spec says). */
    char traceparent[HF_TRACEPARENT_LEN + 1];
    bool traceparent_invalid;           /* carried one, and it was ignored */
    uint64_t started_ns;
    uint64_t deadline_ms;               /* loop time */
    bool answered;
    /* For the log line (borrowed from msg). */
    const char *ns;
    const char *partition;
    char **ids;
    size_t n_ids;
    char token_fp[HF_FINGERPRINT_CHARS + 1];
    uint32_t peer_uid, peer_gid;        /* the client's credentials */
    /* The op context's fields for the log line (hf_request_log_fields). */
    size_t (*log_fields)(const void *ctx, char *out, size_t cap);
    /* Private to request.c. */
    const char *session_token;          /* paused in the client's session (msg-owned) */
    bool session_confirm;
    int refs;                           /* the answer + a busy op context */
    bool op_busy;
    bool op_timer_used;
    int open_handles;
    void *ctx;
    void (*ctx_free)(void *ctx);
    void (*gone_cb)(void *arg);         /* hf_request_on_client_gone */
    void *gone_arg;
    void (*op_timer_cb)(void *arg);
    void *op_timer_arg;
    uv_timer_t deadline;
    uv_timer_t op_timer;
    struct hf_request *free_next;       /* in request.c's cache of free requests */
    /* The decoded message lives here when it fits: no malloc per field
     * (and requests are recycled: none per request either). */
    struct hf_arena arena;
    _Alignas(16) unsigned char arena_buf[HF_REQUEST_ARENA];
};

/* ---- clients (one per connection) ---- */

/* NULL on OOM. The client's requests answer through io. */
struct hf_client *hf_client_create(struct hf_daemon *d, const struct hf_client_io *io,
                                   void *io_ctx, uint32_t uid, uint32_t gid);
/* One whole frame's payload from the client (borrowed): decoded, checked
 * against limits.max_inflight_per_conn, and dispatched. */
void hf_client_frame(struct hf_client *c, const uint8_t *payload, size_t len);
/* The connection went away: requests in flight keep running and their
 * answers are dropped. Frees the client. */
void hf_client_gone(struct hf_client *c);
/* Frees the cache of recycled requests (at exit, after the loop). */
void hf_request_cache_drain(void);
/* Requests of this client still alive: not answered yet, or answered while
 * their backend calls go on. */
unsigned hf_client_in_flight(const struct hf_client *c);
/* Session holds the client's connection keeps alive (docs/sessions.md). */
size_t hf_client_session_holds(const struct hf_client *c);

/* ---- one request, for the ops ---- */

/* Milliseconds left before the request's deadline (at least 1). */
uint32_t hf_request_remaining_ms(const struct hf_request *req);
/* A backend timeout for this request: min(remaining, limit). */
uint32_t hf_request_backend_timeout(const struct hf_request *req, uint32_t limit_ms);

/* Send the answer (id and correlation id are filled in). Only the first
 * answer counts; later calls are ignored. */
void hf_request_reply(struct hf_request *req, hf_response_msg *resp);
/* Answer OK with one result of the Response oneof: HF_REPLY_OK(req, status,
 * STATUS, &sr) sets resp.status and its case. */
#define HF_REPLY_OK(req, field, CASE, value)                                \
    do {                                                                    \
        hf_response_msg resp_ = HOLDFAST__V1__RESPONSE__INIT;               \
        resp_.code = HF_CODE(OK);                                           \
        resp_.result_case = HOLDFAST__V1__RESPONSE__RESULT_##CASE;          \
        resp_.field = (value);                                              \
        hf_request_reply((req), &resp_);                                    \
    } while (0)
/* The repeated field of an answer: n messages of `size` bytes (zeroed) and
 * the array of pointers to them, in one allocation freed with free(). NULL:
 * out of memory, answered RESOURCE_EXHAUSTED with `oom`. */
void *hf_request_items(struct hf_request *req, size_t n, size_t size, void ***ptrs,
                       const char *oom);
void hf_request_fail(struct hf_request *req, hf_code code, const char *field,
                     const char *resource_id, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* The op's context: `size` zeroed bytes, freed (after free_fn, if any) with
 * the request. One per request; NULL on OOM (the request is then answered). */
void *hf_request_context(struct hf_request *req, size_t size, void (*free_fn)(void *ctx));
/* The op starts waiting (a backend call or its timer): its context holds the
 * request. Exactly once per context until hf_request_op_done. */
void hf_request_op_start(struct hf_request *req);
/* The op's last callback has run: nothing of it is pending any more. */
void hf_request_op_done(struct hf_request *req);
/* The request's op timer: cb(arg) runs once after ms unless stopped; only
 * while the op is started. Starting it again re-arms it. */
void hf_request_timer_start(struct hf_request *req, uint64_t ms, void (*cb)(void *arg),
                            void *arg);
void hf_request_timer_stop(struct hf_request *req);

/* The client disconnected: nobody will ever read this request's answer. */
bool hf_request_client_gone(const struct hf_request *req);
/* cb(arg) runs once, at once, if the client disconnects while the request
 * is in its list (a waiting op leaves its line then, not at its timer). */
void hf_request_on_client_gone(struct hf_request *req, void (*cb)(void *arg), void *arg);

/* ---- session holds (session.h, docs/sessions.md) ---- */

/* The client's session, created on first use when `create`; NULL when the
 * client has gone (or out of memory). */
struct hf_session *hf_request_session(struct hf_request *req, bool create);
/* The op acts on the hold of `token` (Release; Confirm with `confirm`):
 * when that hold is one of the client's session holds, its renewal pauses
 * until this request is answered. A Confirm answered OK takes it out of
 * the session; any other answer lets the session renew it again. */
void hf_request_session_pause(struct hf_request *req, const char *token, bool confirm);

/* The op's context adds fields to the request's log line: fn(ctx, ...)
 * writes them (" key=value ...") when the line is written. */
void hf_request_log_fields(struct hf_request *req,
                           size_t (*fn)(const void *ctx, char *out, size_t cap));

/* Record a token's fingerprint for the log line (never the token). */
void hf_request_note_token(struct hf_request *req, const char *token, size_t len);

#endif
