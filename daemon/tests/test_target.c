/* test_target.c - the door every request on a target comes through
 * (target.c, kind_seats.c, kind_pools.c): namespace and partition checked
 * once for every kind, items, labels, counts, each step's function and keys,
 * the kinds' answers from library codes; and argv.c, the argument builder.
 * Requests go through the real request layer (decode, dispatch) to a fake op
 * that parses its Hold's target; no Redis. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "argv.h"
#include "frame.h"
#include "log.h"
#include "metrics.h"
#include "ops_table.h"
#include "request.h"
#include "target.h"

static const char config_text[] =
    "return { namespaces = {\n"
    "  seat = {},\n"
    "  train = { max_legs = 4 },\n"
    "  ga = { kind = 'pools' } },\n"
    "  postgres = { dsn = 'host=/nonexistent' },\n"
    "  limits = { max_ids = 8 } }";

struct fx {
    struct hf_daemon d; /* first: the op finds the fixture from req->d */
    uv_loop_t loop;
    struct hf_client *client;
    hf_response_msg *answer;   /* the last answer */
    struct hf_target target;   /* what the op parsed */
    bool parsed;
    enum hf_target_need need;
    long long code, index, extra; /* > 0: the op answers this library code */
};

static struct fx *fx_of(struct hf_request *req) { return (struct fx *)req->d; }

/* The fake op: parse the Hold's fields, then answer OK, or a kind's answer
 * to a library code. */
static void op_parse(struct hf_request *req) {
    struct fx *fx = fx_of(req);
    Holdfast__V1__HoldRequest *m = req->msg->hold;
    struct hf_target_fields f = {
        .ns = m->namespace_, .partition = m->partition, .ids = m->ids, .n_ids = m->n_ids,
        .segment = m->segment, .units = m->units, .n_units = m->n_units};
    /* Names only: the pool names ride in `units` with counts ignored. */
    char *names[8];
    if (fx->need != HF_NEED_ITEMS) {
        for (size_t i = 0; i < m->n_units && i < 8; i++) names[i] = m->units[i]->pool;
        f.pools = names;
        f.n_pools = m->n_units;
        f.units = NULL;
        f.n_units = 0;
    }
    hf_target_clear(&fx->target);
    fx->parsed = hf_target_parse(req, &fx->target, &f, fx->need);
    if (!fx->parsed) return;
    if (fx->code) {
        hf_target_answer_code(req, &fx->target, fx->code, fx->index, fx->extra);
        return;
    }
    hf_response_msg resp = HOLDFAST__V1__RESPONSE__INIT;
    resp.code = HF_CODE(OK);
    hf_request_reply(req, &resp);
}

static const struct hf_op_def fake_ops[] = {
    {"hold", HOLDFAST__V1__REQUEST__METHOD_HOLD, op_parse, HF_OP_RESOURCE, 0, ~0u},
    {"unknown", HOLDFAST__V1__REQUEST__METHOD__NOT_SET, op_parse, 0, 1, ~0u},
};
static const struct hf_op_table fake_table = {fake_ops, 2};

static void io_send(void *io_ctx, uint8_t *frame, size_t len) {
    struct fx *fx = io_ctx;
    size_t payload = 0;
    assert_int_equal(hf_frame_peek(frame, len, len, &payload), HF_FRAME_READY);
    if (fx->answer) hf_response_msg_free(fx->answer);
    fx->answer = hf_frame_unpack_response(frame + HF_FRAME_HEADER, payload);
    free(frame);
    assert_non_null(fx->answer);
}
static void io_fatal(void *io_ctx, hf_code code, const char *message) {
    (void)io_ctx, (void)code;
    fail_msg("fatal: %s", message);
}
static void io_settled(void *io_ctx) { (void)io_ctx; }
static const struct hf_client_io fake_io = {io_send, io_fatal, io_settled};

/* A Hold of ids (n_ids) or units (pools[i] = counts[i]), with a segment
 * when to_stop > 0. Returns the answer's code. */
struct hold_spec {
    const char *ns, *partition;
    const char *ids[10];
    size_t n_ids;
    const char *pools[10];
    uint32_t counts[10];
    size_t n_units;
    uint32_t from_stop, to_stop;
};

