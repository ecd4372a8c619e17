/* config_lua.h - the configuration's Lua sandbox, shared by config.c (which
 * loads the file and owns the sandbox's allocator, budget hook and panic
 * handler) and policy.c (which calls the hooks the file defined and provides
 * the sandbox's bounded library). */
#ifndef HF_CONFIG_LUA_H
#define HF_CONFIG_LUA_H

#include <lua.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Limits of the state kept for the hooks after loading (the per-call ones,
 * instructions and time, are in policy.h). */
#define HF_HOOK_MEMORY_HEADROOM (4u << 20) /* over what loading left, after a full GC */
#define HF_HOOK_MAX_ALLOC (1u << 20)       /* largest block: one string, table part, stack */
#define HF_HOOK_CHECK_EVERY 100            /* instructions between budget and clock checks */

/* Library limits, loading and hooks alike (policy.c). */
#define HF_LUA_REP_MAX (1u << 20)          /* string.rep's result */
#define HF_LUA_TABLE_LOOP_MAX (1u << 18)   /* elements table.insert/remove/move/unpack touch */
#define HF_LUA_STEPS_PER_CHECK 4096        /* library steps (~10 ns each) between clock reads */

/* Why the running call was stopped. Once set, every check raises again,
 * pcall and xpcall pass the error on, and the allocator refuses to grow, so
 * the call ends however the code tries to carry on. */
enum hf_lua_stop { HF_LUA_RUNNING, HF_LUA_OUT_OF_INSTRUCTIONS, HF_LUA_OUT_OF_TIME };

struct hf_lua {
    lua_State *L;
    const char *name;  /* while loading: file name for messages */
    const char *text;  /* while loading: source, for finding a key's line */
    char *err;         /* while loading: where the message goes */
    size_t errlen;
    size_t mem_used;   /* the allocator's running total... */
    size_t mem_limit;  /* ...refused past this */
    size_t max_alloc;  /* 0, or the largest block the allocator hands out */
    long instructions; /* counted by the budget hook... */
    long budget;       /* ...and stopped past this */
    uint64_t deadline_ns;      /* CLOCK_MONOTONIC; 0 between calls: no clock checks */
    unsigned time_budget_ms;   /* for the message */
    size_t alloc_since_check;  /* bytes allocated since the clock was last read */
    size_t steps;              /* library work since the clock was last read */
    enum hf_lua_stop stop;
    bool stop_raised;          /* stop_msg has the line the call was stopped at */
    char stop_msg[LUA_IDSIZE + 96]; /* why it was stopped: no Lua string can be made then */
    jmp_buf *panic_jmp; /* where the panic handler jumps to; NULL: log and exit */
    bool broken;        /* a panic happened in this state: it is not called again */
    bool keep_state;    /* a hook was defined: keep L after loading */
};

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t hf_lua_now_ns(void);

/* Begin a call (or the load) with these budgets; end it. Between calls
 * nothing is timed. config.c. */
void hf_lua_start(struct hf_lua *ctx, long instructions, unsigned time_ms);
void hf_lua_end(struct hf_lua *ctx);

/* Account `steps` of work done in C by a library function; reads the clock
 * every HF_LUA_STEPS_PER_CHECK steps and raises a Lua error once the call
 * is out of time (or was stopped before). config.c. */
void hf_lua_charge(lua_State *L, size_t steps);

/* Replace the library functions that can run long in C (pattern matching,
 * string.rep, the table functions that loop) with bounded ones, and pcall,
 * xpcall and setmetatable with ones that keep the budgets. policy.c. */
void hf_lua_open_bounded(lua_State *L);

#endif
