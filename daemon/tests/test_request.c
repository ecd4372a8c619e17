/* Unit tests for request.c: one client's requests through a fake op table on
 * a real libuv loop. A fake hf_client_io records the answers (unpacked) and
 * the fatal calls; the ops are handlers this file controls. Every test ends
 * (in teardown) with all requests freed, all handles closed and the loop
 * closed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <uv.h>

#include "config.h"
#include "daemon.h"
#include "frame.h"
#include "log.h"
#include "metrics.h"
#include "ops_table.h"
#include "request.h"

/* Which Request method reaches which fake op. */
enum {
    M_NOW = HOLDFAST__V1__REQUEST__METHOD_HOLD,      /* answers OK at once */
    M_LATER = HOLDFAST__V1__REQUEST__METHOD_EXTEND,  /* answers OK from its op timer */
    M_STUCK = HOLDFAST__V1__REQUEST__METHOD_RELEASE, /* waits until the test completes it */
    M_PROBE = HOLDFAST__V1__REQUEST__METHOD_STATUS,  /* records its deadline, answers OK */
    M_NOT_IN_TABLE = HOLDFAST__V1__REQUEST__METHOD_HEALTH,
};

#define LATER_DELAY_MS 5
#define MAX_ANSWERS 16
#define MAX_STUCK 4

static const char config_text[] =
    "return { namespaces = { seat = {} },\n"
    "  limits = { max_inflight_per_conn = 2, default_timeout_ms = 10000,\n"
    "             max_timeout_ms = 60000, min_timeout_ms = 5 } }";

struct fx {
    struct hf_daemon d; /* first: an op finds the fixture from req->d */
    uv_loop_t loop;
    struct hf_client *client;
    /* What the client was sent. */
    hf_response_msg *answers[MAX_ANSWERS];
    size_t n_answers;
    unsigned fatal_calls;
    hf_code fatal_code;
    char fatal_message[256];
    /* What the ops and the daemon saw. */
    unsigned now_calls, unknown_calls, later_fired, ctx_freed, idle_calls;
    unsigned settled_calls; /* the connection told its requests are all done */
    struct hf_request *stuck[MAX_STUCK];
    size_t n_stuck;
    uint32_t probe_timeout_ms, probe_remaining_ms, probe_backend_ms;
};

static struct fx *fx_of(struct hf_request *req) { return (struct fx *)req->d; }

/* ---- the fake op table ---- */

static void answer(struct hf_request *req, hf_code code) {
    hf_response_msg resp = HOLDFAST__V1__RESPONSE__INIT;
    resp.code = code;
    hf_request_reply(req, &resp);
}

static void op_now(struct hf_request *req) {
    fx_of(req)->now_calls++;
    answer(req, HF_CODE(OK));
}

struct op_ctx {
    struct fx *fx;
};

static void op_ctx_free(void *p) {
    struct op_ctx *ctx = p;
    ctx->fx->ctx_freed++;
}

/* A context and the op's reference, as an op waiting for a backend has. */
static bool op_begin(struct hf_request *req) {
    struct op_ctx *ctx = hf_request_context(req, sizeof *ctx, op_ctx_free);
    if (!ctx) return false;
    ctx->fx = fx_of(req);
    hf_request_op_start(req);
    return true;
}

static void later_fired(void *arg) {
    struct hf_request *req = arg;
    fx_of(req)->later_fired++;
    answer(req, HF_CODE(OK));
    hf_request_op_done(req);
}

static void op_later(struct hf_request *req) {
    if (op_begin(req)) hf_request_timer_start(req, LATER_DELAY_MS, later_fired, req);
}

static void op_stuck(struct hf_request *req) {
    struct fx *fx = fx_of(req);
    if (fx->n_stuck == MAX_STUCK) fail_msg("too many stuck ops");
    if (op_begin(req)) fx->stuck[fx->n_stuck++] = req;
}

static void op_probe(struct hf_request *req) {
    struct fx *fx = fx_of(req);
    fx->probe_timeout_ms = req->msg->timeout_ms;
    fx->probe_remaining_ms = hf_request_remaining_ms(req);
    fx->probe_backend_ms = hf_request_backend_timeout(req, 300);
    answer(req, HF_CODE(OK));
}

static void op_unknown(struct hf_request *req) {
    fx_of(req)->unknown_calls++;
    hf_request_fail(req, HF_CODE(UNIMPLEMENTED), "method", NULL, "unknown method");
}

