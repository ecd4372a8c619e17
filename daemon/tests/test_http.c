/* test_http.c - the HTTP listener (http.c) on a real libuv loop: a libuv
 * TCP client on the same loop sends a request and reads the answer, so the
 * whole exchange runs through MHD's epoll descriptor and timer as the
 * daemon runs it. No Redis: the daemon is never ready here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <uv.h>

#include "config.h"
#include "daemon.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "ops_table.h"

struct fx {
    struct hf_daemon d;
    uv_loop_t loop;
    struct hf_http *http;
};

/* ---- a one-shot HTTP/1.0 client ---- */

struct exchange {
    uv_tcp_t tcp;
    uv_connect_t connect;
    uv_write_t write;
    uv_timer_t guard; /* a daemon that never answers fails the test, not hangs it */
    const char *request;
    char *answer;
    size_t len;
    int open_handles;
    bool timed_out;
};

static void on_client_closed(uv_handle_t *h) { ((struct exchange *)h->data)->open_handles--; }

static void finish(struct exchange *x) {
    if (!uv_is_closing((uv_handle_t *)&x->tcp)) uv_close((uv_handle_t *)&x->tcp, on_client_closed);
    if (!uv_is_closing((uv_handle_t *)&x->guard))
        uv_close((uv_handle_t *)&x->guard, on_client_closed);
}

static void on_guard(uv_timer_t *t) {
    struct exchange *x = t->data;
    x->timed_out = true;
    finish(x);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
    (void)h;
    buf->base = malloc(suggested);
    buf->len = buf->base ? suggested : 0;
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
    struct exchange *x = s->data;
    if (n > 0) {
        char *grown = realloc(x->answer, x->len + (size_t)n + 1);
        assert_non_null(grown);
        memcpy(grown + x->len, buf->base, (size_t)n);
        x->answer = grown;
        x->len += (size_t)n;
        x->answer[x->len] = '\0';
    }
    free(buf->base);
    if (n < 0) finish(x); /* EOF: HTTP/1.0 ends here */
}

static void on_written(uv_write_t *w, int status) {
    assert_int_equal(status, 0);
    struct exchange *x = w->data;
    assert_int_equal(uv_read_start((uv_stream_t *)&x->tcp, on_alloc, on_read), 0);
}

static void on_connected(uv_connect_t *c, int status) {
    assert_int_equal(status, 0);
    struct exchange *x = c->data;
    uv_buf_t buf = uv_buf_init((char *)x->request, (unsigned)strlen(x->request));
    x->write.data = x;
    assert_int_equal(uv_write(&x->write, (uv_stream_t *)&x->tcp, &buf, 1, on_written), 0);
}

/* The whole answer (headers and body) to `request`; the caller frees it. */
static char *ask(struct fx *fx, const char *request) {
    struct exchange *x = calloc(1, sizeof *x);
    assert_non_null(x);
    x->request = request;
    assert_int_equal(uv_tcp_init(&fx->loop, &x->tcp), 0);
    uv_timer_init(&fx->loop, &x->guard);
    x->tcp.data = x->connect.data = x->guard.data = x;
    x->open_handles = 2;
    uv_timer_start(&x->guard, on_guard, 5000, 0);
    struct sockaddr_in addr;
    uv_ip4_addr("127.0.0.1", (int)hf_http_port(fx->http), &addr);
    assert_int_equal(uv_tcp_connect(&x->connect, &x->tcp, (const struct sockaddr *)&addr,
                                     on_connected),
                     0);
    for (int i = 0; i < 100000 && x->open_handles > 0; i++) uv_run(&fx->loop, UV_RUN_ONCE);
    assert_int_equal(x->open_handles, 0);
    bool timed_out = x->timed_out;
    char *answer = x->answer ? x->answer : strdup("");
    free(x);
    if (timed_out) fail_msg("no answer within 5 s to %.40s", request);
    return answer;
}

static char *get(struct fx *fx, const char *path) {
    char request[256];
    snprintf(request, sizeof request, "GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n", path);
    return ask(fx, request);
}

static const char *body_of(const char *answer) {
    const char *b = strstr(answer, "\r\n\r\n");
    assert_non_null(b);
    return b + 4;
}

/* ---- fixture ---- */

static int setup(void **state) {
    struct fx *fx = calloc(1, sizeof *fx);
    if (!fx) return -1;
    char err[512];
    fx->d.cfg = hf_config_load_string("test.lua", "return { namespaces = { seat = {} } }", err,
                                      sizeof err);
    if (!fx->d.cfg) {
        fprintf(stderr, "config: %s\n", err);
        free(fx);
        return -1;
    }
    uv_loop_init(&fx->loop);
    fx->d.loop = &fx->loop;
    fx->d.ops = hf_ops_table();
    fx->http = hf_http_create(&fx->d, "127.0.0.1:0");
    *state = fx;
    return fx->http ? 0 : -1;
}

static int teardown(void **state) {
    struct fx *fx = *state;
    hf_http_close(fx->http);
    uv_run(&fx->loop, UV_RUN_DEFAULT);
    int closed = uv_loop_close(&fx->loop);
    if (closed != 0) fprintf(stderr, "teardown: uv_loop_close: %s\n", uv_strerror(closed));
    hf_config_unref(fx->d.cfg);
    free(fx);
    return closed == 0 ? 0 : -1;
}

