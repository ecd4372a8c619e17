/* Unit tests for config.c: defaults, bounds, line numbers, sandbox, what a
 * reload applies, and the settings table in docs/operations.md. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "log.h"
#include "token.h"

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
    /* Pools keep their capacity in PostgreSQL. */
    assert_null(load("return {\n namespaces = {\n  ga = { kind = 'pools' } } }", err));
    assert_non_null(strstr(err, "t.lua:3: key 'namespaces.ga.kind': \"pools\" needs postgres.dsn"));
    assert_null(load("return { namespaces = { ga = { kind = 'pool' } } }", err));
    assert_non_null(strstr(err, "must be one of seats, pools"));
    struct hf_config *cfg = load("return { postgres = { dsn = 'dbname=hf' },"
                                 " namespaces = { ga = { kind = 'pools' }, seat = {} } }", err);
    assert_non_null(cfg);
    assert_int_equal(hf_config_namespace(cfg, "ga")->kind, HF_KIND_POOLS);
    assert_int_equal(hf_config_namespace(cfg, "seat")->kind, HF_KIND_SEATS);
    hf_config_unref(cfg);
}

static void metrics_http_address(void **state) {
    (void)state;
    char err[512] = "";
    struct hf_config *cfg = load("return { namespaces = { a = {} } }", err);
    assert_non_null(cfg);
    assert_false(cfg->metrics_http); /* off unless asked for, loopback when on */
    assert_string_equal(cfg->metrics_http_address, "127.0.0.1:9464");
    assert_false(cfg->log_probes);
    hf_config_unref(cfg);
    static const char *const good[] = {"0.0.0.0:9464", "127.0.0.1:0", "[::1]:9464", "[::]:65535",
                                       "10.1.2.3:80"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "return { namespaces = { a = {} }, metrics = { http = true, http_address = '%s' } }",
                 good[i]);
        cfg = load(text, err);
        if (!cfg) fail_msg("%s: %s", good[i], err);
        assert_true(cfg->metrics_http);
        assert_string_equal(cfg->metrics_http_address, good[i]);
        hf_config_unref(cfg);
    }
    static const char *const bad[] = {"localhost:9464", "127.0.0.1", "127.0.0.1:", ":9464",
                                      "127.0.0.1:65536", "127.0.0.1:9x", "::1:9464",
                                      "[::1]9464", "[127.0.0.1]:1", "unix:/run/m.sock",
                                      "127.0.0.1:123456"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "return { namespaces = { a = {} },\n metrics = { http = true,\n"
                 " http_address = '%s' } }",
                 bad[i]);
        if (load(text, err)) fail_msg("%s was accepted", bad[i]);
        assert_non_null(strstr(err, "t.lua:3: key 'metrics.http_address': must be"));
    }
    /* An address without the listener is a mistake, not a silent default. */
    assert_null(load("return { namespaces = { a = {} }, metrics = { http_address = '0.0.0.0:1' } }",
                     err));
    assert_non_null(strstr(err, "only used with metrics.http = true"));
}