static const struct hf_op_def fake_ops[] = {
    {"now", M_NOW, op_now, HF_OP_RESOURCE, 0, ~0u},
    {"later", M_LATER, op_later, 0, 1, ~0u},
    {"stuck", M_STUCK, op_stuck, 0, 2, ~0u},
    {"probe", M_PROBE, op_probe, HF_OP_PROBE, 3, ~0u},
    {"unknown", HOLDFAST__V1__REQUEST__METHOD__NOT_SET, op_unknown, 0, 4, ~0u},
};
static const struct hf_op_table fake_table = {fake_ops, sizeof fake_ops / sizeof fake_ops[0]};

/* The stuck op's backend finally replies: it answers (ignored when the
 * deadline answered already) and its last callback is done. */
static void complete_stuck(struct fx *fx, size_t i, hf_code code) {
    assert_true(i < fx->n_stuck);
    struct hf_request *req = fx->stuck[i];
    assert_non_null(req);
    fx->stuck[i] = NULL;
    answer(req, code);
    hf_request_op_done(req);
}

/* ---- the fake connection ---- */

static void io_send(void *io_ctx, uint8_t *frame, size_t len) {
    struct fx *fx = io_ctx;
    size_t payload = 0;
    enum hf_frame_status st = hf_frame_peek(frame, len, len, &payload);
    hf_response_msg *resp = st == HF_FRAME_READY && payload + HF_FRAME_HEADER == len
                                ? hf_frame_unpack_response(frame + HF_FRAME_HEADER, payload)
                                : NULL;
    free(frame);
    assert_non_null(resp);
    if (fx->n_answers == MAX_ANSWERS) fail_msg("too many answers");
    fx->answers[fx->n_answers++] = resp;
}

static void io_fatal(void *io_ctx, hf_code code, const char *message) {
    struct fx *fx = io_ctx;
    fx->fatal_calls++;
    fx->fatal_code = code;
    snprintf(fx->fatal_message, sizeof fx->fatal_message, "%s", message);
}

static void io_settled(void *io_ctx) { ((struct fx *)io_ctx)->settled_calls++; }

static const struct hf_client_io fake_io = {io_send, io_fatal, io_settled};

static void on_idle(struct hf_daemon *d) { ((struct fx *)d)->idle_calls++; }

/* ---- requests in, answers out ---- */

struct req_spec {
    uint64_t id;
    int method;
    const char *cid; /* NULL: none */
    uint32_t timeout_ms;
};

static void send_req(struct fx *fx, struct req_spec s) {
    hf_request_msg msg = HOLDFAST__V1__REQUEST__INIT;
    Holdfast__V1__HoldRequest hold = HOLDFAST__V1__HOLD_REQUEST__INIT;
    Holdfast__V1__ExtendRequest extend = HOLDFAST__V1__EXTEND_REQUEST__INIT;
    Holdfast__V1__ReleaseRequest release = HOLDFAST__V1__RELEASE_REQUEST__INIT;
    Holdfast__V1__StatusRequest status = HOLDFAST__V1__STATUS_REQUEST__INIT;
    Holdfast__V1__HealthRequest health = HOLDFAST__V1__HEALTH_REQUEST__INIT;
    msg.id = s.id;
    if (s.cid) msg.correlation_id = (char *)s.cid;
    msg.timeout_ms = s.timeout_ms;
    msg.method_case = (Holdfast__V1__Request__MethodCase)s.method;
    switch (s.method) {
    case HOLDFAST__V1__REQUEST__METHOD_HOLD: msg.hold = &hold; break;
    case HOLDFAST__V1__REQUEST__METHOD_EXTEND: msg.extend = &extend; break;
    case HOLDFAST__V1__REQUEST__METHOD_RELEASE: msg.release = &release; break;
    case HOLDFAST__V1__REQUEST__METHOD_STATUS: msg.status = &status; break;
    case HOLDFAST__V1__REQUEST__METHOD_HEALTH: msg.health = &health; break;
    default: fail_msg("send_req: no sub-message for method %d", s.method);
    }
    size_t len;
    uint8_t *frame = hf_frame_pack_request(&msg, &len);
    assert_non_null(frame);
    /* The payload is borrowed: freed right after (ASan checks nobody kept it). */
    hf_client_frame(fx->client, frame + HF_FRAME_HEADER, len - HF_FRAME_HEADER);
    free(frame);
}

