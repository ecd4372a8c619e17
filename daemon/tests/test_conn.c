/* Unit tests for conn.c: a connection over one end of a socketpair, the test
 * playing the client on the other end. The sink and the owner record what
 * they are told; every test ends (in teardown) with the connection closed
 * exactly once, its handle freed and the loop closed. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <uv.h>

#include "config.h"
#include "conn.h"
#include "daemon.h"
#include "frame.h"
#include "log.h"
#include "metrics.h"

#define MAX_FRAME 1024 /* limits.max_frame_bytes (its minimum) */
#define MAX_FRAMES 8

static const char config_text[] =
    "return { namespaces = { seat = {} }, limits = { max_frame_bytes = 1024 } }";

struct fx {
    struct hf_daemon d;
    uv_loop_t loop;
    struct hf_conn *conn; /* NULL once the owner was told it closed */
    int fds[2];           /* [0]: the connection's; [1]: the client's (-1 once closed) */
    /* In order: 'f' a frame to the sink, 'c' the sink's closed, 'o' the owner's on_closed. */
    char events[16];
    size_t n_events;
    size_t answer_bytes; /* the sink answers each frame with this many bytes */
    unsigned pending;    /* what the sink says it still has in flight */
    uint8_t *frames[MAX_FRAMES];
    size_t frame_len[MAX_FRAMES];
    size_t n_frames;
    /* What the client has read, and whether it has seen EOF. */
    uint8_t *peer;
    size_t peer_len, peer_cap;
    bool peer_eof;
    bool peer_reset; /* the end came as ECONNRESET: the connection left bytes unread */
};

static void event(struct fx *fx, char e) {
    if (fx->n_events + 1 < sizeof fx->events) fx->events[fx->n_events++] = e;
}

/* ---- the sink and the owner ---- */

static void sink_frame(void *ctx, const uint8_t *payload, size_t len) {
    struct fx *fx = ctx;
    event(fx, 'f');
    if (fx->n_frames == MAX_FRAMES) fail_msg("too many frames");
    uint8_t *copy = malloc(len + 1);
    assert_non_null(copy);
    memcpy(copy, payload, len);
    fx->frames[fx->n_frames] = copy;
    fx->frame_len[fx->n_frames++] = len;
    if (fx->answer_bytes) {
        uint8_t *answer = calloc(1, fx->answer_bytes);
        assert_non_null(answer);
        hf_conn_send(fx->conn, answer, fx->answer_bytes);
    }
}

static void sink_closed(void *ctx) { event(ctx, 'c'); }

static unsigned sink_pending(void *ctx) { return ((struct fx *)ctx)->pending; }

static const struct hf_conn_sink recording_sink = {sink_frame, sink_closed, sink_pending};

static void owner_closed(void *owner, struct hf_conn *conn) {
    struct fx *fx = owner;
    assert_ptr_equal(conn, fx->conn);
    fx->conn = NULL;
    event(fx, 'o');
}

/* ---- the client's end ---- */

/* Frame `len` bytes of payload behind their header; returns the bytes written. */
static size_t put_frame(uint8_t *out, const void *payload, uint32_t len) {
    out[0] = (uint8_t)(len >> 24);
    out[1] = (uint8_t)(len >> 16);
    out[2] = (uint8_t)(len >> 8);
    out[3] = (uint8_t)len;
    if (len) memcpy(out + HF_FRAME_HEADER, payload, len);
    return HF_FRAME_HEADER + len;
}

static void fill_pattern(uint8_t *p, size_t len, unsigned seed) {
    for (size_t i = 0; i < len; i++) p[i] = (uint8_t)(seed + i * 7);
}

/* Whatever the connection has written so far (non-blocking). */
static void peer_read(struct fx *fx) {
    while (fx->fds[1] >= 0 && !fx->peer_eof) {
        if (fx->peer_cap - fx->peer_len < 65536) {
            fx->peer_cap = fx->peer_cap ? fx->peer_cap * 2 : 65536;
            fx->peer = realloc(fx->peer, fx->peer_cap);
            assert_non_null(fx->peer);
        }
        ssize_t n = read(fx->fds[1], fx->peer + fx->peer_len, fx->peer_cap - fx->peer_len);
        if (n > 0) {
            fx->peer_len += (size_t)n;
        } else if (n == 0) {
            fx->peer_eof = true;
        } else if (errno == ECONNRESET) {
            fx->peer_eof = fx->peer_reset = true;
        } else {
            if (errno != EAGAIN) fail_msg("peer read: %s", strerror(errno));
            return;
        }
    }
}

