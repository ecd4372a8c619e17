/* Unit tests for config.c: defaults, bounds, line numbers, sandbox. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"

static struct hf_config *load(const char *text, char *err) {
    return hf_config_load_string("t.lua", text, err, 512);
}

static void defaults(void **state) {
    (void)state;
    char err[512] = "";
    struct hf_config *cfg = load("return { namespaces = { seat = {} } }", err);
    assert_non_null(cfg);
    assert_string_equal(cfg->socket_path, "/run/holdfast/holdfast.sock");
    assert_int_equal(cfg->socket_mode, 0660);
    assert_int_equal(cfg->max_ids, 64);
    assert_int_equal(cfg->max_frame_bytes, 65536);
    assert_null(cfg->pg_dsn);
    const struct hf_namespace *ns = hf_config_namespace(cfg, "seat");
    assert_non_null(ns);
    assert_int_equal(ns->on_redis_down, HF_FAIL_CLOSED);
    assert_int_equal(ns->min_ttl_ms, 10);
    assert_false(ns->confirmable);
    assert_null(hf_config_namespace(cfg, "stock"));
    hf_config_unref(cfg);
}

static void values_are_read(void **state) {
    (void)state;
    char err[512] = "";
    struct hf_config *cfg = load(
        "return {\n"
        "  socket = { path = '/tmp/x.sock', mode = '0600', allow_uids = { 0, 1000 } },\n"
        "  redis = { address = '10.0.0.1:6380', pool_size = 4, release_path = 'delex' },\n"
        "  postgres = { dsn = 'dbname=hf' },\n"
        "  namespaces = { ['product-modify'] = { on_redis_down = 'best_effort',\n"
        "                   default_ttl_ms = 100, min_ttl_ms = 50, max_ttl_ms = 200 } },\n"
        "}\n",
        err);
    assert_non_null(cfg);
    assert_int_equal(cfg->socket_mode, 0600);
    assert_int_equal(cfg->n_allow_uids, 2);
    assert_int_equal(cfg->allow_uids[1], 1000);
    assert_int_equal(cfg->redis_pool_size, 4);
    assert_int_equal(cfg->release_path, HF_RELEASE_DELEX);
    assert_string_equal(cfg->pg_dsn, "dbname=hf");
    assert_int_equal(hf_config_namespace(cfg, "product-modify")->on_redis_down, HF_BEST_EFFORT);
    hf_config_unref(hf_config_ref(cfg));
    hf_config_unref(cfg);
}

static void errors_name_line_and_key(void **state) {
    (void)state;
    char err[512] = "";
    assert_null(load("return {\n  namespaces = {\n    seat = {\n      max_ttl_ms = -1 } } }", err));
    assert_non_null(strstr(err, "t.lua:4: key 'namespaces.seat.max_ttl_ms'"));
    assert_null(load("return {\n redis = { pool_size = 1.5 },\n namespaces = { a = {} } }", err));
    assert_non_null(strstr(err, "t.lua:2: key 'redis.pool_size': must be a whole number"));
    assert_null(load("return { namespaces = { a = {} }, extra = 1 }", err));
    assert_non_null(strstr(err, "key 'extra': unknown top-level key"));
    assert_null(load("return { namespaces = { a = {} }, limits = { default_timeout_ms = 9,"
                     " max_timeout_ms = 5 } }", err));
    assert_non_null(strstr(err, "limits.default_timeout_ms"));
    assert_null(load("return { namespaces = { a = {} }, socket = { mode = '999' } }", err));
    assert_non_null(strstr(err, "octal"));
    assert_null(load("return { namespaces = { a = {} }, redis = { address = 'nowhere' } }", err));
    assert_non_null(strstr(err, "redis.address"));
}

static void sandbox(void **state) {
    (void)state;
    char err[512] = "";
    assert_null(load("return { namespaces = { a = { x = io.read() } } }", err));
    assert_non_null(strstr(err, "t.lua:1:"));
    assert_null(load("local s = string.rep('x', 64 * 1024 * 1024)\nreturn {}", err));
    assert_non_null(strstr(err, "t.lua"));
    assert_null(load("local t = {} while true do t[#t + 1] = 1 end", err));
    /* bytecode is refused outright */
    assert_null(load("\x1bLua", err));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults),
        cmocka_unit_test(values_are_read),
        cmocka_unit_test(errors_name_line_and_key),
        cmocka_unit_test(sandbox),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
