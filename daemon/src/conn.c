/* conn.c - a client connection's buffers, timers and lifetime. Reads land
 * in a buffer shared by all connections and whole frames go to the sink from
 * there; a connection keeps a buffer of its own only for a partial frame.
 * Responses are gathered per loop iteration (the flusher, a prepare handle:
 * it runs before the loop waits, whatever phase queued them) and written
 * straight to the socket; what it does not take waits in libuv's write
 * queue, and reading pauses while that queue is too long.
 *
 * Answer bytes are counted from hf_conn_send until the socket took them (or
 * their write callback ran, also cancelled when the connection closes), per
 * connection and over all of them; the connections with answers queued are
 * on one list, where limits.max_queued_bytes finds the slowest reader to
 * close. One timer per connection serves the one deadline that applies to
 * its state: a stalled queue, a partial frame, or idleness (see
 * wanted_timer). */
#include "conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utlist.h>

#include "busy_poll.h"
#include "log.h"
#include "metrics.h"

#define READ_CHUNK 16384
#define WRITE_QUEUE_PAUSE (8u << 20)
#define WRITE_QUEUE_RESUME (1u << 20)
/* What one write hands libuv at most (a larger frame goes alone). */
#define WRITE_BATCH_BYTES (64u << 10)
#define WRITE_BATCH_FRAMES 64

/* The deadline the connection's timer runs for. */
enum conn_timer {
    TIMER_NONE,
    TIMER_STALL, /* queue above its cap, or a final error, not read */
    TIMER_FRAME, /* a frame's first bytes arrived, not the rest */
    TIMER_IDLE,  /* nothing read, queued or pending */
};

struct hf_conn {
    uv_pipe_t pipe; /* first: the handle's address is the conn's */
    uv_timer_t timer;
    uv_prepare_t flusher; /* writes the answers of a loop iteration at once */
    int open_handles; /* freed when the pipe, the timer and the flusher have closed */
    struct hf_daemon *d;
    void (*on_closed)(void *owner, struct hf_conn *conn);
    void *owner;
    const struct hf_conn_sink *sink;
    void *sink_ctx;
    uint8_t *buf;
    size_t len, cap;
    /* Answers not yet handed to libuv, oldest first: libuv gets the next
     * batch only once it has written everything it had, so a close frees
     * nearly all of a slow reader's answers at once (what libuv holds is
     * freed in its close phase). */
    struct out_frame *out_head, *out_tail;
    size_t out_bytes;              /* in the outbox */
    size_t queued;                 /* bytes in the outbox and in those batches */
    struct hf_conn *q_prev, *q_next; /* on queues.head while queued > 0 (utlist) */
    uint32_t peer_uid, peer_gid;
    int32_t peer_pid;
    enum conn_timer timer_kind;
    uint32_t timer_ms;             /* what it was started with, for the log */
    bool reading;
    bool over_cap;                 /* queued passed WRITE_QUEUE_PAUSE, not yet below RESUME */
    bool paused_for_writes;        /* ... and reading stopped for it */
    bool close_after_write;
    bool closing;
};

struct out_frame {
    struct out_frame *next;
    uint8_t *data;
    size_t len;
};

/* One batch of frames in one uv_write. */
struct write_req {
    uv_write_t req;
    struct hf_conn *conn;
    size_t bytes;
    unsigned n;
    uint8_t *frames[];
};

/* Every connection's queued answers (one loop, one thread). */
static struct {
    struct hf_conn *head; /* the connections with queued > 0 */
    size_t total;         /* all queued bytes, until their write callbacks */
    size_t closing;       /* those of connections already closing */
} queues;

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void process_frames(struct hf_conn *conn);
static void on_timer(uv_timer_t *t);

static void queue_add(struct hf_conn *conn, size_t len) {
    if (conn->queued == 0) DL_PREPEND2(queues.head, conn, q_prev, q_next);
    conn->queued += len;
    queues.total += len;
    hf_metrics_gauge_set(HF_G_QUEUED_BYTES, (int64_t)queues.total);
}

static void queue_done(struct hf_conn *conn, size_t len) {
    conn->queued -= len;
    queues.total -= len;
    if (conn->closing) queues.closing -= len;
    if (conn->queued == 0) DL_DELETE2(queues.head, conn, q_prev, q_next);
    hf_metrics_gauge_set(HF_G_QUEUED_BYTES, (int64_t)queues.total);
}

