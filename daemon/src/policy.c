/* policy.c - calls the admit hooks a configuration file defined, in the
 * sandbox that ran it (lua_sandbox.c), and turns their answers into
 * verdicts. A hook returns true/nil (admit), false plus a reason (deny), or
 * a number (admit with that TTL, clamped to the namespace's bounds);
 * anything else, and any failure, refuses. Hooks share the loop (a budget of
 * time for all of them) and their failures are logged at a bounded rate. */
#include "policy.h"

#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "lua_sandbox.h"

#define MS 1000000 /* ns */

enum failure {
    FAIL_ERROR,
    FAIL_INSTRUCTIONS,
    FAIL_TIME,
    FAIL_MEMORY,
    FAIL_RESULT,
    FAIL_SHARE,
    FAIL_BROKEN,
    N_FAILURES, /* none */
};

static const char *const failure_text[N_FAILURES] = {
    [FAIL_ERROR] = "raised an error",
    [FAIL_INSTRUCTIONS] = "ran out of instructions",
    [FAIL_TIME] = "ran out of time",
    [FAIL_MEMORY] = "ran out of memory",
    [FAIL_RESULT] = "returned a bad value",
    [FAIL_SHARE] = "was not run",
    [FAIL_BROKEN] = "was not run",
};

/* One line per kind of failure at most every HF_HOOK_LOG_INTERVAL_S; the
 * next one says how many were not logged. */
static struct {
    uint64_t at;
    unsigned long more;
} logged[N_FAILURES];

static void log_failure(enum failure kind, const struct hf_namespace *ns, const char *why,
                        uint64_t now) {
    uint64_t interval = (uint64_t)HF_HOOK_LOG_INTERVAL_S * 1000 * MS;
    if (logged[kind].at && now - logged[kind].at < interval) {
        logged[kind].more++;
        return;
    }
    if (logged[kind].more)
        log_error("namespace '%s': admit hook %s: %s (and %lu more hooks %s in the last %d s)",
                  ns->name, failure_text[kind], why, logged[kind].more, failure_text[kind],
                  HF_HOOK_LOG_INTERVAL_S);
    else
        log_error("namespace '%s': admit hook %s: %s", ns->name, failure_text[kind], why);
    logged[kind].at = now;
    logged[kind].more = 0;
}

/* The hooks' share of the loop (policy.h): left_ns is the allowance, at the
 * time up to which time outside hooks has been credited. One for the
 * process: every config's hooks run on the one loop. */
static struct {
    uint64_t at;
    int64_t left_ns;
} share;

static int64_t share_refill(uint64_t now) {
    const int64_t burst = (int64_t)HF_HOOK_SHARE_BURST_MS * MS;
    if (!share.at) share.left_ns = burst;
    else share.left_ns += (int64_t)(now - share.at);
    if (share.left_ns > burst) share.left_ns = burst;
    share.at = now;
    return share.left_ns;
}

