/* policy.c - calls the admit hooks a configuration file defined. A hook
 * returns true/nil (admit), false plus a reason (deny), or a number (admit
 * with that TTL, clamped to the namespace's bounds). */
#include "policy.h"

#include <lauxlib.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include "config_lua.h"

static void push_facts(lua_State *L, const struct hf_namespace *ns,
                       const struct hf_hold_facts *f) {
    lua_createtable(L, 0, 8);
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
    } else if (lua_isinteger(L, -2)) {
        lua_Integer ttl = lua_tointeger(L, -2);
        if (ttl < c->ns->min_ttl_ms) ttl = c->ns->min_ttl_ms;
        if (ttl > c->ns->max_ttl_ms) ttl = c->ns->max_ttl_ms;
        *c->ttl_ms = (uint32_t)ttl;
    } else if (!lua_isnil(L, -2) && !lua_isboolean(L, -2)) {
        snprintf(c->why, c->whylen, "admit hook returned a %s; expected boolean, nil or integer",
                 luaL_typename(L, -2));
        c->verdict = HF_HOOK_FAILED;
    }
    return 0;
}

enum hf_verdict hf_policy_admit_hold(const struct hf_config *cfg, const struct hf_namespace *ns,
                                     const struct hf_hold_facts *facts, uint32_t *ttl_ms,
                                     char *why, size_t whylen) {
    if (!ns->admit_hook || !cfg->lua) return HF_ADMIT;
    struct hf_lua *lua = cfg->lua;
    lua_State *L = lua->L;
    if (lua->broken) {
        snprintf(why, whylen, "its Lua state panicked earlier; reload the configuration");
        return HF_HOOK_FAILED;
    }
    lua->instructions = 0;
    lua->budget = HF_HOOK_INSTRUCTION_BUDGET;
    struct admit_call call = {ns, facts, ttl_ms, why, whylen, HF_HOOK_FAILED};
    jmp_buf panic;
    lua->panic_jmp = &panic;
    if (setjmp(panic) == 0) {
        lua_pushcfunction(L, admit_protected);
        lua_pushlightuserdata(L, &call);
        if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
            /* not lua_tostring on a number: that would allocate */
            const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
            snprintf(why, whylen, "%s", msg ? msg : "(error object is not a string)");
            call.verdict = HF_HOOK_FAILED;
        }
        lua_settop(L, 0);
    } else {
        snprintf(why, whylen, "its Lua state panicked (see the log)");
        call.verdict = HF_HOOK_FAILED;
    }
    lua->panic_jmp = NULL;
    return call.verdict;
}