static hf_code send_hold(struct fx *fx, const struct hold_spec *s) {
    hf_request_msg msg = HOLDFAST__V1__REQUEST__INIT;
    Holdfast__V1__HoldRequest hold = HOLDFAST__V1__HOLD_REQUEST__INIT;
    Holdfast__V1__Segment seg = HOLDFAST__V1__SEGMENT__INIT;
    Holdfast__V1__PoolTake takes[10], *take_ptrs[10];
    msg.id = 7;
    msg.method_case = HOLDFAST__V1__REQUEST__METHOD_HOLD;
    msg.hold = &hold;
    hold.namespace_ = (char *)s->ns;
    hold.partition = (char *)s->partition;
    hold.ids = (char **)s->ids;
    hold.n_ids = s->n_ids;
    for (size_t i = 0; i < s->n_units; i++) {
        holdfast__v1__pool_take__init(&takes[i]);
        takes[i].pool = (char *)s->pools[i];
        takes[i].count = s->counts[i];
        take_ptrs[i] = &takes[i];
    }
    hold.units = take_ptrs;
    hold.n_units = s->n_units;
    if (s->to_stop) {
        seg.from_stop = s->from_stop;
        seg.to_stop = s->to_stop;
        hold.segment = &seg;
    }
    size_t len;
    uint8_t *frame = hf_frame_pack_request(&msg, &len);
    assert_non_null(frame);
    hf_client_frame(fx->client, frame + HF_FRAME_HEADER, len - HF_FRAME_HEADER);
    free(frame);
    uv_run(&fx->loop, UV_RUN_NOWAIT);
    assert_non_null(fx->answer);
    return fx->answer->code;
}

static const char *field_of(const struct fx *fx) {
    return fx->answer->error ? fx->answer->error->field : "";
}

static int setup(void **state) {
    struct fx *fx = calloc(1, sizeof *fx);
    char err[512];
    fx->d.cfg = hf_config_load_string("test.lua", config_text, err, sizeof err);
    if (!fx->d.cfg) {
        fprintf(stderr, "config: %s\n", err);
        return -1;
    }
    uv_loop_init(&fx->loop);
    fx->d.loop = &fx->loop;
    fx->d.ops = &fake_table;
    fx->client = hf_client_create(&fx->d, &fake_io, fx, 1000, 1000);
    *state = fx;
    return fx->client ? 0 : -1;
}

static int teardown(void **state) {
    struct fx *fx = *state;
    hf_client_gone(fx->client);
    uv_run(&fx->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&fx->loop), 0);
    hf_target_clear(&fx->target);
    if (fx->answer) hf_response_msg_free(fx->answer);
    hf_config_unref(fx->d.cfg);
    free(fx);
    return 0;
}

/* ---- the door ---- */

static void namespace_and_partition_for_every_kind(void **state) {
    struct fx *fx = *state;
    const char *kinds[] = {"seat", "ga"};
    for (size_t k = 0; k < 2; k++) {
        struct hold_spec s = {.ns = "no-such", .partition = "p", .n_ids = 1, .ids = {"1"}};
        assert_int_equal(send_hold(fx, &s), HF_CODE(NOT_FOUND));
        assert_string_equal(field_of(fx), "namespace");
        s.ns = "bad name";
        assert_int_equal(send_hold(fx, &s), HF_CODE(INVALID_ARGUMENT));
        assert_string_equal(field_of(fx), "namespace");
        s.ns = kinds[k];
        s.partition = "p{x}";
        assert_int_equal(send_hold(fx, &s), HF_CODE(INVALID_ARGUMENT));
        assert_string_equal(field_of(fx), "partition");
    }
}

static void seats_items_keys_and_steps(void **state) {
    struct fx *fx = *state;
    struct hold_spec s = {.ns = "seat", .partition = "run-1", .ids = {"E7", "E8"}, .n_ids = 2};
    assert_int_equal(send_hold(fx, &s), HF_CODE(OK));
    const struct hf_target *t = &fx->target;
    assert_int_equal(t->n, 2);
    assert_string_equal(t->labels[1], "E8");
    assert_null(t->counts);
    assert_int_equal(t->count_args.n, 0);
    assert_int_equal(hf_target_fn(t, HF_STEP_HOLD), HF_FN_HOLD);
    assert_int_equal(hf_target_fn(t, HF_STEP_RELEASE), HF_FN_RELEASE);
    struct hf_strs hold = hf_target_keys(t, HF_STEP_HOLD);
    assert_int_equal(hold.n, 3);
    assert_string_equal(hold.v[0], "hf:{seat:run-1}:#fence");
    struct hf_strs ext = hf_target_keys(t, HF_STEP_EXTEND);
    assert_int_equal(ext.n, 2);
    assert_string_equal(ext.v[0], "hf:{seat:run-1}:E7");
    struct hf_strs wait = hf_target_keys(t, HF_STEP_HOLD_WAIT);
    assert_int_equal(wait.n, 6);
    assert_string_equal(wait.v[5], "hf:{seat:run-1}:#line:E8");
    assert_int_equal(hf_target_hold_keys(t).n, 2);
    /* The log line names the ids. */
    assert_true(t->kind->sessions && t->kind->release_wakes && t->kind->delex);
    assert_null(t->kind->load_state);
}

