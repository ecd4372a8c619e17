/* conn.c - a client connection's buffers and lifetime. The read buffer holds
 * at most one frame plus its header; whole frames go to the sink; responses
 * go out through libuv's write queue, and reading pauses while that queue is
 * too long. */
#include "conn.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "metrics.h"

#define READ_CHUNK 16384
#define WRITE_QUEUE_PAUSE (8u << 20)
#define WRITE_QUEUE_RESUME (1u << 20)

struct hf_conn {
    uv_pipe_t pipe; /* first: the handle's address is the conn's */
    struct hf_daemon *d;
    void (*on_closed)(void *owner, struct hf_conn *conn);
    void *owner;
    const struct hf_conn_sink *sink;
    void *sink_ctx;
    uint8_t *buf;
    size_t len, cap;
    unsigned pending_writes;
    uint32_t peer_uid, peer_gid;
    bool reading;
    bool paused_for_writes;
    bool close_after_write;
    bool closing;
};

struct write_req {
    uv_write_t req;
    struct hf_conn *conn;
    uint8_t *frame;
};

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void process_frames(struct hf_conn *conn);

struct hf_conn *hf_conn_create(struct hf_daemon *d,
                               void (*on_closed)(void *owner, struct hf_conn *conn),
                               void *owner) {
    struct hf_conn *conn = calloc(1, sizeof *conn);
    if (!conn) return NULL;
    conn->d = d;
    conn->on_closed = on_closed;
    conn->owner = owner;
    uv_pipe_init(d->loop, &conn->pipe, 0);
    conn->pipe.data = conn;
    return conn;
}

uv_stream_t *hf_conn_stream(struct hf_conn *conn) { return (uv_stream_t *)&conn->pipe; }

void hf_conn_set_sink(struct hf_conn *conn, const struct hf_conn_sink *sink, void *ctx) {
    conn->sink = sink;
    conn->sink_ctx = ctx;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *out) {
    (void)suggested;
    struct hf_conn *conn = h->data;
    size_t limit = conn->d->cfg->max_frame_bytes + HF_FRAME_HEADER;
    if (conn->cap - conn->len < READ_CHUNK / 4 && conn->cap < limit) {
        size_t cap = conn->cap ? conn->cap * 2 : READ_CHUNK;
        if (cap > limit) cap = limit;
        uint8_t *grown = realloc(conn->buf, cap);
        if (grown) {
            conn->buf = grown;
            conn->cap = cap;
        }
    }
    *out = uv_buf_init((char *)conn->buf + conn->len, (unsigned)(conn->cap - conn->len));
}

void hf_conn_start(struct hf_conn *conn) {
    /* After a fatal answer nothing more is read: the connection only waits
     * for its queued writes, then closes. */
    if (conn->closing || conn->reading || conn->close_after_write) return;
    if (uv_read_start((uv_stream_t *)&conn->pipe, on_alloc, on_read) == 0) conn->reading = true;
    /* Frames that arrived while reading was paused. */
    if (conn->len > 0) process_frames(conn);
}

void hf_conn_stop_reading(struct hf_conn *conn) {
    if (!conn->reading) return;
    uv_read_stop((uv_stream_t *)&conn->pipe);
    conn->reading = false;
}

static void on_closed(uv_handle_t *h) {
    struct hf_conn *conn = h->data;
    if (conn->sink) conn->sink->closed(conn->sink_ctx);
    if (conn->on_closed) conn->on_closed(conn->owner, conn);
    free(conn->buf);
    free(conn);
}

void hf_conn_close(struct hf_conn *conn) {
    if (conn->closing) return;
    conn->closing = true;
    conn->reading = false;
    uv_close((uv_handle_t *)&conn->pipe, on_closed);
}