/* One loop iteration that does not block, then the client reads. */
static void pump(struct fx *fx) {
    uv_run(&fx->loop, UV_RUN_NOWAIT);
    peer_read(fx);
}

/* Bytes the client sent that the connection has not read yet. */
static int unread(struct fx *fx) {
    int n = -1;
    assert_int_equal(ioctl(fx->fds[0], FIONREAD, &n), 0);
    return n;
}

/* Pump, a bounded number of times, until cond holds. */
#define RUN_UNTIL(fx, cond)                                   \
    do {                                                      \
        for (int iter_ = 0; iter_ < 10000 && !(cond); iter_++) \
            pump(fx);                                         \
        assert_true(cond);                                    \
    } while (0)

static uint64_t now_ms(void) { return uv_hrtime() / 1000000u; }

/* Let the loop run, timers included, for up to `ms` of wall time until cond
 * holds; the client reads meanwhile (WAIT_UNTIL) or does not (..._UNREAD). */
#define WAIT_UNTIL_(fx, ms, cond, step)                                           \
    do {                                                                       \
        for (uint64_t end_ = now_ms() + (ms); !(cond) && now_ms() < end_;) {   \
            step;                                                              \
            usleep(1000);                                                      \
        }                                                                      \
        assert_true(cond);                                                     \
    } while (0)
#define WAIT_UNTIL(fx, ms, cond) WAIT_UNTIL_(fx, ms, cond, pump(fx))
#define WAIT_UNTIL_UNREAD(fx, ms, cond) \
    WAIT_UNTIL_(fx, ms, cond, uv_run(&(fx)->loop, UV_RUN_NOWAIT))

/* The loop runs for `ms` of wall time, the client reading (or not). */
static void run_for(struct fx *fx, unsigned ms, bool read) {
    for (uint64_t end = now_ms() + ms; now_ms() < end;) {
        uv_run(&fx->loop, UV_RUN_NOWAIT);
        if (read) peer_read(fx);
        usleep(1000);
    }
}

/* The connection reads its limits from the daemon's current config at use
 * time: swap in one with these limits (a reload). */
static void use_limits(struct fx *fx, const char *limits) {
    char text[512], err[512];
    snprintf(text, sizeof text,
             "return { namespaces = { seat = {} }, limits = { max_frame_bytes = 1024, %s } }",
             limits);
    struct hf_config *cfg = hf_config_load_string("test.lua", text, err, sizeof err);
    if (!cfg) fail_msg("config: %s", err);
    hf_config_unref(fx->d.cfg);
    fx->d.cfg = cfg;
}

/* The client writes all of p (small amounts fit the socket buffer). */
static void peer_write(struct fx *fx, const void *p, size_t len) {
    ssize_t n = send(fx->fds[1], p, len, MSG_NOSIGNAL);
    assert_int_equal(n, (ssize_t)len);
}

/* Write, then let the connection read everything written. */
static void peer_write_all_read(struct fx *fx, const void *p, size_t len) {
    peer_write(fx, p, len);
    RUN_UNTIL(fx, unread(fx) == 0);
}

/* The next frame the client has read, decoded as a Response. */
static hf_response_msg *peer_response(struct fx *fx, size_t *off) {
    size_t payload = 0;
    assert_int_equal(hf_frame_peek(fx->peer + *off, fx->peer_len - *off, MAX_FRAME, &payload),
                     HF_FRAME_READY);
    hf_response_msg *r = hf_frame_unpack_response(fx->peer + *off + HF_FRAME_HEADER, payload);
    assert_non_null(r);
    *off += HF_FRAME_HEADER + payload;
    return r;
}

static void assert_frame(struct fx *fx, size_t i, const void *payload, size_t len) {
    assert_true(i < fx->n_frames);
    assert_int_equal(fx->frame_len[i], len);
    if (len) assert_memory_equal(fx->frames[i], payload, len);
}

static unsigned long long metric(const char *series) {
    char *text = hf_metrics_render();
    assert_non_null(text);
    size_t n = strlen(series);
    unsigned long long v = 0;
    for (const char *line = text; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, series, n) == 0 && line[n] == ' ') {
            v = strtoull(line + n + 1, NULL, 10);
            break;
        }
    }
    free(text);
    return v;
}

/* ---- fixture ---- */

