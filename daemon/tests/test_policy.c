/* Unit tests for policy.c and the sandbox's limits in lua_sandbox.c: hooks
 * called through hf_policy_admit on configs from hf_config_load_string. A hook
 * that keeps what it is given, a slow pattern, an endless loop however
 * wrapped, a panic: each fails the call, in bounded time, and never aborts.
 * The bounded pattern matcher is compared with Lua's own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <lauxlib.h>
#include <lualib.h>

#include "config.h"
#include "lua_sandbox.h"
#include "policy.h"

static double now_ms(void) { return (double)hf_lua_now_ns() / 1e6; }

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* Refill the hooks' time share (HF_HOOK_SHARE_BURST_MS refills at half
 * speed) before a call meant to run into its own limits. */
static void rest(void) { sleep_ms(2 * HF_HOOK_SHARE_BURST_MS + 5); }

/* A config with one namespace "seat" whose table body is `ns`, and `top`
 * before the return (globals the hook uses). */
static struct hf_config *hooked(const char *top, const char *ns) {
    char text[4096], err[512] = "";
    snprintf(text, sizeof text, "%s\nreturn { namespaces = { seat = { %s } } }\n", top, ns);
    struct hf_config *cfg = hf_config_load_string("t.lua", text, err, sizeof err);
    if (!cfg) fail_msg("%s\n%s", err, text);
    assert_non_null(cfg->lua);
    return cfg;
}

struct result {
    enum hf_verdict verdict;
    uint32_t ttl;
    char why[256];
    double ms;
};

static struct result admit_ids(struct hf_config *cfg, const char *partition, char *const *ids,
                               size_t n_ids) {
    struct result r = {.ttl = 30000};
    struct hf_hold_facts facts = {.op = "hold", .partition = partition, .ids = ids,
                                  .n_ids = n_ids, .ttl_ms = 30000, .correlation_id = "cid-1",
                                  .uid = 1000, .gid = 1000};
    double t0 = now_ms();
    r.verdict = hf_policy_admit(cfg, hf_config_namespace(cfg, "seat"), &facts, &r.ttl, r.why,
                                sizeof r.why);
    r.ms = now_ms() - t0;
    return r;
}

/* As calls come in a daemon: with the loop doing other work half the time
 * (tight loops of calls would use up the hooks' share of the loop). */
static struct result paced(struct result r) {
    long us = (long)(r.ms * 1000) + 50;
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0) {
    }
    return r;
}

static struct result admit(struct hf_config *cfg, const char *partition) {
    static char *ids[] = {"1", "2"};
    return admit_ids(cfg, partition, ids, 2);
}

/* The hook failed, with `what` in its reason, within `ms`. */
static void assert_failed(const struct result *r, const char *what, double ms) {
    if (r->verdict != HF_HOOK_FAILED) fail_msg("verdict %d (%s), expected a failure", r->verdict,
                                               r->why);
    if (!strstr(r->why, what)) fail_msg("reason \"%s\" lacks \"%s\"", r->why, what);
    if (r->ms > ms) fail_msg("took %.1f ms, limit %.0f (%s)", r->ms, ms, r->why);
}

/* Generous for sanitizers and busy machines; the budget is 10 ms. */
#define SLACK_MS 40.0

static void verdicts(void **state) {
    (void)state;
    struct hf_config *cfg = hooked("", "min_ttl_ms = 100, max_ttl_ms = 5000, default_ttl_ms = 1000, admit = function(h)\n"
                                       "  if h.partition == 'no' then return false, 'full' end\n"
                                       "  if h.partition == 'num' then return false, 42 end\n"
                                       "  if h.partition == 'ttl' then return 999999 end\n"
                                       "  if h.partition == 'odd' then return {} end\n"
                                       "  return #h.ids == 2 and h.uid == 1000\n"
                                       "end");
    struct result r = admit(cfg, "p");
    assert_int_equal(r.verdict, HF_ADMIT);
    r = admit(cfg, "no");
    assert_int_equal(r.verdict, HF_DENY);
    assert_string_equal(r.why, "full");
    r = admit(cfg, "num");
    assert_int_equal(r.verdict, HF_DENY);
    assert_string_equal(r.why, "42");
    r = admit(cfg, "ttl");
    assert_int_equal(r.verdict, HF_ADMIT);
    assert_int_equal(r.ttl, 5000);
    r = admit(cfg, "odd");
    assert_failed(&r, "returned a table", 1000);
    hf_config_unref(cfg);
}

