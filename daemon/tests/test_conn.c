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

static const struct hf_conn_sink recording_sink = {sink_frame, sink_closed, NULL};

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
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