static int setup(void **state) {
    if (hf_conn_queued_total() != 0) {
        fprintf(stderr, "setup: %zu bytes still counted as queued\n", hf_conn_queued_total());
        return -1;
    }
    struct fx *fx = calloc(1, sizeof *fx);
    if (!fx) return -1;
    *state = fx;
    fx->fds[0] = fx->fds[1] = -1;
    char err[512];
    fx->d.cfg = hf_config_load_string("test.lua", config_text, err, sizeof err);
    if (!fx->d.cfg) {
        fprintf(stderr, "config: %s\n", err);
        return -1;
    }
    uv_loop_init(&fx->loop);
    fx->d.loop = &fx->loop;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fx->fds) != 0) return -1;
    if (fcntl(fx->fds[1], F_SETFL, O_NONBLOCK) != 0) return -1;
    fx->conn = hf_conn_create(&fx->d, owner_closed, fx);
    if (!fx->conn) return -1;
    if (uv_pipe_open((uv_pipe_t *)hf_conn_stream(fx->conn), fx->fds[0]) != 0) return -1;
    hf_conn_set_sink(fx->conn, &recording_sink, fx);
    hf_conn_start(fx->conn);
    return 0;
}

static int teardown(void **state) {
    struct fx *fx = *state;
    int rc = 0;
    if (fx->conn) hf_conn_close(fx->conn);
    uv_run(&fx->loop, UV_RUN_DEFAULT);
    /* Whatever happened, the sink then the owner were told once each, last. */
    size_t n = fx->n_events;
    if (fx->conn || n < 2 || fx->events[n - 2] != 'c' || fx->events[n - 1] != 'o' ||
        memchr(fx->events, 'c', n - 2) || memchr(fx->events, 'o', n - 2)) {
        fprintf(stderr, "teardown: events \"%.*s\", want one 'c' then one 'o' last\n", (int)n,
                fx->events);
        rc = -1;
    }
    /* Every queued byte was counted off, cancelled writes included. */
    if (hf_conn_queued_total() != 0) {
        fprintf(stderr, "teardown: %zu bytes still counted as queued\n",
                hf_conn_queued_total());
        rc = -1;
    }
    int closed = uv_loop_close(&fx->loop);
    if (closed != 0) {
        fprintf(stderr, "teardown: uv_loop_close: %s\n", uv_strerror(closed));
        rc = -1;
    }
    if (fx->fds[1] >= 0) close(fx->fds[1]);
    for (size_t i = 0; i < fx->n_frames; i++) free(fx->frames[i]);
    free(fx->peer);
    hf_config_unref(fx->d.cfg);
    free(fx);
    return rc;
}

static int group_setup(void **state) {
    (void)state;
    signal(SIGPIPE, SIG_IGN); /* as holdfastd: a write to a closed peer is EPIPE */
    hf_log_set_level(HF_LOG_ERROR);
    return 0;
}

/* ---- tests ---- */

static void frames_are_reassembled_from_any_split(void **state) {
    struct fx *fx = *state;
    uint8_t a[] = "hello", b[300], c[700];
    fill_pattern(b, sizeof b, 1);
    fill_pattern(c, sizeof c, 2);
    uint8_t two[2 * HF_FRAME_HEADER + sizeof a + sizeof b];
    size_t n = put_frame(two, a, sizeof a);
    n += put_frame(two + n, b, sizeof b);
    peer_write_all_read(fx, two, n);
    RUN_UNTIL(fx, fx->n_frames == 2);

    uint8_t split[HF_FRAME_HEADER + sizeof c];
    put_frame(split, c, sizeof c);
    peer_write_all_read(fx, split, 2); /* half the header */
    peer_write_all_read(fx, split + 2, 100); /* the rest of it and some payload */
    assert_int_equal(fx->n_frames, 2);
    peer_write(fx, split + 102, sizeof split - 102);
    RUN_UNTIL(fx, fx->n_frames == 3);

    assert_frame(fx, 0, a, sizeof a);
    assert_frame(fx, 1, b, sizeof b);
    assert_frame(fx, 2, c, sizeof c);
    assert_string_equal(fx->events, "fff");
}

static void empty_and_largest_frames_are_delivered(void **state) {
    struct fx *fx = *state;
    static uint8_t big[MAX_FRAME], stream[2 * HF_FRAME_HEADER + MAX_FRAME];
    fill_pattern(big, sizeof big, 3);
    size_t n = put_frame(stream, NULL, 0);
    n += put_frame(stream + n, big, sizeof big);
    peer_write(fx, stream, n);
    RUN_UNTIL(fx, fx->n_frames == 2);
    assert_frame(fx, 0, NULL, 0);
    assert_frame(fx, 1, big, sizeof big);
}