size_t hf_conn_queued(const struct hf_conn *conn) { return conn->queued; }
size_t hf_conn_queued_total(void) { return queues.total; }

/* The one deadline that applies now. Whole frames are taken out of the
 * buffer whenever the connection reads, so bytes left there while it reads
 * are a partial frame. */
static enum conn_timer wanted_timer(const struct hf_conn *conn) {
    if (conn->closing) return TIMER_NONE;
    if (conn->over_cap || (conn->close_after_write && conn->queued > 0)) return TIMER_STALL;
    if (!conn->reading) return TIMER_NONE;
    if (conn->len > 0) return TIMER_FRAME;
    if (conn->queued > 0) return TIMER_NONE;
    if (conn->sink && conn->sink->pending && conn->sink->pending(conn->sink_ctx) > 0)
        return TIMER_NONE;
    return TIMER_IDLE;
}

/* (Re)start the timer when the deadline that applies changes, or when
 * `restart` says the same one starts over (a new frame, new activity). The
 * limits come from the current config, so a reload applies from the next
 * change on. */
static void update_timer(struct hf_conn *conn, bool restart) {
    enum conn_timer kind = wanted_timer(conn);
    if (kind == conn->timer_kind && !restart) return;
    uv_timer_stop(&conn->timer);
    conn->timer_kind = kind;
    const struct hf_config *cfg = conn->d->cfg;
    uint32_t ms = 0;
    switch (kind) {
    case TIMER_NONE: break;
    case TIMER_STALL: ms = cfg->slow_reader_timeout_ms; break;
    case TIMER_FRAME: ms = cfg->frame_timeout_ms; break;
    case TIMER_IDLE: ms = cfg->idle_timeout_ms; break; /* 0: off */
    }
    conn->timer_ms = ms;
    if (ms) uv_timer_start(&conn->timer, on_timer, ms, 0);
}

static void close_slow_reader(struct hf_conn *conn, enum hf_counter reason, const char *why) {
    hf_metrics_inc(reason);
    log_warn("closing slow reader pid=%d uid=%u: %zu bytes of answers unread; %s",
             (int)conn->peer_pid, conn->peer_uid, conn->queued, why);
    /* No error frame: it would wait behind what the client does not read. */
    hf_conn_close(conn);
}

/* Past limits.max_queued_bytes (not counting connections already closing),
 * close the connection with the most unread answers until under it again:
 * the slowest reader goes, not whoever happened to queue the last answer. */
static void enforce_budget(const struct hf_config *cfg) {
    while (queues.total - queues.closing > cfg->max_queued_bytes) {
        struct hf_conn *victim = NULL;
        for (struct hf_conn *c = queues.head; c; c = c->q_next)
            if (!c->closing && (!victim || c->queued > victim->queued)) victim = c;
        if (!victim) break;
        char why[160];
        snprintf(why, sizeof why,
                 "answers queued for all clients passed limits.max_queued_bytes (%u)",
                 cfg->max_queued_bytes);
        close_slow_reader(victim, HF_C_SLOW_READERS_BUDGET, why);
    }
}

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
    uv_timer_init(d->loop, &conn->timer);
    conn->timer.data = conn;
    uv_prepare_init(d->loop, &conn->flusher);
    conn->flusher.data = conn;
    conn->open_handles = 3;
    return conn;
}

uv_stream_t *hf_conn_stream(struct hf_conn *conn) { return (uv_stream_t *)&conn->pipe; }

void hf_conn_set_sink(struct hf_conn *conn, const struct hf_conn_sink *sink, void *ctx) {
    conn->sink = sink;
    conn->sink_ctx = ctx;
}

/* Reads land here while the connection keeps no partial frame (nearly
 * always): whole frames go to the sink straight from it, and only what is
 * left of a frame is copied into the connection's own buffer, which is freed
 * once empty. So an idle connection holds no read buffer at all. */
static uint8_t shared_read_buf[4 * READ_CHUNK];

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *out) {
    (void)suggested;
    struct hf_conn *conn = h->data;
    if (conn->len == 0) {
        *out = uv_buf_init((char *)shared_read_buf, sizeof shared_read_buf);
        return;
    }
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
    /* Frames that arrived while reading was paused; a partial frame's
     * deadline starts over, since nothing was read meanwhile. */
    if (conn->len > 0) process_frames(conn);
    else update_timer(conn, false);
}