static void seats_refuse_what_seats_lack(void **state) {
    struct fx *fx = *state;
    struct hold_spec s = {.ns = "seat", .partition = "p", .n_ids = 0};
    assert_int_equal(send_hold(fx, &s), HF_CODE(INVALID_ARGUMENT));
    assert_string_equal(field_of(fx), "ids");
    s = (struct hold_spec){.ns = "seat", .partition = "p", .ids = {"1", "2", "1"}, .n_ids = 3};
    assert_int_equal(send_hold(fx, &s), HF_CODE(INVALID_ARGUMENT));
    assert_string_equal(field_of(fx), "ids[2]");
    s = (struct hold_spec){.ns = "seat", .partition = "p", .ids = {"ok", "a:b"}, .n_ids = 2};
    assert_int_equal(send_hold(fx, &s), HF_CODE(INVALID_ARGUMENT));
    assert_string_equal(field_of(fx), "ids[1]");
    s = (struct hold_spec){.ns = "seat", .partition = "p", .pools = {"adult"}, .counts = {1},
                           .n_units = 1};
    assert_int_equal(send_hold(fx, &s), HF_CODE(INVALID_ARGUMENT));
    assert_string_equal(field_of(fx), "units");
    s = (struct hold_spec){.ns = "seat", .partition = "p", .ids = {"1"}, .n_ids = 1,
                           .to_stop = 2};
    assert_int_equal(send_hold(fx, &s), HF_CODE(INVALID_ARGUMENT));
    assert_string_equal(field_of(fx), "segment");
}

static void legs_are_seats_expanded_at_the_door(void **state) {
    struct fx *fx = *state;
    struct hold_spec s = {.ns = "train", .partition = "t1", .ids = {"E7", "E8"}, .n_ids = 2,
                          .from_stop = 9, .to_stop = 11};
    assert_int_equal(send_hold(fx, &s), HF_CODE(OK));
    const struct hf_target *t = &fx->target;
    assert_int_equal(t->n, 4);
    assert_string_equal(t->items[0], "E7@9");
    assert_string_equal(t->items[1], "E7@10");
    assert_string_equal(t->items[3], "E8@10");
    assert_string_equal(hf_target_keys(t, HF_STEP_EXTEND).v[1], "hf:{train:t1}:E7@10");
    /* A segment is required, goes forward, within max_legs and max_ids. */
    s.to_stop = 0;
    assert_int_equal(send_hold(fx, &s), HF_CODE(INVALID_ARGUMENT));
    assert_string_equal(field_of(fx), "segment");
    s.from_stop = 3, s.to_stop = 3;
    assert_int_equal(send_hold(fx, &s), HF_CODE(INVALID_ARGUMENT));
    s.from_stop = 0, s.to_stop = 5; /* 5 legs > max_legs 4 */
    assert_int_equal(send_hold(fx, &s), HF_CODE(INVALID_ARGUMENT));
    s.from_stop = 0, s.to_stop = 4; /* 2 ids x 4 legs = 8 = max_ids: fine */
    assert_int_equal(send_hold(fx, &s), HF_CODE(OK));
    s.ids[2] = "E9", s.n_ids = 3; /* 12 > 8 */
    assert_int_equal(send_hold(fx, &s), HF_CODE(INVALID_ARGUMENT));
    assert_string_equal(field_of(fx), "segment");
}