static void an_oversized_frame_is_answered_then_closed(void **state) {
    struct fx *fx = *state;
    unsigned long long rejected = metric("holdfast_frames_rejected_total");
    uint8_t stream[HF_FRAME_HEADER + 2 + HF_FRAME_HEADER];
    size_t n = put_frame(stream, "ok", 2);
    static const uint8_t too_long[HF_FRAME_HEADER] = {0, 0, 0x04, 0x01}; /* 1025 */
    memcpy(stream + n, too_long, sizeof too_long);
    peer_write(fx, stream, sizeof stream);
    RUN_UNTIL(fx, fx->peer_eof);

    assert_frame(fx, 0, "ok", 2); /* the frame before it still counts */
    size_t off = 0;
    hf_response_msg *r = peer_response(fx, &off);
    assert_int_equal(r->id, 0);
    assert_int_equal(r->code, HF_CODE(RESOURCE_EXHAUSTED));
    assert_non_null(strstr(r->message, "max_frame_bytes"));
    hf_response_msg_free(r);
    assert_int_equal(off, fx->peer_len); /* then nothing but EOF */
    assert_false(fx->peer_reset);
    RUN_UNTIL(fx, fx->conn == NULL);
    assert_string_equal(fx->events, "fco");
    assert_int_equal(metric("holdfast_frames_rejected_total"), rejected + 1);
}

static void sent_frames_arrive_byte_exact(void **state) {
    struct fx *fx = *state;
    hf_response_msg resp = HOLDFAST__V1__RESPONSE__INIT;
    resp.id = 42;
    resp.correlation_id = "c-42";
    resp.code = HF_CODE(NOT_HELD);
    size_t len;
    uint8_t *frame = hf_frame_pack_response(&resp, &len);
    assert_non_null(frame);
    uint8_t *want = malloc(len);
    assert_non_null(want);
    memcpy(want, frame, len);
    hf_conn_send(fx->conn, frame, len); /* ownership passes */
    RUN_UNTIL(fx, fx->peer_len >= len);
    assert_int_equal(fx->peer_len, len);
    assert_memory_equal(fx->peer, want, len);
    free(want);

    /* Larger than the socket buffer: the rest waits in libuv's write queue. */
    size_t big_len = 1u << 20;
    uint8_t *big = malloc(big_len), *big_want = malloc(big_len);
    assert_non_null(big);
    assert_non_null(big_want);
    fill_pattern(big, big_len, 4);
    memcpy(big_want, big, big_len);
    hf_conn_send(fx->conn, big, big_len);
    RUN_UNTIL(fx, fx->peer_len >= len + big_len);
    assert_int_equal(fx->peer_len, len + big_len);
    assert_memory_equal(fx->peer + len, big_want, big_len);
    free(big_want);
    assert_non_null(fx->conn);
    assert_int_equal(fx->n_events, 0);
}

static void the_peer_closing_closes_once(void **state) {
    struct fx *fx = *state;
    close(fx->fds[1]);
    fx->fds[1] = -1;
    RUN_UNTIL(fx, fx->conn == NULL);
    for (int i = 0; i < 10; i++) pump(fx);
    assert_string_equal(fx->events, "co");
}

static void the_peer_closing_mid_frame_delivers_nothing(void **state) {
    struct fx *fx = *state;
    uint8_t partial[HF_FRAME_HEADER + 3] = {0, 0, 0, 10, 'a', 'b', 'c'};
    peer_write_all_read(fx, partial, sizeof partial);
    close(fx->fds[1]);
    fx->fds[1] = -1;
    RUN_UNTIL(fx, fx->conn == NULL);
    assert_string_equal(fx->events, "co");
}

static void fatal_sends_its_error_after_what_is_queued_then_closes(void **state) {
    struct fx *fx = *state;
    /* An answer larger than the socket buffer: most of it waits in the queue. */
    size_t queued = 4u << 20;
    uint8_t *answer = malloc(queued);
    assert_non_null(answer);
    fill_pattern(answer, queued, 5);
    hf_conn_send(fx->conn, answer, queued);
    hf_conn_fatal(fx->conn, HF_CODE(UNAVAILABLE), "going away");
    for (int i = 0; i < 100; i++) uv_run(&fx->loop, UV_RUN_NOWAIT);
    assert_int_equal(fx->n_events, 0); /* not closed while the client has not read */

    RUN_UNTIL(fx, fx->peer_eof);
    assert_true(fx->peer_len > queued);
    size_t off = queued;
    hf_response_msg *r = peer_response(fx, &off);
    assert_int_equal(r->id, 0);
    assert_int_equal(r->code, HF_CODE(UNAVAILABLE));
    assert_string_equal(r->message, "going away");
    hf_response_msg_free(r);
    assert_int_equal(off, fx->peer_len); /* then EOF */
    assert_false(fx->peer_reset);
    RUN_UNTIL(fx, fx->conn == NULL);
    assert_string_equal(fx->events, "co");
}

