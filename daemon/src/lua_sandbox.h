/* lua_sandbox.h - the Lua 5.4 sandbox that the configuration file and its
 * policy hooks run in: pure libraries only, a memory cap, instruction and
 * wall-clock budgets, a panic handler that jumps back to the caller, and
 * library functions that cannot run long in C. It knows nothing of configs
 * or hooks: config.c loads the file in one, policy.c calls the hooks the
 * file left in it. */
#ifndef HF_LUA_SANDBOX_H
#define HF_LUA_SANDBOX_H

#include <lua.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Limits of a state kept after loading for the hooks (hf_lua_keep; the
 * per-call ones, instructions and time, are the caller's: policy.h). */
#define HF_HOOK_MEMORY_HEADROOM (4u << 20) /* over what loading left, after a full GC */
#define HF_HOOK_MAX_ALLOC (1u << 20)       /* largest block: one string, table part, stack */
#define HF_HOOK_CHECK_EVERY 100            /* instructions between budget and clock checks */

/* Library limits, loading and hooks alike. */
#define HF_LUA_REP_MAX (1u << 20)          /* string.rep's result */
#define HF_LUA_TABLE_LOOP_MAX (1u << 18)   /* elements table.insert/remove/move/unpack touch */
#define HF_LUA_STEPS_PER_CHECK 4096        /* library steps (~10 ns each) between clock reads */

/* hf_lua_protected's answer when the state panicked (Lua's statuses are
 * never negative). */
#define HF_LUA_PANICKED (-1)

/* Why the running call was stopped. Once set, every check raises again,
 * pcall and xpcall pass the error on, and the allocator refuses to grow, so
 * the call ends however the code tries to carry on. */
enum hf_lua_stop { HF_LUA_RUNNING, HF_LUA_OUT_OF_INSTRUCTIONS, HF_LUA_OUT_OF_TIME };

/* One sandbox: its state and the accounting its allocator and count hook
 * keep. The allocator's userdata, so Lua code reaches it through
 * lua_getallocf. */
struct hf_lua {
    lua_State *L;
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
};

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t hf_lua_now_ns(void);

/* A new sandbox of at most mem_limit bytes whose count hook runs every
 * check_every instructions; NULL when it cannot be made. Nothing is timed
 * or counted until hf_lua_start. */
struct hf_lua *hf_lua_create(size_t mem_limit, int check_every);
/* Closes the state; NULL is fine. */
void hf_lua_free(struct hf_lua *lua);

/* The state outlives its load to serve hooks: after a full collection it
 * may grow HF_HOOK_MEMORY_HEADROOM beyond what is left, no block may exceed
 * HF_HOOK_MAX_ALLOC, and the count hook runs every HF_HOOK_CHECK_EVERY
 * instructions. */
void hf_lua_keep(struct hf_lua *lua);

/* Begin a call (or the load) with these budgets, the time one counted from
 * start_ns (a hf_lua_now_ns reading); end it. Between calls nothing is
 * timed. */
void hf_lua_start(struct hf_lua *lua, long instructions, uint64_t start_ns, uint64_t time_ns);
void hf_lua_end(struct hf_lua *lua);

/* f, with ud as its one argument, in protected mode: LUA_OK, a Lua error
 * status with the error on top of the stack, or HF_LUA_PANICKED (logged;
 * lua->broken is set and the state must only be freed). */
int hf_lua_protected(struct hf_lua *lua, lua_CFunction f, void *ud);

#endif