static const hf_response_msg *answer_for(struct fx *fx, uint64_t id) {
    for (size_t i = 0; i < fx->n_answers; i++)
        if (fx->answers[i]->id == id) return fx->answers[i];
    fail_msg("no answer for request %llu", (unsigned long long)id);
    return NULL;
}

static void assert_refused(const hf_response_msg *r, hf_code code, const char *field) {
    assert_int_equal(r->code, code);
    assert_non_null(r->error);
    assert_string_equal(r->error->field, field);
}

static bool is_generated_cid(const char *s) {
    return strlen(s) == 16 && strspn(s, "0123456789abcdef") == 16;
}

/* The value of one series in hf_metrics_render's text (0 when absent). */
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

/* ---- the loop ---- */

/* Run the loop, a bounded number of iterations, until cond holds. */
#define RUN_UNTIL(fx, cond)                                             \
    do {                                                                \
        for (int iter_ = 0; iter_ < 1000 && !(cond); iter_++)           \
            uv_run(&(fx)->loop, UV_RUN_ONCE);                           \
        assert_true(cond);                                              \
    } while (0)

/* One more iteration: handles closed by the last callbacks finish closing. */
static void flush(struct fx *fx) { uv_run(&fx->loop, UV_RUN_NOWAIT); }

static int setup(void **state) {
    struct fx *fx = calloc(1, sizeof *fx);
    if (!fx) return -1;
    char err[512];
    fx->d.cfg = hf_config_load_string("test.lua", config_text, err, sizeof err);
    if (!fx->d.cfg) {
        fprintf(stderr, "config: %s\n", err);
        free(fx);
        return -1;
    }
    uv_loop_init(&fx->loop);
    fx->d.loop = &fx->loop;
    fx->d.ops = &fake_table;
    fx->d.on_idle = on_idle;
    fx->client = hf_client_create(&fx->d, &fake_io, fx, 1000, 1000);
    *state = fx;
    return fx->client ? 0 : -1;
}

static int teardown(void **state) {
    struct fx *fx = *state;
    hf_client_gone(fx->client);
    uv_run(&fx->loop, UV_RUN_DEFAULT);
    int rc = 0;
    if (fx->d.in_flight != 0) {
        fprintf(stderr, "teardown: %u requests still in flight\n", fx->d.in_flight);
        rc = -1;
    }
    int closed = uv_loop_close(&fx->loop);
    if (closed != 0) {
        fprintf(stderr, "teardown: uv_loop_close: %s\n", uv_strerror(closed));
        rc = -1;
    }
    for (size_t i = 0; i < fx->n_answers; i++) hf_response_msg_free(fx->answers[i]);
    hf_config_unref(fx->d.cfg);
    free(fx);
    return rc;
}

static int group_setup(void **state) {
    (void)state;
    hf_log_set_level(HF_LOG_ERROR);
    hf_metrics_set_ops(&fake_table);
    return 0;
}

/* ---- tests ---- */

static void answers_carry_the_id_and_the_given_correlation_id(void **state) {
    struct fx *fx = *state;
    send_req(fx, (struct req_spec){.id = 7, .method = M_NOW, .cid = "trace-7.a:b"});
    assert_int_equal(fx->n_answers, 1);
    const hf_response_msg *r = answer_for(fx, 7);
    assert_int_equal(r->code, HF_CODE(OK));
    assert_string_equal(r->correlation_id, "trace-7.a:b");

    char longest[HF_NAME_MAX + 1];
    memset(longest, 'x', HF_NAME_MAX);
    longest[HF_NAME_MAX] = '\0';
    send_req(fx, (struct req_spec){.id = 8, .method = M_NOW, .cid = longest});
    assert_int_equal(answer_for(fx, 8)->code, HF_CODE(OK));
    assert_string_equal(answer_for(fx, 8)->correlation_id, longest);
    assert_int_equal(fx->now_calls, 2);
}

static void a_correlation_id_is_generated_when_absent(void **state) {
    struct fx *fx = *state;
    send_req(fx, (struct req_spec){.id = 1, .method = M_NOW});
    send_req(fx, (struct req_spec){.id = 2, .method = M_NOW, .cid = ""});
    const char *a = answer_for(fx, 1)->correlation_id, *b = answer_for(fx, 2)->correlation_id;
    assert_true(is_generated_cid(a));
    assert_true(is_generated_cid(b));
    assert_string_not_equal(a, b);
}