/* server.c starts every accepted connection after on_accept, and main's
 * on_accept may already have called hf_conn_fatal (out of memory). Once
 * fatal, the connection must stay deaf until its error frame is out: were it
 * to read again, the unread bytes would fill the buffer, the read would fail
 * with UV_ENOBUFS and close at once, cancelling the queued answers and the
 * error frame (the client would see a reset). */
static void fatal_stays_deaf_even_if_started_again(void **state) {
    struct fx *fx = *state;
    size_t queued = 4u << 20; /* larger than the socket buffer: the client must read */
    uint8_t *answer = calloc(1, queued);
    assert_non_null(answer);
    hf_conn_send(fx->conn, answer, queued);
    hf_conn_fatal(fx->conn, HF_CODE(RESOURCE_EXHAUSTED), "out of memory");
    hf_conn_start(fx->conn); /* as server.c does after on_accept */
    static const uint8_t zeros[MAX_FRAME];
    static uint8_t more[3 * (HF_FRAME_HEADER + MAX_FRAME)];
    for (size_t off = 0; off < sizeof more; off += HF_FRAME_HEADER + MAX_FRAME)
        put_frame(more + off, zeros, MAX_FRAME);
    peer_write(fx, more, sizeof more);
    for (int i = 0; i < 100; i++) uv_run(&fx->loop, UV_RUN_NOWAIT);
    assert_string_equal(fx->events, ""); /* still writing to the client */
    assert_int_equal(unread(fx), (int)sizeof more);

    /* All of it arrives; the end may be a reset, since the frames sent
     * after the error were never read. */
    RUN_UNTIL(fx, fx->peer_eof);
    size_t off = queued;
    hf_response_msg *r = peer_response(fx, &off);
    assert_int_equal(r->code, HF_CODE(RESOURCE_EXHAUSTED));
    hf_response_msg_free(r);
    assert_int_equal(off, fx->peer_len);
}

#define BIG_ANSWER (9u << 20) /* more than the write queue may hold (8 MiB) */

/* The client sends `stream`; the sink answers its first frame with
 * BIG_ANSWER bytes, which the client does not read yet. */
static void first_answer_fills_the_queue(struct fx *fx, const uint8_t *stream, size_t len) {
    fx->answer_bytes = BIG_ANSWER;
    peer_write(fx, stream, len);
    for (int i = 0; i < 100 && fx->n_frames == 0; i++) uv_run(&fx->loop, UV_RUN_NOWAIT);
    fx->answer_bytes = 0;
    assert_int_equal(fx->n_frames, 1);
}

static void a_client_that_does_not_read_its_answers_is_not_read_from(void **state) {
    struct fx *fx = *state;
    uint8_t one[HF_FRAME_HEADER + 3], two[HF_FRAME_HEADER + 3];
    put_frame(one, "one", 3);
    put_frame(two, "two", 3);
    first_answer_fills_the_queue(fx, one, sizeof one);
    peer_write(fx, two, sizeof two);
    for (int i = 0; i < 100; i++) uv_run(&fx->loop, UV_RUN_NOWAIT);
    assert_int_equal(fx->n_frames, 1);
    assert_int_equal(unread(fx), (int)sizeof two);

    /* Once the client has read its answer, it is read from again. */
    RUN_UNTIL(fx, fx->peer_len == BIG_ANSWER && fx->n_frames == 2);
    assert_frame(fx, 1, "two", 3);
}

static void frames_read_before_a_pause_are_delivered_on_resume(void **state) {
    struct fx *fx = *state;
    uint8_t both[2 * (HF_FRAME_HEADER + 3)];
    size_t n = put_frame(both, "one", 3);
    n += put_frame(both + n, "two", 3);
    first_answer_fills_the_queue(fx, both, n); /* "two" is read but must wait */
    for (int i = 0; i < 100; i++) uv_run(&fx->loop, UV_RUN_NOWAIT);
    assert_int_equal(fx->n_frames, 1);

    /* No more bytes come: resuming alone delivers it. */
    RUN_UNTIL(fx, fx->peer_len == BIG_ANSWER && fx->n_frames == 2);
    assert_frame(fx, 1, "two", 3);
}

/* ---- limits: the frame timeout, the idle timeout, slow readers ---- */

/* The client's end is at EOF and what it read is one error (id 0) with this
 * code whose message names `what`. */