void hf_conn_stop_reading(struct hf_conn *conn) {
    if (!conn->reading) return;
    uv_read_stop((uv_stream_t *)&conn->pipe);
    conn->reading = false;
    update_timer(conn, false);
}

void hf_conn_requests_settled(struct hf_conn *conn) {
    if (!conn->closing) update_timer(conn, false);
}

/* Runs for the pipe, the timer and the flusher; the last one frees. The pipe's
 * cancelled writes have called back before its close callback. */
static void on_closed(uv_handle_t *h) {
    struct hf_conn *conn = h->data;
    if (--conn->open_handles > 0) return;
    if (conn->sink) conn->sink->closed(conn->sink_ctx);
    if (conn->on_closed) conn->on_closed(conn->owner, conn);
    free(conn->buf);
    free(conn);
}

static void flush(struct hf_conn *conn);

void hf_conn_close(struct hf_conn *conn) {
    if (conn->closing) return;
    /* Answers still waiting for the flusher go now, as far as the socket
     * takes them at once (a shutdown closes right after the last answer). */
    if (conn->out_head) {
        flush(conn);
        if (conn->closing) return; /* flush closed it */
    }
    /* What libuv has not been handed is freed now; the batches it holds are
     * cancelled in its close phase and counted off in their callbacks. */
    size_t dropped = 0;
    while (conn->out_head) {
        struct out_frame *f = conn->out_head;
        conn->out_head = f->next;
        dropped += f->len;
        free(f->data);
        free(f);
    }
    conn->out_tail = NULL;
    conn->out_bytes = 0;
    if (dropped) queue_done(conn, dropped);
    conn->closing = true;
    conn->reading = false;
    queues.closing += conn->queued;
    conn->timer_kind = TIMER_NONE;
    uv_close((uv_handle_t *)&conn->timer, on_closed);
    uv_close((uv_handle_t *)&conn->flusher, on_closed);
    uv_close((uv_handle_t *)&conn->pipe, on_closed);
}

static void on_write(uv_write_t *w, int status);

/* Write the outbox, a batch at a time, while nothing is left unwritten: a
 * client that reads gets its answers at once, one that does not leaves them
 * here. A batch goes straight to the socket when it takes it whole, as it
 * nearly always does (no write request, no callback a loop turn later, no
 * epoll_ctl for libuv's write interest); what the socket does not take goes
 * through libuv's write queue. Only counts what left: its callers at the top
 * of the loop then call settle_queue. */
static void flush(struct hf_conn *conn) {
    uv_stream_t *stream = (uv_stream_t *)&conn->pipe;
    while (conn->out_head && !conn->closing && uv_stream_get_write_queue_size(stream) == 0) {
        uv_buf_t bufs[WRITE_BATCH_FRAMES];
        uint8_t *frames[WRITE_BATCH_FRAMES];
        unsigned n = 0;
        size_t bytes = 0;
        while (conn->out_head && n < WRITE_BATCH_FRAMES &&
               (n == 0 || bytes + conn->out_head->len <= WRITE_BATCH_BYTES)) {
            struct out_frame *f = conn->out_head;
            conn->out_head = f->next;
            if (!conn->out_head) conn->out_tail = NULL;
            conn->out_bytes -= f->len;
            bufs[n] = uv_buf_init((char *)f->data, (unsigned)f->len);
            frames[n++] = f->data;
            bytes += f->len;
            free(f);
        }
        int sent = uv_try_write(stream, bufs, n);
        if (sent >= 0 && (size_t)sent == bytes) {
            for (unsigned i = 0; i < n; i++) free(frames[i]);
            queue_done(conn, bytes);
            continue;
        }
        if (sent >= 0 || sent == UV_EAGAIN) {
            /* The rest, from where the socket stopped taking it. */
            struct write_req *wr = malloc(sizeof *wr + n * sizeof wr->frames[0]);
            if (wr) {
                unsigned first = 0;
                for (size_t skip = sent > 0 ? (size_t)sent : 0; skip > 0; first++) {
                    if (skip < bufs[first].len) {
                        bufs[first].base += skip;
                        bufs[first].len -= skip;
                        break;
                    }
                    skip -= bufs[first].len;
                }
                wr->conn = conn;
                wr->bytes = bytes;
                wr->n = n;
                memcpy(wr->frames, frames, n * sizeof frames[0]);
                if (uv_write(&wr->req, stream, bufs + first, n - first, on_write) == 0) continue;
                free(wr);
            }
        } else {
            log_debug("client connection: write failed: %s", uv_strerror(sent));
        }
        /* Not written, and never will be: the connection goes. */
        for (unsigned i = 0; i < n; i++) free(frames[i]);
        queue_done(conn, bytes);
        hf_conn_close(conn);
        return;
    }
}