static void push_facts(lua_State *L, const struct hf_namespace *ns,
                       const struct hf_hold_facts *f) {
    lua_createtable(L, 0, 11);
    lua_pushstring(L, f->op ? f->op : "hold");
    lua_setfield(L, -2, "op");
    lua_pushstring(L, ns->name);
    lua_setfield(L, -2, "namespace");
    lua_pushstring(L, f->partition);
    lua_setfield(L, -2, "partition");
    lua_createtable(L, (int)f->n_ids, 0);
    for (size_t i = 0; i < f->n_ids; i++) {
        lua_pushstring(L, f->ids[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "ids");
    lua_pushinteger(L, f->ttl_ms);
    lua_setfield(L, -2, "ttl_ms");
    lua_pushstring(L, f->correlation_id);
    lua_setfield(L, -2, "correlation_id");
    lua_pushinteger(L, f->uid);
    lua_setfield(L, -2, "uid");
    lua_pushinteger(L, f->gid);
    lua_setfield(L, -2, "gid");
    if (f->idempotency_key) {
        lua_pushstring(L, f->idempotency_key);
        lua_setfield(L, -2, "idempotency_key");
    }
    if (f->reference) {
        lua_pushstring(L, f->reference);
        lua_setfield(L, -2, "reference");
    }
}

struct admit_call {
    const struct hf_namespace *ns;
    const struct hf_hold_facts *facts;
    uint32_t *ttl_ms;
    char *why;
    size_t whylen;
    enum hf_verdict verdict;
};

/* Everything that touches the Lua state, in protected mode: building the
 * facts can run out of memory, and so can reading a number as a reason. */
static int admit_protected(lua_State *L) {
    struct admit_call *c = lua_touserdata(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, c->ns->admit_hook);
    push_facts(L, c->ns, c->facts);
    lua_call(L, 1, 2);
    c->verdict = HF_ADMIT;
    if (lua_isboolean(L, -2) && !lua_toboolean(L, -2)) {
        const char *reason = lua_tostring(L, -1);
        snprintf(c->why, c->whylen, "%s", reason ? reason : "refused by the namespace's admit hook");
        c->verdict = HF_DENY;
    } else if (lua_isinteger(L, -2) && c->ttl_ms) {
        lua_Integer ttl = lua_tointeger(L, -2);
        if (ttl < c->ns->min_ttl_ms) ttl = c->ns->min_ttl_ms;
        if (ttl > c->ns->max_ttl_ms) ttl = c->ns->max_ttl_ms;
        *c->ttl_ms = (uint32_t)ttl;
    } else if (!lua_isnil(L, -2) && !lua_isboolean(L, -2) && !lua_isinteger(L, -2)) {
        snprintf(c->why, c->whylen, "admit hook returned a %s; expected boolean, nil or integer",
                 luaL_typename(L, -2));
        c->verdict = HF_HOOK_FAILED;
    }
    return 0;
}

/* Why a protected call failed, from the state's stop reason and status. */
static enum failure failure_of(const struct hf_lua *lua, lua_State *L, int status, char *why,
                               size_t whylen) {
    if (lua->stop != HF_LUA_RUNNING) {
        snprintf(why, whylen, "%s", lua->stop_msg);
        return lua->stop == HF_LUA_OUT_OF_INSTRUCTIONS ? FAIL_INSTRUCTIONS : FAIL_TIME;
    }
    if (status == LUA_ERRMEM) {
        snprintf(why, whylen,
                 "not enough memory (hooks may use %u MiB more than loading left, and no block "
                 "over %u MiB)",
                 HF_HOOK_MEMORY_HEADROOM >> 20, HF_HOOK_MAX_ALLOC >> 20);
        return FAIL_MEMORY;
    }
    const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    snprintf(why, whylen, "%s", msg ? msg : "(error object is not a string)");
    return FAIL_ERROR;
}

/* Spend what a call from start to end took out of the hooks' share. A call
 * that overran (a long C call, the process descheduled) leaves a debt, but
 * at most one burst of it. */
static void share_spend(uint64_t start, uint64_t end) {
    share.left_ns -= (int64_t)(end - start);
    if (share.left_ns < -(int64_t)HF_HOOK_SHARE_BURST_MS * MS)
        share.left_ns = -(int64_t)HF_HOOK_SHARE_BURST_MS * MS;
    share.at = end;
}

/* Run the hook within `budget_ns`; N_FAILURES when it answered, else why
 * not (in call->why). */
static enum failure call_hook(struct hf_lua *lua, struct admit_call *call, uint64_t start,
                              int64_t budget_ns) {
    enum failure failed = N_FAILURES;
    hf_lua_start(lua, HF_HOOK_INSTRUCTION_BUDGET, start, (uint64_t)budget_ns);
    int status = hf_lua_protected(lua, admit_protected, call);
    if (status == HF_LUA_PANICKED) {
        snprintf(call->why, call->whylen, "its Lua state panicked (see the log)");
        failed = FAIL_BROKEN;
    } else {
        if (status != LUA_OK)
            failed = failure_of(lua, lua->L, status, call->why, call->whylen);
        else if (call->verdict == HF_HOOK_FAILED)
            failed = FAIL_RESULT;
        lua_settop(lua->L, 0);
    }
    hf_lua_end(lua);
    return failed;
}

enum hf_verdict hf_policy_admit(const struct hf_config *cfg, const struct hf_namespace *ns,
                                const struct hf_hold_facts *facts, uint32_t *ttl_ms, char *why,
                                size_t whylen) {
    if (!ns->admit_hook || !cfg->lua) return HF_ADMIT;
    struct hf_lua *lua = cfg->lua;
    uint64_t start = hf_lua_now_ns();
    if (lua->broken) {
        snprintf(why, whylen, "its Lua state panicked earlier; reload the configuration");
        log_failure(FAIL_BROKEN, ns, why, start);
        return HF_HOOK_FAILED;
    }
    int64_t left = share_refill(start);
    if (left <= 0) {
        snprintf(why, whylen, "hooks have used up their share of the event loop (%d ms at a "
                              "stretch, about half of the time)", HF_HOOK_SHARE_BURST_MS);
        log_failure(FAIL_SHARE, ns, why, start);
        return HF_HOOK_FAILED;
    }
    int64_t budget = (int64_t)HF_HOOK_TIME_BUDGET_MS * MS;
    if (budget > left) budget = left;
    struct admit_call call = {ns, facts, ttl_ms, why, whylen, HF_HOOK_FAILED};
    enum failure failed = call_hook(lua, &call, start, budget);
    uint64_t end = hf_lua_now_ns();
    share_spend(start, end);
    if (failed != N_FAILURES) {
        log_failure(failed, ns, why, end);
        return HF_HOOK_FAILED;
    }
    return call.verdict;
}