static void assert_answered_then_closed(struct fx *fx, hf_code code, const char *what) {
    size_t off = 0;
    hf_response_msg *r = peer_response(fx, &off);
    assert_int_equal(r->id, 0);
    assert_int_equal(r->code, code);
    if (!strstr(r->message, what)) fail_msg("message \"%s\" lacks %s", r->message, what);
    hf_response_msg_free(r);
    assert_int_equal(off, fx->peer_len);
    assert_true(fx->peer_eof);
}

static void a_partial_frame_times_out(void **state) {
    struct fx *fx = *state;
    use_limits(fx, "frame_timeout_ms = 50");
    unsigned long long timed_out =
        metric("holdfast_connections_timed_out_total{reason=\"frame\"}");
    static const uint8_t three[3] = {0, 0, 0};
    uint64_t started = now_ms();
    peer_write(fx, three, sizeof three);
    WAIT_UNTIL(fx, 2000, fx->peer_eof);
    assert_true(now_ms() - started >= 45);
    assert_answered_then_closed(fx, HF_CODE(RESOURCE_EXHAUSTED), "limits.frame_timeout_ms");
    WAIT_UNTIL(fx, 1000, fx->conn == NULL);
    assert_string_equal(fx->events, "co");
    assert_int_equal(metric("holdfast_connections_timed_out_total{reason=\"frame\"}"),
                     timed_out + 1);
}

/* The deadline runs from the frame's first byte: more bytes do not extend
 * it (a client dripping a byte at a time is still cut off). */
static void a_dripped_frame_times_out_from_its_first_byte(void **state) {
    struct fx *fx = *state;
    use_limits(fx, "frame_timeout_ms = 100");
    uint8_t frame[HF_FRAME_HEADER + 40];
    put_frame(frame, "0123456789012345678901234567890123456789", 40);
    uint64_t started = now_ms();
    size_t sent = 0;
    while (sent < sizeof frame && !fx->peer_eof) {
        peer_write(fx, frame + sent++, 1);
        run_for(fx, 10, true); /* 44 bytes: 440 ms in all, if nobody stops it */
    }
    WAIT_UNTIL(fx, 2000, fx->peer_eof);
    uint64_t took = now_ms() - started;
    assert_true(sent < sizeof frame);
    if (took < 95 || took > 300) fail_msg("closed after %llu ms", (unsigned long long)took);
    assert_answered_then_closed(fx, HF_CODE(RESOURCE_EXHAUSTED), "limits.frame_timeout_ms");
    assert_int_equal(fx->n_frames, 0);
}

/* Each frame gets its own deadline: frames that are each complete in time
 * pass, however long the client keeps sending. */
static void frames_complete_in_time_never_time_out(void **state) {
    struct fx *fx = *state;
    use_limits(fx, "frame_timeout_ms = 60");
    uint8_t frame[HF_FRAME_HEADER + 5];
    put_frame(frame, "hello", 5);
    for (int i = 0; i < 6; i++) { /* 6 x 40 ms, four times the timeout */
        peer_write(fx, frame, 3);
        run_for(fx, 20, true);
        peer_write(fx, frame + 3, sizeof frame - 3);
        run_for(fx, 20, true);
    }
    assert_int_equal(fx->n_frames, 6);
    /* Silence after whole frames is not a partial frame. */
    run_for(fx, 120, true);
    assert_non_null(fx->conn);
    assert_false(fx->peer_eof);
    assert_string_equal(fx->events, "ffffff");
}

static void an_idle_connection_is_closed_only_when_idle_timeout_is_set(void **state) {
    struct fx *fx = *state;
    use_limits(fx, "frame_timeout_ms = 20"); /* idle_timeout_ms: 0, off */
    run_for(fx, 100, true);
    assert_non_null(fx->conn);
    assert_false(fx->peer_eof);

    /* Set by a reload, it applies from the connection's next activity. */
    use_limits(fx, "idle_timeout_ms = 50");
    unsigned long long idle = metric("holdfast_connections_timed_out_total{reason=\"idle\"}");
    uint8_t frame[HF_FRAME_HEADER + 2];
    put_frame(frame, "hi", 2);
    peer_write(fx, frame, sizeof frame);
    uint64_t started = now_ms();
    WAIT_UNTIL(fx, 2000, fx->peer_eof);
    assert_true(now_ms() - started >= 45);
    assert_answered_then_closed(fx, HF_CODE(UNAVAILABLE), "limits.idle_timeout_ms");
    WAIT_UNTIL(fx, 1000, fx->conn == NULL);
    assert_string_equal(fx->events, "fco");
    assert_int_equal(metric("holdfast_connections_timed_out_total{reason=\"idle\"}"), idle + 1);
}

