/* policy.c - calls the admit hooks a configuration file defined. A hook
 * returns true/nil (admit), false plus a reason (deny), or a number (admit
 * with that TTL, clamped to the namespace's bounds). */
#include "policy.h"

#include <lauxlib.h>
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

enum hf_verdict hf_policy_admit_hold(const struct hf_config *cfg, const struct hf_namespace *ns,
                                     const struct hf_hold_facts *facts, uint32_t *ttl_ms,
                                     char *why, size_t whylen) {
    if (!ns->admit_hook || !cfg->lua) return HF_ADMIT;
    struct hf_lua *lua = cfg->lua;
    lua_State *L = lua->L;
    lua->instructions = 0;
    lua->budget = HF_HOOK_INSTRUCTION_BUDGET;
    lua_rawgeti(L, LUA_REGISTRYINDEX, ns->admit_hook);
    push_facts(L, ns, facts);
    if (lua_pcall(L, 1, 2, 0) != LUA_OK) {
        snprintf(why, whylen, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "error");
        lua_settop(L, 0);
        return HF_HOOK_FAILED;
    }
    enum hf_verdict verdict = HF_ADMIT;
    if (lua_isboolean(L, -2) && !lua_toboolean(L, -2)) {
        const char *reason = lua_tostring(L, -1);
        snprintf(why, whylen, "%s", reason ? reason : "refused by the namespace's admit hook");
        verdict = HF_DENY;
    } else if (lua_isinteger(L, -2)) {
        lua_Integer ttl = lua_tointeger(L, -2);
        if (ttl < ns->min_ttl_ms) ttl = ns->min_ttl_ms;
        if (ttl > ns->max_ttl_ms) ttl = ns->max_ttl_ms;
        *ttl_ms = (uint32_t)ttl;
    } else if (!lua_isnil(L, -2) && !lua_isboolean(L, -2)) {
        snprintf(why, whylen, "admit hook returned a %s; expected boolean, nil or integer",
                 luaL_typename(L, -2));
        verdict = HF_HOOK_FAILED;
    }
    lua_settop(L, 0);
    return verdict;
}