static void units_items_labels_counts_and_steps(void **state) {
    struct fx *fx = *state;
    struct hold_spec s = {.ns = "ga", .partition = "show-1", .pools = {"adult", "child"},
                          .counts = {2, 10}, .n_units = 2};
    assert_int_equal(send_hold(fx, &s), HF_CODE(OK));
    const struct hf_target *t = &fx->target;
    assert_int_equal(t->n, 2);
    assert_string_equal(t->items[1], "child");
    assert_string_equal(t->labels[0], "adult=2");
    assert_string_equal(t->labels[1], "child=10");
    assert_int_equal(t->counts[1], 10);
    assert_int_equal(t->count_args.n, 2);
    assert_int_equal(t->count_args.lens[1], 2);
    assert_memory_equal(t->count_args.v[1], "10", 2);
    assert_int_equal(hf_target_fn(t, HF_STEP_HOLD), HF_FN_POOL_HOLD);
    assert_int_equal(hf_target_fn(t, HF_STEP_HOLD_WAIT), HF_FN_POOL_HOLD_WAIT);
    struct hf_strs rel = hf_target_keys(t, HF_STEP_RELEASE);
    assert_int_equal(rel.n, 4);
    assert_string_equal(rel.v[0], "hf:{ga:show-1}:#pool:adult");
    struct hf_strs st = hf_target_keys(t, HF_STEP_STATUS);
    assert_int_equal(st.n, 5);
    assert_string_equal(st.v[0], "hf:{ga:show-1}:#pooldefault");
    assert_int_equal(hf_target_hold_keys(t).n, 0); /* no session keeps units */
    assert_false(t->kind->sessions);
    assert_non_null(t->kind->load_state);
    assert_true(hf_target_missing_state(t, HF_SC_POOL_MISS));
}

static void units_refuse_what_pools_lack(void **state) {
    struct fx *fx = *state;
    struct hold_spec s = {.ns = "ga", .partition = "p", .ids = {"1"}, .n_ids = 1};
    assert_int_equal(send_hold(fx, &s), HF_CODE(INVALID_ARGUMENT));
    assert_string_equal(field_of(fx), "ids");
    s = (struct hold_spec){.ns = "ga", .partition = "p", .n_units = 0};
    assert_int_equal(send_hold(fx, &s), HF_CODE(INVALID_ARGUMENT));
    assert_string_equal(field_of(fx), "units");
    s = (struct hold_spec){.ns = "ga", .partition = "p", .pools = {"a", "a"}, .counts = {1, 1},
                           .n_units = 2};
    assert_int_equal(send_hold(fx, &s), HF_CODE(INVALID_ARGUMENT));
    assert_string_equal(field_of(fx), "units[1].pool");
    s = (struct hold_spec){.ns = "ga", .partition = "p", .pools = {"a"}, .counts = {0},
                           .n_units = 1};
    assert_int_equal(send_hold(fx, &s), HF_CODE(INVALID_ARGUMENT));
    assert_string_equal(field_of(fx), "units[0].count");
    s.counts[0] = 1000001;
    assert_int_equal(send_hold(fx, &s), HF_CODE(INVALID_ARGUMENT));
    s = (struct hold_spec){.ns = "ga", .partition = "p", .pools = {"a b"}, .counts = {1},
                           .n_units = 1};
    assert_int_equal(send_hold(fx, &s), HF_CODE(INVALID_ARGUMENT));
    assert_string_equal(field_of(fx), "units[0].pool");
    s = (struct hold_spec){.ns = "ga", .partition = "p", .pools = {"a"}, .counts = {1},
                           .n_units = 1, .to_stop = 1};
    assert_int_equal(send_hold(fx, &s), HF_CODE(INVALID_ARGUMENT));
    assert_string_equal(field_of(fx), "segment");
}

static void names_only_and_capacity_needs(void **state) {
    struct fx *fx = *state;
    fx->need = HF_NEED_NAMES;
    struct hold_spec s = {.ns = "ga", .partition = "p", .pools = {"adult"}, .n_units = 1};
    assert_int_equal(send_hold(fx, &s), HF_CODE(OK));
    assert_null(fx->target.counts);
    assert_string_equal(fx->target.labels[0], "adult");
    /* Names only: none is refused, except for the capacity ops (all pools). */
    s.n_units = 0;
    assert_int_equal(send_hold(fx, &s), HF_CODE(INVALID_ARGUMENT));
    fx->need = HF_NEED_POOL_NAMES;
    assert_int_equal(send_hold(fx, &s), HF_CODE(OK));
    assert_int_equal(fx->target.n, 0);
    s.ns = "seat";
    assert_int_equal(send_hold(fx, &s), HF_CODE(INVALID_ARGUMENT));
    assert_string_equal(field_of(fx), "pools");
    fx->need = HF_NEED_ITEMS;
}

/* ---- the kinds' answers ---- */