/* A connection waiting for answers (requests in flight in the sink) is not
 * idle; once its last answer is written the idle time starts. */
static void a_connection_with_requests_in_flight_is_not_idle(void **state) {
    struct fx *fx = *state;
    use_limits(fx, "idle_timeout_ms = 40");
    uint8_t frame[HF_FRAME_HEADER + 2];
    put_frame(frame, "hi", 2);
    fx->pending = 1; /* the request the frame starts */
    peer_write(fx, frame, sizeof frame);
    run_for(fx, 150, true);
    assert_non_null(fx->conn);
    assert_false(fx->peer_eof);
    assert_string_equal(fx->events, "f");

    /* Its answer: as the request layer does, the request is done first. */
    fx->pending = 0;
    static const uint8_t answer[HF_FRAME_HEADER] = {0, 0, 0, 0};
    uint8_t *copy = malloc(sizeof answer);
    assert_non_null(copy);
    memcpy(copy, answer, sizeof answer);
    hf_conn_send(fx->conn, copy, sizeof answer);
    uint64_t sent = now_ms();
    WAIT_UNTIL(fx, 2000, fx->peer_eof);
    assert_true(now_ms() - sent >= 35);
    size_t off = HF_FRAME_HEADER; /* the empty answer, then the error */
    hf_response_msg *r = peer_response(fx, &off);
    assert_int_equal(r->code, HF_CODE(UNAVAILABLE));
    hf_response_msg_free(r);
}

static void queued_bytes_are_counted_until_written(void **state) {
    struct fx *fx = *state;
    static const size_t sizes[] = {100, 1u << 20, 3u << 20, 7};
    size_t sum = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        uint8_t *frame = calloc(1, sizes[i]);
        assert_non_null(frame);
        hf_conn_send(fx->conn, frame, sizes[i]);
        sum += sizes[i];
        /* Counted until the socket takes them: a small answer waits for the
         * flusher, a large one is written at once, and the socket (the peer
         * does not read) takes far less than a MiB of it. */
        if (i == 0) assert_int_equal(hf_conn_queued(fx->conn), sum);
        assert_true(hf_conn_queued(fx->conn) <= sum);
        assert_true(hf_conn_queued(fx->conn) + (1u << 20) >= sum);
        assert_int_equal(hf_conn_queued_total(), hf_conn_queued(fx->conn));
        assert_int_equal(hf_metrics_gauge(HF_G_QUEUED_BYTES), (int64_t)hf_conn_queued(fx->conn));
    }
    /* What the socket has not taken stays counted while the peer does not read. */
    for (int i = 0; i < 10; i++) uv_run(&fx->loop, UV_RUN_NOWAIT);
    assert_true(hf_conn_queued(fx->conn) > 3u << 20);
    RUN_UNTIL(fx, fx->peer_len == sum && hf_conn_queued(fx->conn) == 0);
    assert_int_equal(hf_conn_queued_total(), 0);
    assert_int_equal(hf_metrics_gauge(HF_G_QUEUED_BYTES), 0);
}

/* Closing frees what libuv was not handed yet at once; the rest is counted
 * off by the cancelled writes' callbacks. */
static void a_closing_connection_gives_its_queued_bytes_back(void **state) {
    struct fx *fx = *state;
    for (int i = 0; i < 64; i++) { /* 4 MiB the client does not read */
        uint8_t *frame = calloc(1, 64u << 10);
        assert_non_null(frame);
        hf_conn_send(fx->conn, frame, 64u << 10);
    }
    for (int i = 0; i < 10; i++) uv_run(&fx->loop, UV_RUN_NOWAIT);
    size_t before = hf_conn_queued_total();
    assert_true(before > 3u << 20);
    hf_conn_close(fx->conn);
    size_t after = hf_conn_queued_total();
    if (after > 1u << 20) fail_msg("still %zu of %zu bytes queued after close", after, before);
    WAIT_UNTIL_UNREAD(fx, 1000, fx->conn == NULL);
    assert_int_equal(hf_conn_queued_total(), 0);
    assert_string_equal(fx->events, "co");
}