/* After answers left: close after a final one, resume reading once a long
 * queue has drained, and run the timer the new state wants. Only from the
 * top of the loop: resuming reads frames. */
static void settle_queue(struct hf_conn *conn) {
    if (conn->closing) return;
    if (conn->close_after_write && conn->queued == 0) {
        hf_conn_close(conn);
        return;
    }
    if (conn->over_cap && conn->queued < WRITE_QUEUE_RESUME) {
        conn->over_cap = false;
        if (conn->paused_for_writes) {
            conn->paused_for_writes = false;
            if (!conn->d->draining) hf_conn_start(conn);
        }
    }
    update_timer(conn, false);
}

/* Before the loop waits again: every answer of this iteration in one write
 * (one writev for up to WRITE_BATCH_FRAMES answers), not one write each. */
static void on_flusher(uv_prepare_t *p) {
    struct hf_conn *conn = p->data;
    uv_prepare_stop(p);
    hf_busy_poll_touch(); /* its next request may come soon */
    flush(conn);
    settle_queue(conn);
}

static void on_write(uv_write_t *w, int status) {
    struct write_req *wr = (struct write_req *)w;
    struct hf_conn *conn = wr->conn;
    size_t bytes = wr->bytes;
    for (unsigned i = 0; i < wr->n; i++) free(wr->frames[i]);
    free(wr);
    queue_done(conn, bytes);
    if (conn->closing) return;
    if (status < 0) {
        log_debug("client connection: write failed: %s", uv_strerror(status));
        hf_conn_close(conn);
        return;
    }
    flush(conn);
    settle_queue(conn);
}

void hf_conn_send(struct hf_conn *conn, uint8_t *frame, size_t len) {
    if (conn->closing) {
        free(frame);
        return;
    }
    struct out_frame *f = malloc(sizeof *f);
    if (!f) {
        free(frame);
        hf_conn_close(conn);
        return;
    }
    f->next = NULL;
    f->data = frame;
    f->len = len;
    if (conn->out_tail) conn->out_tail->next = f;
    else conn->out_head = f;
    conn->out_tail = f;
    conn->out_bytes += len;
    queue_add(conn, len);
    /* A batch's worth waits for no one: the kernel's socket buffer, not
     * ours, holds it while the client reads. */
    if (conn->out_bytes >= WRITE_BATCH_BYTES) flush(conn);
    /* Also after a flush here: what it wrote is settled from the loop. */
    uv_prepare_start(&conn->flusher, on_flusher); /* no-op when started */
    if (conn->closing) return;
    if (conn->queued > WRITE_QUEUE_PAUSE) {
        conn->over_cap = true;
        if (conn->reading) {
            /* The client does not read its answers: stop taking new requests. */
            hf_conn_stop_reading(conn);
            conn->paused_for_writes = true;
        }
    }
    update_timer(conn, false);
    enforce_budget(conn->d->cfg);
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
    if (conn->queued == 0) hf_conn_close(conn);
}

void hf_conn_set_peer(struct hf_conn *conn, uint32_t uid, uint32_t gid, int32_t pid) {
    conn->peer_uid = uid;
    conn->peer_gid = gid;
    conn->peer_pid = pid;
}

void hf_conn_peer(const struct hf_conn *conn, uint32_t *uid, uint32_t *gid) {
    *uid = conn->peer_uid;
    *gid = conn->peer_gid;
}

/* Hands the whole frames at the start of data[0..len) to the sink; returns
 * how many bytes they took. Stops early when the connection is closing, has
 * given its final answer, or paused for its writes. */