static void an_invalid_correlation_id_is_refused(void **state) {
    struct fx *fx = *state;
    send_req(fx, (struct req_spec){.id = 3, .method = M_NOW, .cid = "no spaces"});
    char too_long[HF_NAME_MAX + 2];
    memset(too_long, 'x', HF_NAME_MAX + 1);
    too_long[HF_NAME_MAX + 1] = '\0';
    send_req(fx, (struct req_spec){.id = 4, .method = M_NOW, .cid = too_long});
    for (uint64_t id = 3; id <= 4; id++) {
        const hf_response_msg *r = answer_for(fx, id);
        assert_refused(r, HF_CODE(INVALID_ARGUMENT), "correlation_id");
        assert_true(is_generated_cid(r->correlation_id)); /* the log line still has one */
    }
    assert_int_equal(fx->now_calls, 0);
    assert_int_equal(hf_client_in_flight(fx->client), 0);
}

static void an_undecodable_frame_is_fatal(void **state) {
    struct fx *fx = *state;
    unsigned long long before = metric("holdfast_frames_rejected_total");
    static const uint8_t garbage[] = {0x12, 0x05, 'a'}; /* field 2: 5 bytes announced, 1 sent */
    hf_client_frame(fx->client, garbage, sizeof garbage);
    assert_int_equal(fx->fatal_calls, 1);
    assert_int_equal(fx->fatal_code, HF_CODE(INVALID_ARGUMENT));
    assert_non_null(strstr(fx->fatal_message, "holdfast.v1.Request"));
    assert_int_equal(fx->n_answers, 0);
    assert_int_equal(fx->d.in_flight, 0);
    assert_int_equal(metric("holdfast_frames_rejected_total"), before + 1);
}

static void unknown_methods_reach_the_unknown_row(void **state) {
    struct fx *fx = *state;
    send_req(fx, (struct req_spec){.id = 1, .method = M_NOT_IN_TABLE});
    /* id 2 and field 99 (a method newer than this build), empty. */
    static const uint8_t future[] = {0x08, 0x02, 0x9a, 0x06, 0x00};
    hf_client_frame(fx->client, future, sizeof future);
    static const uint8_t no_method[] = {0x08, 0x03}; /* id 3 and nothing else */
    hf_client_frame(fx->client, no_method, sizeof no_method);
    assert_int_equal(fx->n_answers, 3);
    for (uint64_t id = 1; id <= 3; id++)
        assert_refused(answer_for(fx, id), HF_CODE(UNIMPLEMENTED), "method");
    assert_int_equal(fx->unknown_calls, 3);
}

static void the_real_tables_unknown_row_answers_unimplemented(void **state) {
    struct fx *fx = *state;
    fx->d.ops = hf_ops_table();
    static const uint8_t future[] = {0x08, 0x02, 0x9a, 0x06, 0x00};
    hf_client_frame(fx->client, future, sizeof future);
    assert_int_equal(fx->n_answers, 1);
    assert_refused(answer_for(fx, 2), HF_CODE(UNIMPLEMENTED), "method");
}

static void an_op_answers_later_from_its_timer(void **state) {
    struct fx *fx = *state;
    send_req(fx, (struct req_spec){.id = 9, .method = M_LATER});
    assert_int_equal(fx->n_answers, 0);
    assert_int_equal(hf_client_in_flight(fx->client), 1);
    RUN_UNTIL(fx, fx->n_answers == 1);
    assert_int_equal(answer_for(fx, 9)->code, HF_CODE(OK));
    assert_int_equal(hf_client_in_flight(fx->client), 0);
    RUN_UNTIL(fx, fx->ctx_freed == 1);
    assert_int_equal(fx->d.in_flight, 0);
}