static void a_queue_stuck_over_its_cap_is_closed(void **state) {
    struct fx *fx = *state;
    use_limits(fx, "slow_reader_timeout_ms = 50");
    unsigned long long stalled =
        metric("holdfast_slow_readers_closed_total{reason=\"stalled\"}");
    uint8_t *big = calloc(1, BIG_ANSWER);
    assert_non_null(big);
    uint64_t started = now_ms();
    hf_conn_send(fx->conn, big, BIG_ANSWER);
    WAIT_UNTIL_UNREAD(fx, 2000, fx->conn == NULL);
    assert_true(now_ms() - started >= 45);
    assert_string_equal(fx->events, "co");
    assert_int_equal(metric("holdfast_slow_readers_closed_total{reason=\"stalled\"}"),
                     stalled + 1);
    assert_int_equal(hf_conn_queued_total(), 0);
}

static void a_reader_that_catches_up_is_not_closed(void **state) {
    struct fx *fx = *state;
    use_limits(fx, "slow_reader_timeout_ms = 300");
    uint8_t *big = calloc(1, BIG_ANSWER);
    assert_non_null(big);
    hf_conn_send(fx->conn, big, BIG_ANSWER);
    RUN_UNTIL(fx, fx->peer_len == BIG_ANSWER);
    run_for(fx, 400, true);
    assert_non_null(fx->conn);
    assert_false(fx->peer_eof);
}

/* A second connection on its own socketpair, with no sink. */
struct other {
    int fds[2];
    struct hf_conn *conn;
};

static void other_closed(void *owner, struct hf_conn *conn) {
    struct other *o = owner;
    assert_ptr_equal(conn, o->conn);
    o->conn = NULL;
}

static void the_budget_closes_the_slowest_reader_not_the_sender(void **state) {
    struct fx *fx = *state;
    use_limits(fx, "max_queued_bytes = 1048576"); /* 1 MiB */
    unsigned long long budget = metric("holdfast_slow_readers_closed_total{reason=\"budget\"}");
    struct other b = {{-1, -1}, NULL};
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b.fds), 0);
    b.conn = hf_conn_create(&fx->d, other_closed, &b);
    assert_non_null(b.conn);
    assert_int_equal(uv_pipe_open((uv_pipe_t *)hf_conn_stream(b.conn), b.fds[0]), 0);

    /* The fixture's connection: 1000 KiB its client does not read. */
    for (int i = 0; i < 10; i++) {
        uint8_t *frame = calloc(1, 100u << 10);
        assert_non_null(frame);
        hf_conn_send(fx->conn, frame, 100u << 10);
    }
    for (int i = 0; i < 10; i++) uv_run(&fx->loop, UV_RUN_NOWAIT);
    assert_non_null(fx->conn);
    size_t slow = hf_conn_queued(fx->conn);
    assert_true(slow > 600u << 10);

    /* B's answer passes the budget: the slowest reader goes, B stays. */
    uint8_t *frame = calloc(1, 400u << 10);
    assert_non_null(frame);
    hf_conn_send(b.conn, frame, 400u << 10);
    assert_int_equal(metric("holdfast_slow_readers_closed_total{reason=\"budget\"}"),
                     budget + 1);
    WAIT_UNTIL_UNREAD(fx, 1000, fx->conn == NULL);
    assert_string_equal(fx->events, "co");
    assert_non_null(b.conn);
    assert_true(hf_conn_queued(b.conn) > 0);
    assert_int_equal(hf_conn_queued_total(), hf_conn_queued(b.conn));

    hf_conn_close(b.conn);
    WAIT_UNTIL_UNREAD(fx, 1000, b.conn == NULL);
    close(b.fds[1]);
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void) {
    const struct CMUnitTest tests[] = {
        T(frames_are_reassembled_from_any_split),
        T(empty_and_largest_frames_are_delivered),
        T(an_oversized_frame_is_answered_then_closed),
        T(sent_frames_arrive_byte_exact),
        T(the_peer_closing_closes_once),
        T(the_peer_closing_mid_frame_delivers_nothing),
        T(fatal_sends_its_error_after_what_is_queued_then_closes),
        T(a_client_that_does_not_read_its_answers_is_not_read_from),
        T(frames_read_before_a_pause_are_delivered_on_resume),
        T(fatal_stays_deaf_even_if_started_again),
        T(a_partial_frame_times_out),
        T(a_dripped_frame_times_out_from_its_first_byte),
        T(frames_complete_in_time_never_time_out),
        T(an_idle_connection_is_closed_only_when_idle_timeout_is_set),
        T(a_connection_with_requests_in_flight_is_not_idle),
        T(queued_bytes_are_counted_until_written),
        T(a_closing_connection_gives_its_queued_bytes_back),
        T(a_queue_stuck_over_its_cap_is_closed),
        T(a_reader_that_catches_up_is_not_closed),
        T(the_budget_closes_the_slowest_reader_not_the_sender),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