static int group_setup(void **state) {
    (void)state;
    hf_log_set_level(HF_LOG_ERROR);
    hf_metrics_set_ops(hf_ops_table());
    hf_metrics_set_build_info("1.2.3", "holdfast_v9");
    return 0;
}

/* ---- tests ---- */

static void healthz_answers_while_the_process_lives(void **state) {
    struct fx *fx = *state;
    char *a = get(fx, "/healthz");
    assert_true(strncmp(a, "HTTP/1.", 7) == 0);
    assert_non_null(strstr(a, " 200 "));
    assert_string_equal(body_of(a), "live\n");
    free(a);
}

static void readyz_says_why_not(void **state) {
    struct fx *fx = *state;
    char *a = get(fx, "/readyz");
    assert_non_null(strstr(a, " 503 "));
    assert_string_equal(body_of(a), "not ready: redis down\n");
    free(a);
    fx->d.draining = true;
    a = get(fx, "/readyz");
    assert_non_null(strstr(a, " 503 "));
    assert_string_equal(body_of(a), "not ready: draining\n");
    free(a);
}

static void metrics_is_the_exposition(void **state) {
    struct fx *fx = *state;
    char *a = get(fx, "/metrics?ignored=1");
    assert_non_null(strstr(a, " 200 "));
    assert_non_null(strstr(a, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
    const char *body = body_of(a);
    char *rendered = hf_metrics_render();
    assert_non_null(rendered);
    /* Same families in the same order; only process_* values may move. */
    size_t upto = (size_t)(strstr(rendered, "process_") - rendered);
    assert_memory_equal(body, rendered, upto);
    free(rendered);
    assert_non_null(strstr(body, "\nholdfast_ready 0\n"));
    assert_non_null(strstr(body, "\nholdfast_build_info{version=\"1.2.3\",library=\"holdfast_v9\"} 1\n"));
    assert_non_null(strstr(body, "\nprocess_open_fds "));
    assert_non_null(strstr(body, "\nprocess_start_time_seconds "));
    free(a);

    a = ask(fx, "HEAD /metrics HTTP/1.0\r\n\r\n");
    assert_non_null(strstr(a, " 200 "));
    assert_string_equal(body_of(a), "");
    free(a);
}

static void other_methods_and_paths_are_refused(void **state) {
    struct fx *fx = *state;
    char *a = ask(fx, "POST /metrics HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc");
    assert_non_null(strstr(a, " 405 "));
    assert_non_null(strstr(a, "Allow: GET, HEAD\r\n"));
    free(a);
    a = get(fx, "/metrics/../secret");
    assert_non_null(strstr(a, " 404 "));
    free(a);
    a = ask(fx, "nonsense\r\n\r\n");
    assert_true(strstr(a, " 400 ") || *a == '\0'); /* MHD refuses or closes */
    free(a);
    /* Still serving. */
    a = get(fx, "/healthz");
    assert_non_null(strstr(a, " 200 "));
    free(a);
}

static void on_idle_connected(uv_connect_t *c, int status) {
    assert_int_equal(status, 0);
    (*(int *)c->data)++;
}

static void on_idle_closed(uv_handle_t *h) { (*(int *)h->data)++; }

/* More clients than the connection limit (64): the rest wait in the backlog
 * and are served as soon as connections close, with no other event. */
static void connections_beyond_the_limit_are_served_once_others_close(void **state) {
    struct fx *fx = *state;
    enum { N = 70 };
    uv_tcp_t *idle = calloc(N, sizeof *idle);
    uv_connect_t *connects = calloc(N, sizeof *connects);
    assert_non_null(idle);
    assert_non_null(connects);
    struct sockaddr_in addr;
    uv_ip4_addr("127.0.0.1", (int)hf_http_port(fx->http), &addr);
    int connected = 0, closed = 0;
    for (int i = 0; i < N; i++) {
        assert_int_equal(uv_tcp_init(&fx->loop, &idle[i]), 0);
        connects[i].data = &connected;
        assert_int_equal(uv_tcp_connect(&connects[i], &idle[i], (const struct sockaddr *)&addr,
                                         on_idle_connected),
                         0);
    }
    for (int i = 0; i < 100000 && connected < N; i++) uv_run(&fx->loop, UV_RUN_ONCE);
    assert_int_equal(connected, N);
    for (int i = 0; i < 100; i++) uv_run(&fx->loop, UV_RUN_NOWAIT); /* MHD accepts 64 */
    for (int i = 0; i < N; i++) {
        idle[i].data = &closed;
        uv_close((uv_handle_t *)&idle[i], on_idle_closed);
    }
    for (int i = 0; i < 100000 && closed < N; i++) uv_run(&fx->loop, UV_RUN_ONCE);
    assert_int_equal(closed, N);
    free(idle);
    free(connects);
    char *a = get(fx, "/healthz");
    assert_non_null(strstr(a, " 200 "));
    free(a);
}

static void a_taken_port_or_a_bad_address_fails(void **state) {
    struct fx *fx = *state;
    char address[32];
    snprintf(address, sizeof address, "127.0.0.1:%u", hf_http_port(fx->http));
    assert_null(hf_http_create(&fx->d, address));
    assert_null(hf_http_create(&fx->d, "localhost:1"));
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void) {
    const struct CMUnitTest tests[] = {
        T(healthz_answers_while_the_process_lives),
        T(readyz_says_why_not),
        T(metrics_is_the_exposition),
        T(other_methods_and_paths_are_refused),
        T(connections_beyond_the_limit_are_served_once_others_close),
        T(a_taken_port_or_a_bad_address_fails),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
