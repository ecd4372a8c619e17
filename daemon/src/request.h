/* request.h - one request's life: dispatch, deadline, the single answer,
 * the log line and the metrics. Backend callbacks may outlive the answer
 * (a late Redis reply); the request is freed when both are done. */
#ifndef HF_REQUEST_H
#define HF_REQUEST_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "daemon.h"
#include "frame.h"
#include "token.h"
#include "validate.h"

struct hf_conn;

struct hf_request {
    struct hf_daemon *d;
    struct hf_conn *conn;               /* NULL once the client has gone */
    struct hf_request *conn_prev, *conn_next;
    hf_request_msg *msg;                /* decoded envelope, owned */
    struct hf_config *cfg;              /* the config it started under */
    enum hf_op op;
    uint64_t id;
    char correlation_id[HF_NAME_MAX + 1];
    uint64_t started_ns;
    uint64_t deadline_ms;               /* loop time */
    uv_timer_t deadline;
    int refs;                           /* the answer + each backend call */
    bool answered;
    /* For the log line (borrowed from msg). */
    const char *ns;
    const char *partition;
    char **ids;
    size_t n_ids;
    char token_fp[HF_FINGERPRINT_CHARS + 1];
    uint32_t peer_uid, peer_gid;        /* the client's credentials */
    const char *db_outcome;             /* Confirm: commit / rollback / unknown */
    const char *after_result;           /* Confirm: what happened to the hold */
    void *op_state;                     /* freed by op_state_free, if set */
    void (*op_state_free)(void *);
};

/* Take a decoded envelope (ownership passes) from a connection. */
void hf_request_dispatch(struct hf_daemon *d, struct hf_conn *conn, hf_request_msg *msg);

/* Milliseconds left before the request's deadline (at least 1). */
uint32_t hf_request_remaining_ms(const struct hf_request *req);
/* A backend timeout for this request: min(remaining, limit). */
uint32_t hf_request_backend_timeout(const struct hf_request *req, uint32_t limit_ms);

/* Send the answer (id and correlation id are filled in). Only the first
 * answer counts; later calls are ignored. */
void hf_request_reply(struct hf_request *req, hf_response_msg *resp);
void hf_request_fail(struct hf_request *req, hf_code code, const char *field,
                     const char *resource_id, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* A backend call holds the request alive until its callback has run. */
void hf_request_ref(struct hf_request *req);
void hf_request_unref(struct hf_request *req);

/* Record a token's fingerprint for the log line (never the token). */
void hf_request_note_token(struct hf_request *req, const char *token, size_t len);

/* The connection went away: the request keeps running, its answer is dropped. */
void hf_request_detach(struct hf_request *req);

#endif