static void the_deadline_answers_and_the_context_outlives_it(void **state) {
    struct fx *fx = *state;
    const char *exceeded = "holdfast_requests_total{op=\"stuck\",result=\"DEADLINE_EXCEEDED\"}";
    const char *ok = "holdfast_requests_total{op=\"stuck\",result=\"OK\"}";
    unsigned long long exceeded_before = metric(exceeded), ok_before = metric(ok);

    send_req(fx, (struct req_spec){.id = 5, .method = M_STUCK, .timeout_ms = 20});
    RUN_UNTIL(fx, fx->n_answers == 1);
    const hf_response_msg *r = answer_for(fx, 5);
    assert_int_equal(r->code, HF_CODE(DEADLINE_EXCEEDED));
    assert_non_null(strstr(r->message, "20 ms"));
    flush(fx);
    /* Answered, but the op still holds its context, and its slot: a client
     * that floods short deadlines stays bounded by max_inflight_per_conn. */
    assert_int_equal(hf_client_in_flight(fx->client), 1);
    assert_int_equal(fx->d.in_flight, 1);
    assert_int_equal(fx->ctx_freed, 0);
    unsigned settled = fx->settled_calls;

    /* The backend replies late: no second answer; only now is the context
     * freed, and the connection told it has nothing pending (its idle time
     * starts then, not at the answer). */
    complete_stuck(fx, 0, HF_CODE(OK));
    RUN_UNTIL(fx, fx->ctx_freed == 1);
    assert_int_equal(fx->n_answers, 1);
    assert_int_equal(fx->d.in_flight, 0);
    assert_int_equal(fx->settled_calls, settled + 1);
    assert_int_equal(metric(exceeded), exceeded_before + 1);
    assert_int_equal(metric(ok), ok_before);
}

static void timeout_zero_takes_the_default_and_others_are_capped_and_floored(void **state) {
    struct fx *fx = *state;
    static const struct {
        uint32_t asked, effective, backend;
    } cases[] = {{0, 10000, 300}, {250, 250, 250}, {60000, 60000, 300}, {60001, 60000, 300},
                 {UINT32_MAX, 60000, 300}, {1, 5, 5}, {5, 5, 5}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        send_req(fx, (struct req_spec){.id = i + 1, .method = M_PROBE,
                                       .timeout_ms = cases[i].asked});
        assert_int_equal(answer_for(fx, i + 1)->code, HF_CODE(OK));
        assert_int_equal(fx->probe_timeout_ms, cases[i].effective);
        /* The handler runs before loop time moves on. */
        assert_int_equal(fx->probe_remaining_ms, cases[i].effective);
        assert_int_equal(fx->probe_backend_ms, cases[i].backend);
    }
}

static void a_third_concurrent_request_is_refused(void **state) {
    struct fx *fx = *state; /* limits.max_inflight_per_conn = 2 */
    send_req(fx, (struct req_spec){.id = 1, .method = M_STUCK});
    send_req(fx, (struct req_spec){.id = 2, .method = M_STUCK});
    assert_int_equal(hf_client_in_flight(fx->client), 2);
    assert_int_equal(metric("holdfast_requests_in_flight"), 2);

    send_req(fx, (struct req_spec){.id = 3, .method = M_NOW});
    assert_int_equal(fx->n_answers, 1);
    const hf_response_msg *r = answer_for(fx, 3);
    assert_int_equal(r->code, HF_CODE(RESOURCE_EXHAUSTED));
    assert_non_null(strstr(r->message, "max_inflight_per_conn"));
    assert_int_equal(fx->now_calls, 0);
    assert_int_equal(hf_client_in_flight(fx->client), 2);

    complete_stuck(fx, 0, HF_CODE(OK));
    assert_int_equal(answer_for(fx, 1)->code, HF_CODE(OK));
    assert_int_equal(hf_client_in_flight(fx->client), 1);
    send_req(fx, (struct req_spec){.id = 4, .method = M_NOW}); /* room again */
    assert_int_equal(answer_for(fx, 4)->code, HF_CODE(OK));
    assert_int_equal(hf_client_in_flight(fx->client), 1);

    complete_stuck(fx, 1, HF_CODE(OK));
    assert_int_equal(hf_client_in_flight(fx->client), 0);
    assert_int_equal(fx->n_answers, 4);
    RUN_UNTIL(fx, fx->ctx_freed == 2 && fx->d.in_flight == 0);
    assert_int_equal(metric("holdfast_requests_in_flight"), 0);
}

static void a_client_that_goes_away_gets_no_answers(void **state) {
    struct fx *fx = *state;
    send_req(fx, (struct req_spec){.id = 1, .method = M_LATER});
    send_req(fx, (struct req_spec){.id = 2, .method = M_LATER});
    assert_int_equal(fx->d.in_flight, 2);
    hf_client_gone(fx->client);
    fx->client = NULL;
    RUN_UNTIL(fx, fx->later_fired == 2 && fx->ctx_freed == 2 && fx->d.in_flight == 0);
    assert_int_equal(fx->n_answers, 0);
    assert_int_equal(fx->fatal_calls, 0);
}