static void answers_name_the_item(void **state) {
    struct fx *fx = *state;
    struct hold_spec seats = {.ns = "seat", .partition = "p", .ids = {"A", "B"}, .n_ids = 2};
    fx->code = HF_SC_HELD_BY_ANOTHER, fx->index = 2;
    assert_int_equal(send_hold(fx, &seats), HF_CODE(HELD_BY_ANOTHER));
    assert_string_equal(fx->answer->error->resource_id, "B");
    fx->code = HF_SC_CONFIRMED, fx->index = 1;
    assert_int_equal(send_hold(fx, &seats), HF_CODE(CONFIRMED));
    fx->code = HF_SC_NOT_HELD, fx->index = 9; /* out of range: no crash, "?" */
    assert_int_equal(send_hold(fx, &seats), HF_CODE(NOT_HELD));
    assert_string_equal(fx->answer->error->resource_id, "?");
    struct hold_spec units = {.ns = "ga", .partition = "p", .pools = {"adult"}, .counts = {3},
                              .n_units = 1};
    fx->code = HF_SC_HELD_BY_ANOTHER, fx->index = 1, fx->extra = 2;
    assert_int_equal(send_hold(fx, &units), HF_CODE(HELD_BY_ANOTHER));
    assert_non_null(strstr(fx->answer->message, "3 units asked, 2 free"));
    fx->extra = -1; /* a wait that ran out behind other waiters */
    assert_int_equal(send_hold(fx, &units), HF_CODE(HELD_BY_ANOTHER));
    assert_non_null(strstr(fx->answer->message, "waiting in line came first"));
    fx->code = HF_SC_CONFIRMED, fx->extra = 1;
    assert_int_equal(send_hold(fx, &units), HF_CODE(CONFIRMED));
    assert_non_null(strstr(fx->answer->message, "sold out"));
    fx->code = HF_SC_POOL_COUNT_MISMATCH, fx->extra = 5;
    assert_int_equal(send_hold(fx, &units), HF_CODE(INVALID_ARGUMENT));
    assert_string_equal(fx->answer->error->field, "units[0].count");
    fx->code = 99;
    assert_int_equal(send_hold(fx, &units), HF_CODE(INTERNAL));
    fx->code = 0;
}

/* ---- argv.c ---- */

static void argv_builds_grows_and_refuses(void **state) {
    (void)state;
    struct hf_argv a;
    hf_argv_init(&a);
    hf_argv_add_str(&a, "tok");
    hf_argv_add_u64(&a, 0);
    hf_argv_add_u64(&a, 18446744073709551615ull);
    struct hf_strs s = hf_argv_strs(&a);
    assert_int_equal(s.n, 3);
    assert_memory_equal(s.v[1], "0", 1);
    assert_int_equal(s.lens[2], 20);
    assert_memory_equal(s.v[2], "18446744073709551615", 20);
    /* Past the inline room it grows, keeping what it had. */
    for (int i = 0; i < 40; i++) hf_argv_add(&a, "x", 1);
    s = hf_argv_strs(&a);
    assert_int_equal(s.n, 43);
    assert_memory_equal(s.v[0], "tok", 3);
    assert_memory_equal(s.v[42], "x", 1);
    assert_false(a.failed);
    hf_argv_free(&a);
    /* More numbers than it keeps: failed, sends nothing. */
    hf_argv_init(&a);
    for (int i = 0; i <= HF_ARGV_NUMBERS; i++) hf_argv_add_u64(&a, (uint64_t)i);
    assert_true(a.failed);
    assert_int_equal(hf_argv_strs(&a).n, 0);
    hf_argv_free(&a);
}

static int group_setup(void **state) {
    (void)state;
    hf_log_set_level(HF_LOG_ERROR);
    hf_metrics_set_ops(&fake_table);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(namespace_and_partition_for_every_kind, setup, teardown),
        cmocka_unit_test_setup_teardown(seats_items_keys_and_steps, setup, teardown),
        cmocka_unit_test_setup_teardown(seats_refuse_what_seats_lack, setup, teardown),
        cmocka_unit_test_setup_teardown(legs_are_seats_expanded_at_the_door, setup, teardown),
        cmocka_unit_test_setup_teardown(units_items_labels_counts_and_steps, setup, teardown),
        cmocka_unit_test_setup_teardown(units_refuse_what_pools_lack, setup, teardown),
        cmocka_unit_test_setup_teardown(names_only_and_capacity_needs, setup, teardown),
        cmocka_unit_test_setup_teardown(answers_name_the_item, setup, teardown),
        cmocka_unit_test(argv_builds_grows_and_refuses),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