static size_t hand_frames(struct hf_conn *conn, const uint8_t *data, size_t len) {
    size_t off = 0;
    struct hf_config *cfg = conn->d->cfg;
    while (!conn->closing && !conn->close_after_write) {
        size_t payload;
        enum hf_frame_status st =
            hf_frame_peek(data + off, len - off, cfg->max_frame_bytes, &payload);
        if (st == HF_FRAME_NEED_MORE) break;
        if (st == HF_FRAME_TOO_LARGE) {
            hf_metrics_inc(HF_C_FRAMES_REJECTED);
            log_warn("client connection: frame of %zu bytes exceeds max_frame_bytes %u; closing",
                     payload, cfg->max_frame_bytes);
            hf_conn_fatal(conn, HF_CODE(RESOURCE_EXHAUSTED),
                          "frame exceeds max_frame_bytes");
            break;
        }
        const uint8_t *frame = data + off + HF_FRAME_HEADER;
        off += HF_FRAME_HEADER + payload;
        if (conn->sink) conn->sink->frame(conn->sink_ctx, frame, payload);
        if (conn->paused_for_writes) break;
    }
    return off;
}

/* The frames kept in the connection's own buffer (a partial frame that got
 * its rest, or frames left while reading was paused). */
static void process_frames(struct hf_conn *conn) {
    size_t off = hand_frames(conn, conn->buf, conn->len);
    if (conn->closing) return;
    if (off > 0) {
        memmove(conn->buf, conn->buf + off, conn->len - off);
        conn->len -= off;
    }
    if (conn->len == 0) {
        free(conn->buf);
        conn->buf = NULL;
        conn->cap = 0;
    }
    /* A frame was taken: what is left is a new frame (its deadline starts
     * now) or nothing (the idle time starts now). */
    update_timer(conn, off > 0);
}

/* A read into the shared buffer: its whole frames straight to the sink,
 * the rest kept. */
static void process_shared(struct hf_conn *conn, size_t len) {
    size_t off = hand_frames(conn, shared_read_buf, len);
    if (conn->closing) return;
    size_t left = len - off;
    if (left > 0 && !conn->close_after_write) {
        size_t cap = left > READ_CHUNK ? left : READ_CHUNK;
        uint8_t *own = malloc(cap);
        if (!own) {
            hf_conn_close(conn);
            return;
        }
        memcpy(own, shared_read_buf + off, left);
        conn->buf = own;
        conn->cap = cap;
        conn->len = left;
    }
    update_timer(conn, off > 0);
}

static void on_timer(uv_timer_t *t) {
    struct hf_conn *conn = t->data;
    enum conn_timer kind = conn->timer_kind;
    conn->timer_kind = TIMER_NONE;
    switch (kind) {
    case TIMER_NONE: break;
    case TIMER_STALL: {
        char why[128];
        snprintf(why, sizeof why, "%s for %u ms (limits.slow_reader_timeout_ms)",
                 conn->close_after_write ? "its final error not read" : "not read from",
                 conn->timer_ms);
        close_slow_reader(conn, HF_C_SLOW_READERS_STALLED, why);
        break;
    }
    case TIMER_FRAME:
        hf_metrics_inc(HF_C_CONN_TIMEOUTS_FRAME);
        log_warn("client connection pid=%d uid=%u: frame not complete %u ms after its first "
                 "byte (%zu bytes of it read); closing (limits.frame_timeout_ms)",
                 (int)conn->peer_pid, conn->peer_uid, conn->timer_ms, conn->len);
        hf_conn_fatal(conn, HF_CODE(RESOURCE_EXHAUSTED),
                      "frame not complete within limits.frame_timeout_ms");
        break;
    case TIMER_IDLE:
        hf_metrics_inc(HF_C_CONN_TIMEOUTS_IDLE);
        log_info("client connection pid=%d uid=%u: idle for %u ms; closing "
                 "(limits.idle_timeout_ms)",
                 (int)conn->peer_pid, conn->peer_uid, conn->timer_ms);
        hf_conn_fatal(conn, HF_CODE(UNAVAILABLE), "idle connection closed (limits.idle_timeout_ms)");
        break;
    }
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
    struct hf_conn *conn = s->data;
    if (nread > 0) hf_busy_poll_touch(); /* backend replies may come soon */
    if (nread < 0) {
        if (nread != UV_EOF) log_debug("client connection: read: %s", uv_strerror((int)nread));
        if (conn->len > 0) log_debug("client connection closed mid-frame (%zu bytes)", conn->len);
        hf_conn_close(conn);
        return;
    }
    if (buf->base == (char *)shared_read_buf) {
        process_shared(conn, (size_t)nread);
        return;
    }
    conn->len += (size_t)nread;
    process_frames(conn);
}
