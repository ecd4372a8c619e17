/* conn.h - one client connection's bytes: it reads whole frames and hands
 * them to a sink, queues the frames it is given to send, and pauses reading
 * while the client does not read its answers. It knows nothing of requests.
 *
 * Its limits (read from the current config when they apply):
 * - the answers queued on all connections together are counted; past
 *   limits.max_queued_bytes the connection with the most unread answers is
 *   closed (a slow reader);
 * - a connection whose unread answers stay above 8 MiB for
 *   limits.slow_reader_timeout_ms, or that does not read its final error in
 *   that time, is closed (a slow reader);
 * - a frame must be complete limits.frame_timeout_ms after its first byte;
 * - with limits.idle_timeout_ms, a connection with nothing to do (no partial
 *   frame, nothing queued, nothing pending in the sink) is closed. */
#ifndef HF_CONN_H
#define HF_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "daemon.h"
#include "frame.h"

struct hf_conn;

/* Where whole frames go. */
struct hf_conn_sink {
    /* One frame's payload, borrowed for the call. */
    void (*frame)(void *ctx, const uint8_t *payload, size_t len);
    /* The connection has closed; nothing is called after this. */
    void (*closed)(void *ctx);
    /* Work the sink still has for this connection (requests in flight); the
     * idle timeout waits while it is not 0. NULL: never any. */
    unsigned (*pending)(void *ctx);
};

/* A connection on the loop, not yet accepted into; on_closed(owner, conn)
 * runs once its handle has closed, just before it is freed. */
struct hf_conn *hf_conn_create(struct hf_daemon *d,
                               void (*on_closed)(void *owner, struct hf_conn *conn),
                               void *owner);
uv_stream_t *hf_conn_stream(struct hf_conn *conn);
/* Frames read from now on go to the sink. */
void hf_conn_set_sink(struct hf_conn *conn, const struct hf_conn_sink *sink, void *ctx);
void hf_conn_start(struct hf_conn *conn);

/* Queue a frame (ownership passes). */
void hf_conn_send(struct hf_conn *conn, uint8_t *frame, size_t len);
/* Answer with an error not tied to a request (id 0), then close. */
void hf_conn_fatal(struct hf_conn *conn, hf_code code, const char *message);
void hf_conn_stop_reading(struct hf_conn *conn);
/* The sink has nothing pending any more: the idle time starts (a request
 * whose backend call outlived its answer kept the connection busy). */
void hf_conn_requests_settled(struct hf_conn *conn);
void hf_conn_close(struct hf_conn *conn);

/* The peer's credentials (SO_PEERCRED), recorded at accept; the pid is for
 * log lines only. */
void hf_conn_set_peer(struct hf_conn *conn, uint32_t uid, uint32_t gid, int32_t pid);
void hf_conn_peer(const struct hf_conn *conn, uint32_t *uid, uint32_t *gid);

/* Answer bytes this connection has queued that the socket has not taken. */
size_t hf_conn_queued(const struct hf_conn *conn);
/* The same over every connection of the process (holdfast_client_queued_bytes):
 * bytes are added when queued and taken off once the socket took them (at
 * once, or in the write's callback, which also runs for writes cancelled by
 * a close). */
size_t hf_conn_queued_total(void);

#endif