/* The hook: it keeps every argument. Each fact is made big (64
 * fresh ids of 120 bytes) to reach the cap soon. It reaches the hooks'
 * memory cap; from then on every call fails, with a memory error, and
 * nothing aborts. (A call may also run out of time when the machine is
 * busy: the budget is wall-clock time.) */
static void hook_that_keeps_its_arguments(void **state) {
    (void)state;
    struct hf_config *cfg =
        hooked("kept = {}", "admit = function(hold) kept[#kept + 1] = hold return true end");
    char *ids[64];
    for (int i = 0; i < 64; i++) ids[i] = malloc(121);
    int admitted = 0, calls = 0, out_of_memory = 0;
    rest();
    for (; calls < 5000 && out_of_memory == 0; calls++) {
        for (int i = 0; i < 64; i++) snprintf(ids[i], 121, "%03d-%0116d", i, calls);
        struct result r = paced(admit_ids(cfg, "p", ids, 64));
        if (r.verdict == HF_ADMIT) admitted++;
        else if (strstr(r.why, "not enough memory")) out_of_memory++;
        else assert_failed(&r, "time budget exceeded", 1000);
    }
    assert_int_equal(out_of_memory, 1);
    /* 4 MiB over the baseline at ~10 KiB a fact */
    if (admitted < 300) fail_msg("only %d facts kept", admitted);
    assert_true(cfg->lua->mem_used <= cfg->lua->mem_limit);
    double worst = 0;
    for (int n = 0; n < 200; n++, calls++) {
        for (int i = 0; i < 64; i++) snprintf(ids[i], 121, "%03d-%0116d", i, calls);
        struct result r = paced(admit_ids(cfg, "p", ids, 64));
        assert_int_equal(r.verdict, HF_HOOK_FAILED);
        if (strstr(r.why, "not enough memory")) out_of_memory++;
        if (r.ms > worst) worst = r.ms;
    }
    assert_true(out_of_memory > 150);
    print_message("%d holds kept, then 200 failed, the slowest in %.2f ms\n", admitted, worst);
    for (int i = 0; i < 64; i++) free(ids[i]);
    hf_config_unref(cfg);
}

/* Garbage is collected: a hook that makes 256 KiB of it per call never
 * runs out. */