static void redis_tls_settings(void **state) {
    (void)state;
    char err[512] = "";
    struct hf_config *cfg = load("return { namespaces = { a = {} } }", err);
    assert_non_null(cfg);
    assert_false(cfg->redis_tls);
    assert_true(cfg->redis_tls_verify);
    hf_config_unref(cfg);
    cfg = load("return { namespaces = { a = {} }, redis = { tls = true, tls_ca_file = '/ca',\n"
               "  tls_server_name = 'r.example', tls_cert_file = '/c', tls_key_file = '/k' } }",
               err);
    assert_non_null(cfg);
    assert_string_equal(cfg->redis_tls_ca_file, "/ca");
    assert_string_equal(cfg->redis_tls_server_name, "r.example");
    hf_config_unref(cfg);
    /* The TLS details without TLS are mistakes, not silently ignored. */
    assert_null(load("return { namespaces = { a = {} },\n redis = { tls_ca_file = '/ca' } }", err));
    assert_non_null(strstr(err, "t.lua:2: key 'redis.tls_ca_file': is only used with redis.tls"));
    assert_null(load("return { namespaces = { a = {} }, redis = { tls_verify = false } }", err));
    assert_non_null(strstr(err, "key 'redis.tls_verify': is only used with redis.tls"));
    assert_null(load("return { namespaces = { a = {} }, redis = { tls = true,"
                     " tls_cert_file = '/c' } }", err));
    assert_non_null(strstr(err, "key 'redis.tls_cert_file': needs redis.tls_key_file"));
    assert_null(load("return { namespaces = { a = {} }, redis = { tls = true,"
                     " tls_key_file = '/k' } }", err));
    assert_non_null(strstr(err, "key 'redis.tls_key_file': needs redis.tls_cert_file"));
    /* Redis serves TLS on TCP only. */
    assert_null(load("return { namespaces = { a = {} }, redis = { tls = true,"
                     " address = 'unix:/r.sock' } }", err));
    assert_non_null(strstr(err, "key 'redis.address': must be \"host:port\" with redis.tls"));
    assert_null(load("return { namespaces = { a = {} }, redis = { tls = true, cluster = true,"
                     " seeds = { 'h:1', 'unix:/r.sock' } } }", err));
    assert_non_null(strstr(err, "key 'redis.seeds[2]': must be \"host:port\" with redis.tls"));
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

/* ---- what a reload applies ---- */

static struct hf_config *load_with(const char *sections) {
    char text[1024], err[512] = "";
    snprintf(text, sizeof text, "return { %s%snamespaces = { a = {} } }", sections,
             *sections ? ", " : "");
    struct hf_config *cfg = load(text, err);
    if (!cfg) fail_msg("%s: %s", text, err);
    return cfg;
}

/* Every setting outside namespaces, with a change to it and whether it needs
 * a restart, as the issue "One way through the daemon" settles it. */
static const struct {
    const char *name;
    const char *before, *after;
    bool restart;
} settings[] = {
    {"socket.path", "", "socket = { path = '/tmp/o.sock' }", true},
    {"socket.mode", "", "socket = { mode = '0600' }", true},
    {"socket.group", "", "socket = { group = 'holdfast' }", true},
    {"socket.allow_uids", "", "socket = { allow_uids = { 0 } }", false},
    {"socket.allow_gids", "", "socket = { allow_gids = { 0 } }", false},
    {"redis.address", "", "redis = { address = 'unix:/tmp/r.sock' }", true},
    {"redis.username", "", "redis = { username = 'u' }", true},
    {"redis.password", "", "redis = { password = 'p' }", true},
    {"redis.db", "", "redis = { db = 3 }", true},
    {"redis.pool_size", "", "redis = { pool_size = 3 }", true},
    {"redis.connect_timeout_ms", "", "redis = { connect_timeout_ms = 500 }", true},
    {"redis.command_timeout_ms", "", "redis = { command_timeout_ms = 500 }", false},
    {"redis.script_path", "", "redis = { script_path = 'eval' }", true},
    {"redis.release_path", "", "redis = { release_path = 'delex' }", true},
    {"redis.cluster", "", "redis = { cluster = true }", true},
    {"redis.seeds", "redis = { cluster = true }",
     "redis = { cluster = true, seeds = { 'h:1' } }", true},
    {"redis.tls", "", "redis = { tls = true }", true},
    {"redis.tls_ca_file", "redis = { tls = true }",
     "redis = { tls = true, tls_ca_file = '/ca.pem' }", true},
    {"redis.tls_ca_dir", "redis = { tls = true }",
     "redis = { tls = true, tls_ca_dir = '/etc/ssl/certs' }", true},
    {"redis.tls_cert_file", "redis = { tls = true, tls_cert_file = '/a', tls_key_file = '/k' }",
     "redis = { tls = true, tls_cert_file = '/b', tls_key_file = '/k' }", true},
    {"redis.tls_key_file", "redis = { tls = true, tls_cert_file = '/c', tls_key_file = '/a' }",
     "redis = { tls = true, tls_cert_file = '/c', tls_key_file = '/b' }", true},
    {"redis.tls_server_name", "redis = { tls = true }",
     "redis = { tls = true, tls_server_name = 'redis.example' }", true},
    {"redis.tls_verify", "redis = { tls = true }",
     "redis = { tls = true, tls_verify = false }", true},
    {"postgres.dsn", "", "postgres = { dsn = 'dbname=x' }", true},
    {"postgres.pool_size", "", "postgres = { pool_size = 3 }", true},
    {"postgres.connect_timeout_ms", "", "postgres = { connect_timeout_ms = 500 }", true},
    {"postgres.statement_timeout_ms", "", "postgres = { statement_timeout_ms = 500 }", true},
    {"postgres.prepared_statements", "", "postgres = { prepared_statements = false }", true},
    {"postgres.idempotency_retention_s", "", "postgres = { idempotency_retention_s = 3600 }",
     true},
    {"limits.max_frame_bytes", "", "limits = { max_frame_bytes = 2048 }", false},
    {"limits.max_inflight_per_conn", "", "limits = { max_inflight_per_conn = 2 }", false},
    {"limits.max_connections", "", "limits = { max_connections = 2 }", false},
    {"limits.max_ids", "", "limits = { max_ids = 2 }", false},
    {"limits.default_timeout_ms", "", "limits = { default_timeout_ms = 100 }", false},
    {"limits.max_timeout_ms", "", "limits = { max_timeout_ms = 40000 }", false},
    {"limits.min_timeout_ms", "", "limits = { min_timeout_ms = 20 }", false},
    {"limits.drain_timeout_ms", "", "limits = { drain_timeout_ms = 0 }", false},
    {"limits.max_connections_per_uid", "", "limits = { max_connections_per_uid = 0 }", false},
    {"limits.max_queued_bytes", "", "limits = { max_queued_bytes = 1048576 }", false},
    {"limits.slow_reader_timeout_ms", "", "limits = { slow_reader_timeout_ms = 100 }", false},
    {"limits.frame_timeout_ms", "", "limits = { frame_timeout_ms = 100 }", false},
    {"limits.idle_timeout_ms", "", "limits = { idle_timeout_ms = 100 }", false},
    {"log.level", "", "log = { level = 'debug' }", false},
    {"log.fingerprint_key", "", "log = { fingerprint_key = 'k' }", false},
    {"log.probes", "", "log = { probes = true }", false},
    {"log.requests", "", "log = { requests = 'errors' }", false},
    {"log.requests_sample", "", "log = { requests_sample = 10 }", false},
    {"loop.busy_poll_us", "", "loop = { busy_poll_us = 50 }", false},
    {"metrics.http", "", "metrics = { http = true }", true},
    {"metrics.http_address", "metrics = { http = true }",
     "metrics = { http = true, http_address = '[::1]:9464' }", true},
};
#define N_SETTINGS (sizeof settings / sizeof settings[0])

static const char *const namespace_settings[] = {
    "default_ttl_ms", "min_ttl_ms", "max_ttl_ms", "confirmable", "confirm_window_ms",
    "confirmed_marker_ttl_ms", "on_redis_down", "min_replicas_ack", "replicas_ack_timeout_ms",
    "max_legs", "admit", "kind", "session_ttl_ms",
};
#define N_NAMESPACE_SETTINGS (sizeof namespace_settings / sizeof namespace_settings[0])

static void each_setting_is_reported_by_its_own_name(void **state) {
    (void)state;
    for (size_t i = 0; i < N_SETTINGS; i++) {
        struct hf_config *a = load_with(settings[i].before);
        struct hf_config *b = load_with(settings[i].after);
        const char *names[64] = {NULL};
        size_t n = hf_config_restart_only_changes(a, b, names, 64);
        if (settings[i].restart) {
            if (n != 1 || strcmp(names[0], settings[i].name) != 0)
                fail_msg("%s: restart-only changes %zu, first %s", settings[i].name, n,
                         n ? names[0] : "-");
        } else if (n != 0) {
            fail_msg("%s reloads, yet %s was reported as restart-only", settings[i].name,
                     names[0]);
        }
        n = hf_config_changes(a, b, names, 64);
        if (n != 1 || strcmp(names[0], settings[i].name) != 0)
            fail_msg("%s: changes %zu, first %s", settings[i].name, n, n ? names[0] : "-");
        /* Symmetric, and a config equals itself. */
        assert_int_equal(hf_config_changes(b, a, names, 64), 1);
        assert_int_equal(hf_config_changes(b, b, names, 64), 0);
        hf_config_unref(a);
        hf_config_unref(b);
    }
}

static void restart_only_changes_are_exact(void **state) {
    (void)state;
    const char *both = "socket = { group = 'g', allow_uids = { 0, 1000 } },"
                       " redis = { address = '10.0.0.1:6379', password = 'secret',"
                       " cluster = true, seeds = { 'a:1', 'b:2' } },"
                       " postgres = { dsn = 'dbname=hf' }, log = { fingerprint_key = 'k' }";
    struct hf_config *a = load_with(both);
    struct hf_config *b = load_with(both);
    const char *names[64];
    assert_int_equal(hf_config_restart_only_changes(a, b, names, 64), 0);
    assert_int_equal(hf_config_changes(a, b, names, 64), 0);
    hf_config_unref(b);

    /* A reloadable change next to a restart-only one: only the latter. */
    b = load_with("socket = { group = 'g', allow_uids = { 0, 1000 } },"
                  " redis = { address = '10.0.0.2:6379', password = 'secret',"
                  " command_timeout_ms = 50, cluster = true, seeds = { 'a:1', 'b:2' } },"
                  " postgres = { dsn = 'dbname=hf' }, log = { fingerprint_key = 'k' }");
    assert_int_equal(hf_config_restart_only_changes(a, b, names, 64), 1);
    assert_string_equal(names[0], "redis.address");
    assert_int_equal(hf_config_changes(a, b, names, 64), 2);
    assert_string_equal(names[0], "redis.address");
    assert_string_equal(names[1], "redis.command_timeout_ms");
    /* More changes than room: the count still says how many. */
    names[1] = NULL;
    assert_int_equal(hf_config_changes(a, b, names, 1), 2);
    assert_null(names[1]);
    hf_config_unref(a);
    hf_config_unref(b);
}

static size_t changes_between(const char *x, const char *y, const char **names) {
    struct hf_config *a = load_with(x), *b = load_with(y);
    size_t n = hf_config_changes(a, b, names, 8);
    hf_config_unref(a);
    hf_config_unref(b);
    return n;
}

static void lists_and_unset_strings_compare_by_content(void **state) {
    (void)state;
    const char *names[8];
    /* String lists: same entries equal; order, length and content count. */
    const char *seeds = "redis = { cluster = true, seeds = { 'a:1', 'b:2' } }";
    assert_int_equal(changes_between(seeds, seeds, names), 0);
    assert_int_equal(changes_between(seeds, "redis = { cluster = true, seeds = { 'b:2', 'a:1' } }",
                                     names), 1);
    assert_string_equal(names[0], "redis.seeds");
    assert_int_equal(changes_between(seeds, "redis = { cluster = true, seeds = { 'a:1' } }",
                                     names), 1);
    assert_int_equal(changes_between(seeds, "redis = { cluster = true, seeds = { 'a:1', 'b:3' } }",
                                     names), 1);
    assert_int_equal(changes_between(seeds, "redis = { cluster = true, seeds = {} }", names), 1);
    assert_int_equal(changes_between("redis = { cluster = true, seeds = {} }",
                                     "redis = { cluster = true }", names), 0);
    /* Id lists likewise. */
    const char *uids = "socket = { allow_uids = { 0, 1000 } }";
    assert_int_equal(changes_between(uids, uids, names), 0);
    assert_int_equal(changes_between(uids, "socket = { allow_uids = { 1000, 0 } }", names), 1);
    assert_string_equal(names[0], "socket.allow_uids");
    assert_int_equal(changes_between(uids, "socket = { allow_uids = { 0 } }", names), 1);
    assert_int_equal(changes_between(uids, "socket = { allow_uids = { 0, 1001 } }", names), 1);
    assert_int_equal(changes_between("socket = { allow_gids = {} }", "", names), 0);
    /* Unset and set strings. */
    const char *pw = "redis = { password = 'p' }";
    assert_int_equal(changes_between("", pw, names), 1);
    assert_string_equal(names[0], "redis.password");
    assert_int_equal(changes_between(pw, "", names), 1);
    assert_int_equal(changes_between(pw, pw, names), 0);
    assert_int_equal(changes_between(pw, "redis = { password = 'q' }", names), 1);
    assert_int_equal(changes_between("", "", names), 0);
}

/* What the warning says goes to stderr; catch it in a file. */
static char *warnings_for(const struct hf_config *a, const struct hf_config *b) {
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    hf_log_flush();
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
    hf_config_warn_restart_only(a, b);
    hf_log_flush();
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    static char text[4096];
    rewind(tmp);
    size_t n = fread(text, 1, sizeof text - 1, tmp);
    text[n] = '\0';
    fclose(tmp);
    return text;
}

static void warnings_name_settings_never_values(void **state) {
    (void)state;
    struct hf_config *a = load_with("redis = { password = 'old-secret' },"
                                    " postgres = { dsn = 'password=pg-secret' }");
    struct hf_config *b = load_with("redis = { password = 'new-secret', connect_timeout_ms = 70 },"
                                    " postgres = { dsn = 'password=pg-other' },"
                                    " limits = { max_ids = 5 }");
    const char *text = warnings_for(a, b);
    assert_non_null(strstr(text, "config reload: redis.password changed; it takes effect on "
                                 "restart\n"));
    assert_non_null(strstr(text, "config reload: redis.connect_timeout_ms changed"));
    assert_non_null(strstr(text, "config reload: postgres.dsn changed"));
    assert_null(strstr(text, "max_ids"));
    assert_null(strstr(text, "secret"));
    assert_null(strstr(text, "pg-other"));
    size_t lines = 0;
    for (const char *p = text; *p; p++) lines += *p == '\n';
    assert_int_equal(lines, 3);
    assert_string_equal(warnings_for(a, a), "");
    hf_config_unref(a);
    hf_config_unref(b);
}

static void fingerprint_key_can_change_while_running(void **state) {
    (void)state;
    const char *t = "5.AAAAAAAAAAAAAAAAAAAAAA";
    char random1[HF_FINGERPRINT_CHARS + 1], keyed[HF_FINGERPRINT_CHARS + 1],
        random2[HF_FINGERPRINT_CHARS + 1], keyed2[HF_FINGERPRINT_CHARS + 1];
    assert_int_equal(hf_token_init(NULL), 0);
    hf_token_fingerprint(t, strlen(t), random1);
    assert_int_equal(hf_token_set_fingerprint_key("operator key"), 0);
    hf_token_fingerprint(t, strlen(t), keyed);
    assert_string_not_equal(random1, keyed);
    /* Back to no key: this process's random key again, not a new one. */
    assert_int_equal(hf_token_set_fingerprint_key(NULL), 0);
    hf_token_fingerprint(t, strlen(t), random2);
    assert_string_equal(random1, random2);
    assert_int_equal(hf_token_set_fingerprint_key("operator key"), 0);
    hf_token_fingerprint(t, strlen(t), keyed2);
    assert_string_equal(keyed, keyed2);
}

/* The rows with an apply hook reach the modules that keep them (log.c's
 * level, token.c's key; busy_poll.c's window has nobody to read it here). */
static void kept_elsewhere_settings_are_applied(void **state) {
    (void)state;
    const char *t = "5.AAAAAAAAAAAAAAAAAAAAAA";
    char err[512] = "", applied[HF_FINGERPRINT_CHARS + 1], keyed[HF_FINGERPRINT_CHARS + 1];
    struct hf_config *cfg = load("return { namespaces = { a = {} }, loop = { busy_poll_us = 50 },"
                                 " log = { level = 'error', fingerprint_key = 'k2' } }",
                                 err);
    assert_non_null(cfg);
    assert_int_equal(hf_config_apply(cfg, err, sizeof err), 0);
    assert_false(hf_log_enabled(HF_LOG_WARN));
    assert_true(hf_log_enabled(HF_LOG_ERROR));
    hf_token_fingerprint(t, strlen(t), applied);
    assert_int_equal(hf_token_set_fingerprint_key("k2"), 0);
    hf_token_fingerprint(t, strlen(t), keyed);
    assert_string_equal(applied, keyed);
    hf_config_unref(cfg);
    /* The defaults go back in too: a reload that drops a setting resets it. */
    cfg = load("return { namespaces = { a = {} } }", err);
    assert_int_equal(hf_config_apply(cfg, err, sizeof err), 0);
    assert_true(hf_log_enabled(HF_LOG_INFO));
    assert_false(hf_log_enabled(HF_LOG_DEBUG));
    hf_token_fingerprint(t, strlen(t), applied);
    assert_string_not_equal(applied, keyed);
    hf_config_unref(cfg);
}

/* ---- the settings table ---- */

/* Splits a table row into its cells (at '|' not escaped as '\|'). */
static size_t row_cells(char *row, char **cells, size_t max) {
    size_t n = 0;
    char *p = row;
    if (*p != '|') return 0;
    p++;
    while (*p && n < max) {
        char *start = p;
        while (*p && !(*p == '|' && p[-1] != '\\')) p++;
        if (!*p) break;
        *p = '\0';
        while (*start == ' ') start++;
        char *end = p;
        while (end > start && end[-1] == ' ') *--end = '\0';
        cells[n++] = start;
        p++;
    }
    return n;
}

static void markdown_lists_every_setting_once(void **state) {
    (void)state;
    char *md = hf_config_settings_markdown();
    assert_non_null(md);
    const char *header = "| setting | type | default | bounds or choices | reload | "
                         "description |\n| --- |";
    assert_true(strncmp(md, header, strlen(header)) == 0);
    size_t expected = N_SETTINGS + N_NAMESPACE_SETTINGS;
    bool seen[N_SETTINGS + N_NAMESPACE_SETTINGS] = {false};
    size_t rows = 0, line_no = 0;
    char *save = NULL;
    for (char *line = strtok_r(md, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (line_no++ < 2) continue; /* header and rule */
        char *cells[8];
        if (row_cells(line, cells, 8) != 6) fail_msg("not six cells: %s", line);
        for (size_t c = 0; c < 6; c++)
            if (c != 3 && !*cells[c]) fail_msg("empty cell %zu: %s", c, line);
        rows++;
        char name[128];
        snprintf(name, sizeof name, "%s", cells[0]);
        size_t len = strlen(name);
        if (len < 3 || name[0] != '`' || name[len - 1] != '`') fail_msg("name: %s", line);
        name[len - 1] = '\0';
        const char *dotted = name + 1;
        size_t found = expected;
        bool restart = false;
        for (size_t i = 0; i < N_SETTINGS; i++)
            if (strcmp(dotted, settings[i].name) == 0) {
                found = i;
                restart = settings[i].restart;
            }
        for (size_t i = 0; i < N_NAMESPACE_SETTINGS; i++) {
            char ns[128];
            snprintf(ns, sizeof ns, "namespaces.<name>.%s", namespace_settings[i]);
            if (strcmp(dotted, ns) == 0) found = N_SETTINGS + i;
        }
        if (found == expected) fail_msg("unexpected setting %s", dotted);
        if (seen[found]) fail_msg("%s listed twice", dotted);
        seen[found] = true;
        assert_string_equal(cells[4], restart ? "restart" : "yes");
    }
    assert_int_equal(rows, expected);
    free(md);
}

/* docs/operations.md carries the table between these lines, with a blank
 * line on either side; tools/gen-settings-doc.sh writes it. */
#define BEGIN_MARK "<!-- settings:begin (generated by tools/gen-settings-doc.sh; do not edit) -->\n"
#define END_MARK "<!-- settings:end -->\n"

static void operations_md_has_the_current_table(void **state) {
    (void)state;
    const char *path = HF_SOURCE_DIR "/docs/operations.md";
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    static char doc[256 * 1024];
    size_t len = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    doc[len] = '\0';
    const char *begin = strstr(doc, BEGIN_MARK);
    if (!begin) fail_msg("%s: no line %s", path, BEGIN_MARK);
    assert_null(strstr(begin + 1, BEGIN_MARK));
    begin += strlen(BEGIN_MARK);
    const char *end = strstr(begin, END_MARK);
    if (!end) fail_msg("%s: no line %s after the begin line", path, END_MARK);
    char *md = hf_config_settings_markdown();
    assert_non_null(md);
    size_t md_len = strlen(md);
    bool same = (size_t)(end - begin) == md_len + 2 && begin[0] == '\n' &&
                memcmp(begin + 1, md, md_len) == 0 && begin[md_len + 1] == '\n';
    free(md);
    if (!same)
        fail_msg("docs/operations.md's settings table differs from the code; run "
                 "tools/gen-settings-doc.sh");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults),
        cmocka_unit_test(values_are_read),
        cmocka_unit_test(errors_name_line_and_key),
        cmocka_unit_test(metrics_http_address),
        cmocka_unit_test(redis_tls_settings),
        cmocka_unit_test(sandbox),
        cmocka_unit_test(each_setting_is_reported_by_its_own_name),
        cmocka_unit_test(restart_only_changes_are_exact),
        cmocka_unit_test(lists_and_unset_strings_compare_by_content),
        cmocka_unit_test(warnings_name_settings_never_values),
        cmocka_unit_test(fingerprint_key_can_change_while_running),
        cmocka_unit_test(kept_elsewhere_settings_are_applied),
        cmocka_unit_test(markdown_lists_every_setting_once),
        cmocka_unit_test(operations_md_has_the_current_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