static void on_write(uv_write_t *w, int status) {
    struct write_req *wr = (struct write_req *)w;
    struct hf_conn *conn = wr->conn;
    free(wr->frame);
    free(wr);
    conn->pending_writes--;
    if (conn->closing) return;
    if (status < 0) {
        log_debug("client connection: write failed: %s", uv_strerror(status));
        hf_conn_close(conn);
        return;
    }
    if (conn->close_after_write && conn->pending_writes == 0) {
        hf_conn_close(conn);
        return;
    }
    if (conn->paused_for_writes &&
        uv_stream_get_write_queue_size((uv_stream_t *)&conn->pipe) < WRITE_QUEUE_RESUME) {
        conn->paused_for_writes = false;
        if (!conn->d->draining) hf_conn_start(conn);
    }
}

void hf_conn_send(struct hf_conn *conn, uint8_t *frame, size_t len) {
    if (conn->closing) {
        free(frame);
        return;
    }
    struct write_req *wr = malloc(sizeof *wr);
    if (!wr) {
        free(frame);
        hf_conn_close(conn);
        return;
    }
    wr->conn = conn;
    wr->frame = frame;
    uv_buf_t b = uv_buf_init((char *)frame, (unsigned)len);
    if (uv_write(&wr->req, (uv_stream_t *)&conn->pipe, &b, 1, on_write) != 0) {
        free(frame);
        free(wr);
        hf_conn_close(conn);
        return;
    }
    conn->pending_writes++;
    if (uv_stream_get_write_queue_size((uv_stream_t *)&conn->pipe) > WRITE_QUEUE_PAUSE &&
        conn->reading) {
        /* The client does not read its answers: stop taking new requests. */
        hf_conn_stop_reading(conn);
        conn->paused_for_writes = true;
    }
}

void hf_conn_fatal(struct hf_conn *conn, hf_code code, const char *message) {
    if (conn->closing || conn->close_after_write) return;
    hf_conn_stop_reading(conn);
    conn->close_after_write = true;
    hf_response_msg resp = HOLDFAST__V1__RESPONSE__INIT;
    resp.code = code;
    resp.message = (char *)message;
    size_t len;
    uint8_t *frame = hf_frame_pack_response(&resp, &len);
    if (frame) hf_conn_send(conn, frame, len);
    if (conn->pending_writes == 0) hf_conn_close(conn);
}

void hf_conn_set_peer(struct hf_conn *conn, uint32_t uid, uint32_t gid) {
    conn->peer_uid = uid;
    conn->peer_gid = gid;
}

void hf_conn_peer(const struct hf_conn *conn, uint32_t *uid, uint32_t *gid) {
    *uid = conn->peer_uid;
    *gid = conn->peer_gid;
}

/* Take every whole frame out of the buffer. */
static void process_frames(struct hf_conn *conn) {
    size_t off = 0;
    struct hf_config *cfg = conn->d->cfg;
    while (!conn->closing && !conn->close_after_write) {
        size_t payload;
        enum hf_frame_status st =
            hf_frame_peek(conn->buf + off, conn->len - off, cfg->max_frame_bytes, &payload);
        if (st == HF_FRAME_NEED_MORE) break;
        if (st == HF_FRAME_TOO_LARGE) {
            hf_metrics_inc(HF_C_FRAMES_REJECTED);
            log_warn("client connection: frame of %zu bytes exceeds max_frame_bytes %u; closing",
                     payload, cfg->max_frame_bytes);
            hf_conn_fatal(conn, HF_CODE(RESOURCE_EXHAUSTED),
                          "frame exceeds max_frame_bytes");
            return;
        }
        const uint8_t *frame = conn->buf + off + HF_FRAME_HEADER;
        off += HF_FRAME_HEADER + payload;
        if (conn->sink) conn->sink->frame(conn->sink_ctx, frame, payload);
        if (conn->paused_for_writes) break;
    }
    if (off > 0 && !conn->closing) {
        memmove(conn->buf, conn->buf + off, conn->len - off);
        conn->len -= off;
    }
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    (void)buf;
    struct hf_conn *conn = s->data;
    if (nread < 0) {
        if (nread != UV_EOF) log_debug("client connection: read: %s", uv_strerror((int)nread));
        if (conn->len > 0) log_debug("client connection closed mid-frame (%zu bytes)", conn->len);
        hf_conn_close(conn);
        return;
    }
    conn->len += (size_t)nread;
    process_frames(conn);
}