static void garbage_is_reclaimed(void **state) {
    (void)state;
    struct hf_config *cfg = hooked("", "admit = function(h)\n"
                                       "  local s = string.rep(h.partition, 4096)\n"
                                       "  return #s == 256 * 1024\n"
                                       "end");
    rest();
    double worst = 0;
    for (int i = 0; i < 200; i++) {
        struct result r =
            paced(admit(cfg, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
        if (r.verdict != HF_ADMIT && !strstr(r.why, "time budget exceeded"))
            fail_msg("call %d: %s", i, r.why);
        if (r.ms > worst) worst = r.ms;
    }
    print_message("200 calls, 50 MiB of garbage, the slowest call %.2f ms\n", worst);
    hf_config_unref(cfg);
}

/* One string.rep("a", 40000):find(".-b") kept the loop for 5.4 s. */
static void slow_pattern_stops_on_time(void **state) {
    (void)state;
    static const char *const hooks[] = {
        "return string.rep('a', 40000):find('.-b')",
        "return string.rep('a', 40000):match('.-b')",
        "for _ in string.rep('a', 40000):gmatch('.-b') do end",
        "return string.rep('a', 40000):gsub('.-b', 'x')",
        "return string.rep('a', 30):find(string.rep('a-', 12) .. 'b')",
        "return string.rep('(', 60000):find('%b()')", /* quadratic: no ')' anywhere */
    };
    for (size_t i = 0; i < sizeof hooks / sizeof hooks[0]; i++) {
        char ns[256];
        snprintf(ns, sizeof ns, "admit = function(h) %s end", hooks[i]);
        struct hf_config *cfg = hooked("", ns);
        rest();
        struct result r = admit(cfg, "p");
        assert_failed(&r, "time budget exceeded", HF_HOOK_TIME_BUDGET_MS + SLACK_MS);
        hf_config_unref(cfg);
    }
}

/* A table whose border (#t) is 2^40 though it has 41 entries. */
#define BORDER "local t = {} for i = 1, 40 do t[1 << i] = i end t[1] = 1 "

/* Whether why contains one of the '|'-separated phrases. */
static bool says_one_of(const char *why, const char *phrases) {
    while (*phrases) {
        const char *bar = strchr(phrases, '|');
        size_t n = bar ? (size_t)(bar - phrases) : strlen(phrases);
        char one[128];
        snprintf(one, sizeof one, "%.*s", (int)n, phrases);
        if (strstr(why, one))
            return true;
        phrases += n + (bar != NULL);
    }
    return false;
}

/* Endless loops end, however they try to carry on. */
static void endless_loops_end(void **state) {
    (void)state;
    static const struct {
        const char *code, *why;
    } cases[] = {
        {"while true do end", "budget exceeded"},
        {"while true do pcall(function() while true do end end) end", "budget exceeded"},
        {"while true do xpcall(function() while true do end end, function() return 1 end) end",
         "budget exceeded"},
        {"local function f() return pcall(f) end while true do f() end", "budget exceeded"},
        /* a metamethod written in C keeps table.insert's loop in C */
        {"local t = setmetatable({}, {__len = function() return 1 << 40 end,"
         " __index = rawequal}) table.insert(t, 1, 1)", "__index metamethod"},
        /* a border far out: #t is 2^40 with 41 entries */
        {BORDER "table.insert(t, 1, true)", "table.insert: would touch"},
        {BORDER "table.remove(t, 1)", "table.remove: would touch"},
        {"table.move({}, 1, 1 << 50, 1, {})", "table.move: would touch"},
        {"table.unpack({}, 1, 1 << 30)", "table.unpack: would touch"},
        /* comparisons of long strings, all in C */
        {"local s, t = string.rep('a', 1 << 19), {} for i = 1, 20000 do t[i] = s end "
         "table.sort(t)", "budget exceeded"},
        {"local s = string.rep('1', 1 << 19) while true do utf8.len(s) end", "budget exceeded"},
        {"local s = string.rep('a', 1 << 19) while true do local _ = s:upper() end",
         "budget exceeded"},
        {"setmetatable({}, {__gc = function() while true do end end})", "no __gc"},
        {"return string.rep('ab', 1 << 20)", "string.rep: the result would be over"},
        {"local t = {} for i = 1, 1 << 17 do t[i] = i end", "not enough memory"},
        /* 512 Ki values need an 8 MiB stack: no block over 1 MiB */
        {"local s = string.rep('0123456789abcdef', 1 << 15) return s:byte(1, -1)",
         "string slice too long"},
        /* which bound a deep recursion meets first depends on the build's speed */
        {"local function f(n) return f(n + 1) + 1 end return f(1)",
         "not enough memory|budget exceeded"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char ns[512];
        snprintf(ns, sizeof ns, "admit = function(h) %s end", cases[i].code);
        struct hf_config *cfg = hooked("", ns);
        rest();
        struct result r = admit(cfg, "p");
        hf_config_unref(cfg);
        if (r.verdict != HF_HOOK_FAILED || !says_one_of(r.why, cases[i].why) ||
            r.ms > HF_HOOK_TIME_BUDGET_MS + SLACK_MS)
            fail_msg("%s: verdict %d after %.1f ms: %s", cases[i].code, r.verdict, r.ms, r.why);
    }
}

/* Lua's string.rep copies nothing n times for an empty result. */
static void empty_rep_is_quick(void **state) {
    (void)state;
    struct hf_config *cfg =
        hooked("", "admit = function(h) return string.rep('', 1 << 60) == '' and "
                   "string.rep('', 1 << 60, '') == '' end");
    rest();
    struct result r = admit(cfg, "p");
    assert_int_equal(r.verdict, HF_ADMIT);
    assert_true(r.ms < HF_HOOK_TIME_BUDGET_MS);
    hf_config_unref(cfg);
}

/* After a failure the same sandbox serves the next call. */
static void sandbox_survives_failures(void **state) {
    (void)state;
    struct hf_config *cfg = hooked("", "admit = function(h)\n"
                                       "  if h.partition == 'spin' then while true do end end\n"
                                       "  if h.partition == 'boom' then error('hook bug') end\n"
                                       "  return true\n"
                                       "end");
    rest();
    struct result r = admit(cfg, "spin");
    assert_failed(&r, "instruction budget exceeded", HF_HOOK_TIME_BUDGET_MS + SLACK_MS);
    r = admit(cfg, "boom");
    assert_failed(&r, "hook bug", 1000);
    r = admit(cfg, "ok");
    assert_int_equal(r.verdict, HF_ADMIT);
    hf_config_unref(cfg);
}

/* Slow hooks back to back drain the hooks' share of the loop: then calls
 * fail without running until it refills. */
static void time_share(void **state) {
    (void)state;
    struct hf_config *cfg =
        hooked("", "admit = function(h) if h.partition == 'slow' then "
                   "return string.rep('a', 40000):find('.-b') end return true end");
    rest();
    double t0 = now_ms();
    int failed_fast = 0;
    for (int i = 0; i < 20; i++) {
        struct result r = admit(cfg, "slow");
        assert_int_equal(r.verdict, HF_HOOK_FAILED);
        if (strstr(r.why, "share of the event loop")) failed_fast++;
    }
    double spent = now_ms() - t0;
    /* Without the share they would take 20 budgets, 200 ms; with it about
     * one burst, plus whatever the machine's scheduler adds (time outside
     * hooks earns allowance back). */
    if (failed_fast < 10 || spent > 10 * HF_HOOK_TIME_BUDGET_MS)
        fail_msg("20 slow calls held the loop for %.1f ms; %d refused", spent, failed_fast);
    rest();
    struct result r = admit(cfg, "fast");
    assert_int_equal(r.verdict, HF_ADMIT);
    hf_config_unref(cfg);
}

/* The panic handler jumps back to whoever set panic_jmp; the state is not
 * used again. */
static void panic_jumps_back(void **state) {
    (void)state;
    struct hf_config *cfg = hooked("", "admit = function(h) return true end");
    lua_State *L = cfg->lua->L;
    jmp_buf jb;
    cfg->lua->panic_jmp = &jb;
    if (setjmp(jb) == 0) {
        lua_pushstring(L, "unprotected");
        lua_error(L); /* no pcall around: Lua panics */
        fail_msg("lua_error returned");
    }
    cfg->lua->panic_jmp = NULL;
    assert_true(cfg->lua->broken);
    struct result r = admit(cfg, "p");
    assert_failed(&r, "panicked", 1000);
    hf_config_unref(cfg);
}

/* Loading runs in protected mode too, with the same library. */
static void loading_is_protected(void **state) {
    (void)state;
    char err[512] = "";
    struct hf_config *cfg = hf_config_load_string(
        "t.lua",
        "return { socket = { allow_uids = setmetatable({}, {__len = function() error('nope') "
        "end}) }, namespaces = { a = {} } }",
        err, sizeof err);
    assert_null(cfg);
    assert_non_null(strstr(err, "nope"));
    cfg = hf_config_load_string("t.lua", "setmetatable({}, {__gc = type})\nreturn {}", err,
                                sizeof err);
    assert_null(cfg);
    assert_non_null(strstr(err, "no __gc"));
    double t0 = now_ms();
    cfg = hf_config_load_string("t.lua", "local x = string.rep('a', 40000):find('.-b')\n"
                                         "return { namespaces = { a = {} } }",
                                err, sizeof err);
    assert_null(cfg);
    if (!strstr(err, "t.lua:1: time budget exceeded (2000 ms)")) fail_msg("%s", err);
    assert_true(now_ms() - t0 < 2000 + 1000);
}

/* ---- the bounded matcher against Lua's ---- */

static const char compare_script[] =
    "local out = {}\n"
    "local function ser(...)\n"
    "  local t = {}\n"
    "  for i = 1, select('#', ...) do\n"
    "    local v = select(i, ...)\n"
    "    t[#t + 1] = type(v) == 'string' and string.format('%q', v) or tostring(v)\n"
    "  end\n"
    "  return table.concat(t, ',')\n"
    "end\n"
    "local function try(f, ...)\n"
    "  local r = table.pack(pcall(f, ...))\n"
    "  if r[1] then return 'ok ' .. ser(table.unpack(r, 2, r.n)) end\n"
    "  return 'error ' .. tostring(r[2])\n"
    "end\n"
    "local function all(s, p, init)\n"
    "  local t = {}\n"
    "  for a, b, c in string.gmatch(s, p, init) do t[#t + 1] = ser(a, b, c) end\n"
    "  return table.concat(t, ';')\n"
    "end\n"
    "local function case(s, p)\n"
    "  local q = string.format('%q %q', s, p)\n"
    "  out[#out + 1] = q .. ' find ' .. try(string.find, s, p)\n"
    "  out[#out + 1] = q .. ' find3 ' .. try(string.find, s, p, 3)\n"
    "  out[#out + 1] = q .. ' find-2 ' .. try(string.find, s, p, -2)\n"
    "  out[#out + 1] = q .. ' find99 ' .. try(string.find, s, p, 99)\n"
    "  out[#out + 1] = q .. ' plain ' .. try(string.find, s, p, 1, true)\n"
    "  out[#out + 1] = q .. ' match ' .. try(string.match, s, p)\n"
    "  out[#out + 1] = q .. ' match2 ' .. try(string.match, s, p, 2)\n"
    "  out[#out + 1] = q .. ' gmatch ' .. try(all, s, p)\n"
    "  out[#out + 1] = q .. ' gmatch2 ' .. try(all, s, p, 2)\n"
    "  out[#out + 1] = q .. ' gsub0 ' .. try(string.gsub, s, p, '<%0>')\n"
    "  out[#out + 1] = q .. ' gsub1 ' .. try(string.gsub, s, p, '[%1%%]')\n"
    "  out[#out + 1] = q .. ' gsubf ' .. try(string.gsub, s, p, function(...) return ser(...) end)\n"
    "  out[#out + 1] = q .. ' gsubt ' .. try(string.gsub, s, p, {a = 'A', [1] = 'one'})\n"
    "  out[#out + 1] = q .. ' gsubn ' .. try(string.gsub, s, p, 'x', 1)\n"
    "  out[#out + 1] = q .. ' gsub5 ' .. try(string.gsub, s, p, 5)\n"
    "end\n"
    "local patterns = {\n"
    "  '', 'a', '.', '%a+', '[%a_][%w_]*', '^(%w+)%-(%d+)$', '()a()', '%bxy', '%b()',\n"
    "  '%f[%w]%w+', '%f[%W]', '(a)(b)%2%1', '(a*(.)%w(%s*))', '[^%s]+', '[a-c]+', '[]]',\n"
    "  '[^]]', '[a-]', '[%]]', '[%a-z]', 'a-b', 'a?b', 'a*', '^', '$', '^$', 'x$', '%',\n"
    "  '[a', '(', ')', '%1', '(()', '%b', '%bx', '%f', '%fa', '%g+', '%z', '%P+', '%x%X',\n"
    "  '^a', 'a$', '.-', '.-$', '(.-)%s*=%s*(.-)$', '%s*(%S+)%s*', '(%d+)%.(%d+)', '%.',\n"
    "  '%%', '%0', '(a)%1', '((a)(b))', '(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)', '[a-%%]',\n"
    "  '[%w-]+', '^vip%-', '\\0', '[\\0-\\1]', 'a\\0?', '%c', '%u%l*', '()', '(%a)()',\n"
    "  'a+?', 'a*-', '[^%a%d]', '%[(.-)%]', 'b*$', '^(a?)(a?)$',\n"
    "}\n"
    "local subjects = {\n"
    "  '', 'a', 'abc', 'hello world', '  key = value ', 'x(a(b)c)y', 'THE (quick) fox',\n"
    "  'a\\0b\\0', 'aaa', 'vip-123', 'a.b.c', 'ab12cd34', 'xay', 'ab-ba', '3.14',\n"
    "  '[x]]', 'abba', '\\1\\2',\n"
    "}\n"
    "for _, p in ipairs(patterns) do\n"
    "  for _, s in ipairs(subjects) do case(s, p) end\n"
    "end\n"
    "local tokens = {'a', 'b', '.', '%a', '%d', '[ab]', '[^a]', '(', ')', '*', '+', '-', '?',\n"
    "  '^', '$', '%b()', '%f[a]', '%1', '()', '%', ']', '[', '1'}\n"
    "local seed = 12345\n"
    "local function rnd(n)\n"
    "  seed = (seed * 1103515245 + 12345) % 2147483648\n"
    "  return seed % n + 1\n"
    "end\n"
    "local letters = {'a', 'b', '1', '(', ')', ' '}\n"
    "for _ = 1, 1500 do\n"
    "  local p, quantifiers = {}, 0\n"
    "  for _ = 1, rnd(6) do\n"
    "    local t = tokens[rnd(#tokens)]\n"
    "    if t == '*' or t == '+' or t == '-' then quantifiers = quantifiers + 1 end\n"
    "    if quantifiers <= 3 then p[#p + 1] = t end\n"
    "  end\n"
    "  local s = {}\n"
    "  for _ = 1, rnd(9) - 1 do s[#s + 1] = letters[rnd(#letters)] end\n"
    "  case(table.concat(s), table.concat(p))\n"
    "end\n"
    "return table.concat(out, '\\n')\n";

static char *run_compare_script(lua_State *L, size_t *len) {
    if (luaL_loadstring(L, compare_script) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK)
        fail_msg("compare script: %s", lua_tostring(L, -1));
    const char *s = lua_tolstring(L, -1, len);
    char *text = malloc(*len + 1);
    memcpy(text, s, *len + 1);
    lua_pop(L, 1);
    return text;
}

static void matcher_agrees_with_lua(void **state) {
    (void)state;
    lua_State *stock = luaL_newstate();
    luaL_openlibs(stock);
    size_t want_len, got_len;
    char *want = run_compare_script(stock, &want_len);
    lua_close(stock);

    struct hf_config *cfg = hooked("", "admit = function(h) return true end");
    struct hf_lua *sandbox = cfg->lua;
    sandbox->budget = 1L << 40; /* no per-call limits: this is not a hook call */
    sandbox->instructions = 0;
    sandbox->mem_limit = 256u << 20;
    sandbox->max_alloc = 0;
    char *got = run_compare_script(sandbox->L, &got_len);
    hf_config_unref(cfg);

    size_t same = 0;
    while (same < want_len && same < got_len && want[same] == got[same]) same++;
    if (same != want_len || same != got_len) {
        while (same > 0 && want[same - 1] != '\n') same--;
        fail_msg("first difference:\nlua:     %.300s\nsandbox: %.300s", want + same,
                 got + same);
    }
    size_t lines = 1;
    for (size_t i = 0; i < want_len; i++) lines += want[i] == '\n';
    assert_true(lines > 20000);
    print_message("%zu results agree\n", lines);
    free(want);
    free(got);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(verdicts),
        cmocka_unit_test(hook_that_keeps_its_arguments),
        cmocka_unit_test(garbage_is_reclaimed),
        cmocka_unit_test(slow_pattern_stops_on_time),
        cmocka_unit_test(endless_loops_end),
        cmocka_unit_test(empty_rep_is_quick),
        cmocka_unit_test(sandbox_survives_failures),
        cmocka_unit_test(time_share),
        cmocka_unit_test(panic_jumps_back),
        cmocka_unit_test(loading_is_protected),
        cmocka_unit_test(matcher_agrees_with_lua),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