static void draining_refuses_new_requests_and_reports_idle(void **state) {
    struct fx *fx = *state;
    send_req(fx, (struct req_spec){.id = 1, .method = M_STUCK});
    fx->d.draining = true;
    send_req(fx, (struct req_spec){.id = 2, .method = M_NOW});
    assert_int_equal(answer_for(fx, 2)->code, HF_CODE(UNAVAILABLE));
    assert_int_equal(fx->now_calls, 0);
    RUN_UNTIL(fx, fx->d.in_flight == 1); /* the refused request is gone */
    flush(fx);
    assert_int_equal(fx->idle_calls, 0);

    complete_stuck(fx, 0, HF_CODE(OK));
    RUN_UNTIL(fx, fx->idle_calls == 1);
    assert_int_equal(fx->d.in_flight, 0);
    assert_int_equal(fx->ctx_freed, 1);
    assert_int_equal(fx->n_answers, 2);
    flush(fx);
    assert_int_equal(fx->idle_calls, 1);
}

static void answers_are_counted_by_op_and_result(void **state) {
    struct fx *fx = *state;
    const char *now_ok = "holdfast_requests_total{op=\"now\",result=\"OK\"}";
    const char *now_refused = "holdfast_requests_total{op=\"now\",result=\"INVALID_ARGUMENT\"}";
    const char *later_ok = "holdfast_requests_total{op=\"later\",result=\"OK\"}";
    unsigned long long a = metric(now_ok), b = metric(now_refused), c = metric(later_ok);
    for (uint64_t id = 1; id <= 3; id++) send_req(fx, (struct req_spec){.id = id, .method = M_NOW});
    send_req(fx, (struct req_spec){.id = 4, .method = M_NOW, .cid = "bad cid"});
    send_req(fx, (struct req_spec){.id = 5, .method = M_LATER});
    RUN_UNTIL(fx, fx->n_answers == 5);
    assert_int_equal(metric(now_ok), a + 3);
    assert_int_equal(metric(now_refused), b + 1);
    assert_int_equal(metric(later_ok), c + 1);
}

/* The log lines of requests sent while stderr goes to a temp file. */
static char *logged(struct fx *fx, int method, uint64_t first_id, int count) {
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    int saved = dup(STDERR_FILENO);
    assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
    hf_log_set_level(HF_LOG_INFO);
    size_t before = fx->n_answers;
    for (int i = 0; i < count; i++)
        send_req(fx, (struct req_spec){.id = first_id + (uint64_t)i, .method = method});
    RUN_UNTIL(fx, fx->n_answers == before + (size_t)count);
    hf_log_flush();
    hf_log_set_level(HF_LOG_ERROR);
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    static char text[4096];
    rewind(tmp);
    size_t n = fread(text, 1, sizeof text - 1, tmp);
    text[n] = '\0';
    fclose(tmp);
    return text;
}

/* A probe op (HF_OP_PROBE) logs at debug unless log.probes is set. */
static void probe_ops_log_at_info_only_with_log_probes(void **state) {
    struct fx *fx = *state;
    assert_false(fx->d.cfg->log_probes);
    assert_null(strstr(logged(fx, M_PROBE, 1, 1), "op=probe"));
    assert_non_null(strstr(logged(fx, M_NOW, 2, 1), "op=now"));
    fx->d.cfg->log_probes = true; /* as a reload would */
    assert_non_null(strstr(logged(fx, M_PROBE, 3, 1), " info  req cid="));
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void) {
    const struct CMUnitTest tests[] = {
        T(answers_carry_the_id_and_the_given_correlation_id),
        T(a_correlation_id_is_generated_when_absent),
        T(an_invalid_correlation_id_is_refused),
        T(an_undecodable_frame_is_fatal),
        T(unknown_methods_reach_the_unknown_row),
        T(the_real_tables_unknown_row_answers_unimplemented),
        T(an_op_answers_later_from_its_timer),
        T(the_deadline_answers_and_the_context_outlives_it),
        T(timeout_zero_takes_the_default_and_others_are_capped_and_floored),
        T(a_third_concurrent_request_is_refused),
        T(a_client_that_goes_away_gets_no_answers),
        T(draining_refuses_new_requests_and_reports_idle),
        T(answers_are_counted_by_op_and_result),
        T(probe_ops_log_at_info_only_with_log_probes),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
