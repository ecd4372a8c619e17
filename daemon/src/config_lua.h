/* config_lua.h - the configuration's Lua sandbox, shared by config.c (which
 * loads the file) and policy.c (which calls the hooks the file defined). */
#ifndef HF_CONFIG_LUA_H
#define HF_CONFIG_LUA_H

#include <lua.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>

struct hf_lua {
    lua_State *L;
    const char *name;  /* while loading: file name for messages */
    const char *text;  /* while loading: source, for finding a key's line */
    char *err;         /* while loading: where the message goes */
    size_t errlen;
    size_t mem_used;   /* the allocator's running total (cap: 16 MiB) */
    long instructions; /* counted by the budget hook... */
    long budget;       /* ...and stopped past this */
    jmp_buf *panic_jmp; /* where the panic handler jumps to; NULL: log and exit */
    bool broken;       /* a panic happened in this state: it is not called again */
    bool keep_state;   /* a hook was defined: keep L after loading */
};

#endif
