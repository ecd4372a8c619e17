/* lua_sandbox.c - the Lua sandbox of the configuration and its hooks: the
 * allocator that caps memory, the count hook and the clock that stop a call
 * past its budgets, the panic handler, and the library (Lua's pure ones,
 * minus whatever loads code, with the functions that could run long in C
 * replaced by bounded ones). */
#include "lua_sandbox.h"

#include <ctype.h>
#include <lauxlib.h>
#include <lualib.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

#define MS 1000000u                   /* ns */
#define ALLOC_CHECK_BYTES (64u << 10) /* the allocator reads the clock this often */

/* ---- budgets: memory, instructions, time ---- */

uint64_t hf_lua_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Stop the running call and say why in ctx->stop_msg (Lua strings cannot
 * be made any more: the allocator refuses to grow from now on). */
static void set_stop(struct hf_lua *ctx, enum hf_lua_stop why, const char *where) {
    ctx->stop = why;
    if (why == HF_LUA_OUT_OF_INSTRUCTIONS)
        snprintf(ctx->stop_msg, sizeof ctx->stop_msg,
                 "%sinstruction budget exceeded (endless loop?)", where);
    else
        snprintf(ctx->stop_msg, sizeof ctx->stop_msg, "%stime budget exceeded (%u ms)", where,
                 ctx->time_budget_ms);
}

/* Whether the running call has to end; reads the clock. */
static bool must_stop(struct hf_lua *ctx) {
    if (ctx->stop == HF_LUA_RUNNING && ctx->deadline_ns && hf_lua_now_ns() >= ctx->deadline_ns)
        set_stop(ctx, HF_LUA_OUT_OF_TIME, "");
    return ctx->stop != HF_LUA_RUNNING;
}

/* Raise the stopped call's error. The message names the innermost Lua
 * function's line, found without allocating; the error value is a light
 * userdata (no allocation either) and the text stays in ctx->stop_msg. */
static int raise_stop(lua_State *L, struct hf_lua *ctx, enum hf_lua_stop why) {
    if (!ctx->stop_raised) {
        char where[LUA_IDSIZE + 16] = "";
        lua_Debug ar;
        for (int level = 0; level < 16 && lua_getstack(L, level, &ar); level++) {
            if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0) {
                snprintf(where, sizeof where, "%s:%d: ", ar.short_src, ar.currentline);
                break;
            }
        }
        set_stop(ctx, ctx->stop == HF_LUA_RUNNING ? why : ctx->stop, where);
        ctx->stop_raised = true;
    }
    lua_pushlightuserdata(L, ctx);
    return lua_error(L);
}

void hf_lua_start(struct hf_lua *ctx, long instructions, uint64_t start_ns, uint64_t time_ns) {
    ctx->instructions = 0;
    ctx->budget = instructions;
    ctx->time_budget_ms = (unsigned)((time_ns + MS - 1) / MS);
    ctx->deadline_ns = start_ns + time_ns; /* to the ns: a hook's share may have cut it */
    ctx->steps = ctx->alloc_since_check = 0;
    ctx->stop = HF_LUA_RUNNING;
    ctx->stop_raised = false;
    ctx->stop_msg[0] = '\0';
}

void hf_lua_end(struct hf_lua *ctx) {
    ctx->deadline_ns = 0;
    ctx->stop = HF_LUA_RUNNING;
}

/* Every block counts against mem_limit, and none may be larger than
 * max_alloc. Once a call is stopped nothing grows; every ALLOC_CHECK_BYTES
 * handed out the clock is read, so C code that allocates as it goes cannot
 * outrun the deadline by much. Shrinking never fails, as Lua requires. */
static void *limited_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    struct hf_lua *ctx = ud;
    if (!ptr) osize = 0;
    if (nsize == 0) {
        ctx->mem_used -= osize;
        free(ptr);
        return NULL;
    }
    if (nsize > osize) {
        if (ctx->stop != HF_LUA_RUNNING) return NULL;
        if (ctx->mem_used + (nsize - osize) > ctx->mem_limit ||
            (ctx->max_alloc && nsize > ctx->max_alloc)) {
            must_stop(ctx); /* Lua collects and asks again: the clock, meanwhile */
            return NULL;
        }
        ctx->alloc_since_check += nsize - osize;
        if (ctx->alloc_since_check >= ALLOC_CHECK_BYTES) {
            ctx->alloc_since_check = 0;
            if (must_stop(ctx)) return NULL;
        }
    }
    void *p = realloc(ptr, nsize);
    if (p) ctx->mem_used = ctx->mem_used - osize + nsize;
    return p;
}

/* Counts instructions and reads the clock every lua_gethookcount() of them. */
static void budget_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    struct hf_lua *ctx;
    lua_getallocf(L, (void **)&ctx);
    ctx->instructions += lua_gethookcount(L);
    if (ctx->stop == HF_LUA_RUNNING && ctx->instructions > ctx->budget)
        raise_stop(L, ctx, HF_LUA_OUT_OF_INSTRUCTIONS);
    if (must_stop(ctx)) raise_stop(L, ctx, ctx->stop);
}

/* Account `steps` of work done in C by a library function; reads the clock
 * every HF_LUA_STEPS_PER_CHECK steps and raises a Lua error once the call
 * is out of time (or was stopped before). */
static void charge(lua_State *L, size_t steps) {
    struct hf_lua *ctx;
    lua_getallocf(L, (void **)&ctx);
    ctx->steps += steps;
    if (ctx->stop == HF_LUA_RUNNING && ctx->steps < HF_LUA_STEPS_PER_CHECK) return;
    ctx->steps = 0;
    if (must_stop(ctx)) raise_stop(L, ctx, ctx->stop);
}

/* Lua calls this for an error outside any protected call and abort()s if it
 * returns. Everything run in a sandbox runs under lua_pcall, so this is a
 * last line: jump back to the caller, which gives the state up (loading
 * fails; a config's hooks answer "failed" from then on, its state is only
 * closed). With nobody to jump to, log and exit non-zero so that the service
 * manager restarts the daemon: never a silent abort. */
static int on_panic(lua_State *L) {
    struct hf_lua *ctx;
    lua_getallocf(L, (void **)&ctx);
    const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "(not a string)";
    if (ctx->panic_jmp) {
        log_error("Lua panic in the configuration's sandbox: %s; that Lua state is given up",
                  msg);
        ctx->broken = true;
        longjmp(*ctx->panic_jmp, 1);
    }
    log_error("Lua panic outside a protected call: %s; exiting", msg);
    hf_log_flush();
    exit(70); /* EX_SOFTWARE */
}

/* ---- pattern matching, with its work counted ----
 *
 * Lua's own matcher backtracks without limit and has no hook point: one
 * string.rep("a", 40000):find(".-b") keeps the loop for seconds. This is the
 * same pattern language (Lua 5.4 manual, 6.4.1) written again so that every
 * step is counted and the clock read as it goes (charge()); the unit
 * test daemon/tests/test_policy.c compares it with Lua's on many patterns. */

#define PM_MAX_CAPTURES 32 /* as LUA_MAXCAPTURES */
#define PM_MAX_DEPTH 200   /* recursion, as Lua's MAXCCALLS */
#define PM_OPEN (-1)       /* the length of a capture still open */
#define PM_POSITION (-2)   /* ... of a position capture, () */
#define PM_CHARGE 256      /* steps counted here before charge() */
#define PM_SPECIALS "^$*+?.([%-"

struct pm {
    lua_State *L;
    const char *s0, *s_end; /* the subject */
    const char *p_end;      /* the end of the pattern */
    int depth;              /* recursion left */
    int n;                  /* captures started */
    size_t steps;           /* not charged yet */
    struct {
        const char *at;
        ptrdiff_t len;
    } cap[PM_MAX_CAPTURES];
};

static void pm_init(struct pm *m, lua_State *L, const char *s, size_t ls, const char *p,
                    size_t lp) {
    m->L = L;
    m->s0 = s;
    m->s_end = s + ls;
    m->p_end = p + lp;
    m->steps = 0;
}

static void pm_reset(struct pm *m) {
    m->depth = PM_MAX_DEPTH;
    m->n = 0;
}

static void pm_charge(struct pm *m, size_t steps) {
    m->steps += steps;
    if (m->steps >= PM_CHARGE) {
        charge(m->L, m->steps);
        m->steps = 0;
    }
}

/* %a, %d, ... (upper case: the complement); any other character stands
 * for itself. */
static bool pm_class(int c, int cl) {
    bool r;
    switch (tolower(cl)) {
    case 'a': r = isalpha(c); break;
    case 'c': r = iscntrl(c); break;
    case 'd': r = isdigit(c); break;
    case 'g': r = isgraph(c); break;
    case 'l': r = islower(c); break;
    case 'p': r = ispunct(c); break;
    case 's': r = isspace(c); break;
    case 'u': r = isupper(c); break;
    case 'w': r = isalnum(c); break;
    case 'x': r = isxdigit(c); break;
    case 'z': r = c == 0; break; /* deprecated, still in Lua 5.4 */
    default: return cl == c;
    }
    return isupper(cl) ? !r : r;
}

/* [set] from p (its '[') to close (its ']'). */
static bool pm_set(int c, const char *p, const char *close) {
    bool in = true;
    if (p[1] == '^') {
        in = false;
        p++;
    }
    while (++p < close) {
        if (*p == '%') {
            p++;
            if (pm_class(c, (unsigned char)*p)) return in;
        } else if (p[1] == '-' && p + 2 < close) {
            p += 2;
            if ((unsigned char)p[-2] <= c && c <= (unsigned char)*p) return in;
        } else if ((unsigned char)*p == c) {
            return in;
        }
    }
    return !in;
}

/* Past the single-character class at p. Patterns are Lua strings, so
 * reading *p_end finds their terminating NUL. */
static const char *pm_class_end(struct pm *m, const char *p) {
    char c = *p++;
    if (c == '%') {
        if (p >= m->p_end) luaL_error(m->L, "malformed pattern (ends with '%%')");
        return p + 1;
    }
    if (c == '[') {
        if (*p == '^') p++;
        do { /* the first character is in the set even if it is ']' */
            if (p >= m->p_end) luaL_error(m->L, "malformed pattern (missing ']')");
            c = *p++;
            if (c == '%' && p < m->p_end) p++;
        } while (*p != ']');
        return p + 1;
    }
    return p;
}

/* Whether the subject character at s is in the class p..ep. */
static bool pm_single(const struct pm *m, const char *s, const char *p, const char *ep) {
    if (s >= m->s_end) return false;
    int c = (unsigned char)*s;
    switch (*p) {
    case '.': return true;
    case '%': return pm_class(c, (unsigned char)p[1]);
    case '[': return pm_set(c, p, ep - 1);
    default: return (unsigned char)*p == c;
    }
}

static const char *pm_match(struct pm *m, const char *s, const char *p);

/* x* and x+ (after its first x): as many as possible, then fewer. */
static const char *pm_longest(struct pm *m, const char *s, const char *p, const char *ep) {
    ptrdiff_t i = 0;
    while (pm_single(m, s + i, p, ep)) {
        i++;
        pm_charge(m, 1);
    }
    for (; i >= 0; i--) {
        const char *r = pm_match(m, s + i, ep + 1);
        if (r) return r;
    }
    return NULL;
}

/* x-: as few as possible, then more. */
static const char *pm_shortest(struct pm *m, const char *s, const char *p, const char *ep) {
    for (;;) {
        const char *r = pm_match(m, s, ep + 1);
        if (r) return r;
        if (!pm_single(m, s, p, ep)) return NULL;
        s++;
    }
}

static const char *pm_open(struct pm *m, const char *s, const char *p, ptrdiff_t kind) {
    if (m->n >= PM_MAX_CAPTURES) luaL_error(m->L, "too many captures");
    m->cap[m->n].at = s;
    m->cap[m->n].len = kind;
    m->n++;
    const char *r = pm_match(m, s, p);
    if (!r) m->n--;
    return r;
}

static const char *pm_close(struct pm *m, const char *s, const char *p) {
    int i = m->n - 1;
    while (i >= 0 && m->cap[i].len != PM_OPEN) i--;
    if (i < 0) luaL_error(m->L, "invalid pattern capture");
    m->cap[i].len = s - m->cap[i].at;
    const char *r = pm_match(m, s, p);
    if (!r) m->cap[i].len = PM_OPEN;
    return r;
}

/* %bxy at p (pointing at x). */
static const char *pm_balance(struct pm *m, const char *s, const char *p) {
    if (p + 1 >= m->p_end) luaL_error(m->L, "malformed pattern (missing arguments to '%%b')");
    if (s >= m->s_end || *s != p[0]) return NULL;
    int depth = 1;
    while (++s < m->s_end) {
        pm_charge(m, 1);
        if (*s == p[1]) {
            if (--depth == 0) return s + 1;
        } else if (*s == p[0]) {
            depth++;
        }
    }
    return NULL;
}

/* %1 .. %9: the text of an earlier capture again. */
static const char *pm_backref(struct pm *m, const char *s, int digit) {
    int i = digit - '1';
    if (i < 0 || i >= m->n || m->cap[i].len == PM_OPEN)
        luaL_error(m->L, "invalid capture index %%%d", i + 1);
    size_t len = (size_t)m->cap[i].len; /* a position capture's is huge: no match */
    if ((size_t)(m->s_end - s) < len) return NULL;
    pm_charge(m, len / 8);
    return memcmp(m->cap[i].at, s, len) == 0 ? s + len : NULL;
}

/* Where the match of pattern p at subject s ends, or NULL. */
static const char *pm_match(struct pm *m, const char *s, const char *p) {
    if (m->depth-- == 0) luaL_error(m->L, "pattern too complex");
    for (;;) {
        pm_charge(m, 1);
        if (p == m->p_end) break;
        if (*p == '(') {
            s = p[1] == ')' ? pm_open(m, s, p + 2, PM_POSITION) : pm_open(m, s, p + 1, PM_OPEN);
            break;
        }
        if (*p == ')') {
            s = pm_close(m, s, p + 1);
            break;
        }
        if (*p == '$' && p + 1 == m->p_end) {
            if (s != m->s_end) s = NULL;
            break;
        }
        if (*p == '%' && p[1] == 'b') {
            s = pm_balance(m, s, p + 2);
            if (!s) break;
            p += 4;
            continue;
        }
        if (*p == '%' && p[1] == 'f') { /* frontier: not in the set before s, in it at s */
            p += 2;
            if (*p != '[') luaL_error(m->L, "missing '[' after '%%f' in pattern");
            const char *ep = pm_class_end(m, p);
            int before = s == m->s0 ? 0 : (unsigned char)s[-1];
            int here = s < m->s_end ? (unsigned char)*s : 0;
            if (pm_set(before, p, ep - 1) || !pm_set(here, p, ep - 1)) {
                s = NULL;
                break;
            }
            p = ep;
            continue;
        }
        if (*p == '%' && isdigit((unsigned char)p[1])) {
            s = pm_backref(m, s, (unsigned char)p[1]);
            if (!s) break;
            p += 2;
            continue;
        }
        const char *ep = pm_class_end(m, p);
        if (!pm_single(m, s, p, ep)) {
            if (*ep == '*' || *ep == '?' || *ep == '-') { /* zero of them will do */
                p = ep + 1;
                continue;
            }
            s = NULL;
            break;
        }
        if (*ep == '?') {
            const char *r = pm_match(m, s + 1, ep + 1);
            if (r) {
                s = r;
                break;
            }
            p = ep + 1;
            continue;
        }
        if (*ep == '+' || *ep == '*') {
            s = pm_longest(m, *ep == '+' ? s + 1 : s, p, ep);
            break;
        }
        if (*ep == '-') {
            s = pm_shortest(m, s, p, ep);
            break;
        }
        s++;
        p = ep;
    }
    m->depth++;
    return s;
}

/* Capture i of the match s..e (with no captures, 0 is the whole match):
 * its text in *at and the length, or PM_POSITION with the position pushed. */
static ptrdiff_t pm_capture(struct pm *m, int i, const char *s, const char *e, const char **at) {
    if (i >= m->n) {
        if (i != 0) luaL_error(m->L, "invalid capture index %%%d", i + 1);
        *at = s;
        return e - s;
    }
    ptrdiff_t len = m->cap[i].len;
    *at = m->cap[i].at;
    if (len == PM_OPEN) luaL_error(m->L, "unfinished capture");
    if (len == PM_POSITION) lua_pushinteger(m->L, m->cap[i].at - m->s0 + 1);
    return len;
}

static void pm_push_capture(struct pm *m, int i, const char *s, const char *e) {
    const char *at;
    ptrdiff_t len = pm_capture(m, i, s, e, &at);
    if (len != PM_POSITION) lua_pushlstring(m->L, at, (size_t)len);
}

/* The captures, or the whole match if there are none and s is not NULL. */
static int pm_push_captures(struct pm *m, const char *s, const char *e) {
    int n = m->n == 0 && s ? 1 : m->n;
    luaL_checkstack(m->L, n, "too many captures");
    for (int i = 0; i < n; i++) pm_push_capture(m, i, s, e);
    return n;
}

/* An init argument as a 0-based offset, as string.find reads it. */
static size_t pm_start(lua_Integer pos, size_t len) {
    if (pos > 0) return (size_t)pos - 1;
    if (pos == 0 || pos < -(lua_Integer)len) return 0;
    return len + (size_t)pos;
}

static bool pm_plain(const char *p, size_t lp) {
    for (size_t i = 0; i < lp; i++)
        if (memchr(PM_SPECIALS, p[i], sizeof PM_SPECIALS - 1)) return false;
    return true;
}

static int pm_find_or_match(lua_State *L, bool find) {
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    size_t init = pm_start(luaL_optinteger(L, 3, 1), ls);
    if (init > ls) {
        luaL_pushfail(L);
        return 1;
    }
    if (find && (lua_toboolean(L, 4) || pm_plain(p, lp))) {
        charge(L, 1 + (ls - init + lp) / 8); /* memmem is linear */
        const char *hit = memmem(s + init, ls - init, p, lp);
        if (!hit) {
            luaL_pushfail(L);
            return 1;
        }
        lua_pushinteger(L, hit - s + 1);
        lua_pushinteger(L, (lua_Integer)(hit - s + lp));
        return 2;
    }
    struct pm m;
    pm_init(&m, L, s, ls, p, lp);
    bool anchor = *p == '^';
    if (anchor) p++;
    const char *at = s + init;
    do {
        pm_reset(&m);
        const char *e = pm_match(&m, at, p);
        if (e) {
            if (!find) return pm_push_captures(&m, at, e);
            lua_pushinteger(L, at - s + 1);
            lua_pushinteger(L, e - s);
            return pm_push_captures(&m, NULL, NULL) + 2;
        }
    } while (at++ < m.s_end && !anchor);
    luaL_pushfail(L);
    return 1;
}

static int str_find(lua_State *L) { return pm_find_or_match(L, true); }
static int str_match(lua_State *L) { return pm_find_or_match(L, false); }

struct pm_iter {
    size_t next;      /* where to try next */
    size_t last_end;  /* where the last match ended... */
    bool matched;     /* ...if there was one: an empty match there is skipped */
};

/* Upvalues: subject, pattern, struct pm_iter. */
static int gmatch_next(lua_State *L) {
    size_t ls, lp;
    const char *s = lua_tolstring(L, lua_upvalueindex(1), &ls);
    const char *p = lua_tolstring(L, lua_upvalueindex(2), &lp);
    struct pm_iter *it = lua_touserdata(L, lua_upvalueindex(3));
    struct pm m;
    pm_init(&m, L, s, ls, p, lp);
    for (const char *at = s + it->next; at <= m.s_end; at++) {
        pm_reset(&m);
        const char *e = pm_match(&m, at, p);
        if (e && !(it->matched && e == s + it->last_end)) {
            it->next = it->last_end = (size_t)(e - s);
            it->matched = true;
            return pm_push_captures(&m, at, e);
        }
    }
    return 0;
}

static int str_gmatch(lua_State *L) {
    size_t ls;
    luaL_checklstring(L, 1, &ls);
    luaL_checkstring(L, 2);
    size_t init = pm_start(luaL_optinteger(L, 3, 1), ls);
    lua_settop(L, 2);
    struct pm_iter *it = lua_newuserdatauv(L, sizeof *it, 0);
    it->next = init > ls ? ls + 1 : init;
    it->last_end = 0;
    it->matched = false;
    lua_pushcclosure(L, gmatch_next, 3);
    return 1;
}

/* gsub's replacement string, with %0..%9 and %%, for the match s..e. */
static void gsub_add_string(struct pm *m, luaL_Buffer *b, const char *s, const char *e) {
    lua_State *L = m->L;
    size_t l;
    const char *r = lua_tolstring(L, 3, &l);
    const char *esc;
    pm_charge(m, l / 8);
    while ((esc = memchr(r, '%', l)) != NULL) {
        luaL_addlstring(b, r, (size_t)(esc - r));
        esc++; /* at the character after '%' (the NUL after the string at its end) */
        if (*esc == '%') {
            luaL_addchar(b, '%');
        } else if (isdigit((unsigned char)*esc)) {
            const char *at = s;
            ptrdiff_t len = e - s; /* %0 */
            if (*esc != '0') len = pm_capture(m, *esc - '1', s, e, &at);
            if (len == PM_POSITION) {
                luaL_addvalue(b);
            } else {
                pm_charge(m, (size_t)len / 8);
                luaL_addlstring(b, at, (size_t)len);
            }
        } else {
            luaL_error(L, "invalid use of '%c' in replacement string", '%');
        }
        l -= (size_t)(esc + 1 - r);
        r = esc + 1;
    }
    luaL_addlstring(b, r, l);
}

/* Add the replacement for the match s..e; false if it was kept as it was. */
static bool gsub_add(struct pm *m, luaL_Buffer *b, const char *s, const char *e, int how) {
    lua_State *L = m->L;
    if (how == LUA_TFUNCTION) {
        lua_pushvalue(L, 3);
        int n = pm_push_captures(m, s, e);
        lua_call(L, n, 1);
    } else if (how == LUA_TTABLE) {
        pm_push_capture(m, 0, s, e);
        lua_gettable(L, 3);
    } else {
        gsub_add_string(m, b, s, e);
        return true;
    }
    if (!lua_toboolean(L, -1)) { /* nil or false: keep the original text */
        lua_pop(L, 1);
        luaL_addlstring(b, s, (size_t)(e - s));
        return false;
    }
    if (!lua_isstring(L, -1))
        luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
    pm_charge(m, lua_rawlen(L, -1) / 8);
    luaL_addvalue(b);
    return true;
}

static int str_gsub(lua_State *L) {
    size_t ls, lp;
    const char *src = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    int how = lua_type(L, 3);
    lua_Integer max_n = luaL_optinteger(L, 4, (lua_Integer)ls + 1);
    luaL_argexpected(L, how == LUA_TNUMBER || how == LUA_TSTRING || how == LUA_TFUNCTION ||
                            how == LUA_TTABLE,
                     3, "string/function/table");
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    struct pm m;
    pm_init(&m, L, src, ls, p, lp);
    bool anchor = *p == '^';
    if (anchor) p++;
    const char *s = src, *last = NULL;
    lua_Integer n = 0;
    bool changed = false;
    while (n < max_n) {
        pm_reset(&m);
        const char *e = pm_match(&m, s, p);
        if (e && e != last) {
            n++;
            changed = gsub_add(&m, &b, s, e, how) || changed;
            s = last = e;
        } else if (s < m.s_end) {
            luaL_addchar(&b, *s++);
        } else {
            break;
        }
        if (anchor) break;
    }
    if (!changed) {
        lua_pushvalue(L, 1);
    } else {
        luaL_addlstring(&b, s, (size_t)(m.s_end - s));
        luaL_pushresult(&b);
    }
    lua_pushinteger(L, n);
    return 2;
}

/* ---- the other bounded functions ---- */

/* Wrappers keep the library's function as upvalue 1 and call it once the
 * arguments are known to be bounded. */
static int call_original(lua_State *L) { return lua_tocfunction(L, lua_upvalueindex(1))(L); }

/* Functions linear in their string arguments: charged before they run, so
 * a loop of them reads the clock at least once per call on a long string. */
static int charged(lua_State *L) {
    size_t bytes = 0;
    for (int i = lua_gettop(L); i > 0; i--)
        if (lua_type(L, i) == LUA_TSTRING) bytes += lua_rawlen(L, i);
    charge(L, 1 + bytes / 8);
    return call_original(L);
}

static int bounded_rep(lua_State *L) {
    size_t l, lsep;
    luaL_checklstring(L, 1, &l);
    lua_Integer n = luaL_checkinteger(L, 2);
    luaL_optlstring(L, 3, "", &lsep);
    if (n > 0 && l + lsep == 0) { /* Lua's would copy nothing n times */
        lua_pushliteral(L, "");
        return 1;
    }
    if (n > 0) {
        if ((lua_Unsigned)n > HF_LUA_REP_MAX + 1u ||
            (uint64_t)l * (uint64_t)n + (uint64_t)lsep * (uint64_t)(n - 1) > HF_LUA_REP_MAX)
            return luaL_error(L, "string.rep: the result would be over %d bytes, the sandbox's "
                                 "limit", (int)HF_LUA_REP_MAX);
        charge(L, 1 + (l * (size_t)n) / 8);
    }
    return call_original(L);
}

/* The table functions below read and write through lua_geti/lua_seti and
 * take the length from luaL_len: on a table with __index, __newindex or
 * __len those may be C functions that keep a loop in C going forever. On a
 * plain table they are raw, and the loop's length is known in advance. */
static void plain_table(lua_State *L, int idx, const char *fname) {
    luaL_checktype(L, idx, LUA_TTABLE);
    if (!lua_getmetatable(L, idx)) return;
    static const char *const events[] = {"__index", "__newindex", "__len"};
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++) {
        lua_pushstring(L, events[i]);
        bool set = lua_rawget(L, -2) != LUA_TNIL;
        lua_pop(L, 1);
        if (set)
            luaL_error(L, "table.%s: not for a table with a %s metamethod in this sandbox", fname,
                       events[i]);
    }
    lua_pop(L, 1);
}

static void loop_bound(lua_State *L, lua_Unsigned count, const char *fname) {
    if (count > HF_LUA_TABLE_LOOP_MAX)
        luaL_error(L, "table.%s: would touch %I elements, over the sandbox's limit of %d", fname,
                   (lua_Integer)count, (int)HF_LUA_TABLE_LOOP_MAX);
    charge(L, 1 + (size_t)count / 4);
}

static int bounded_insert(lua_State *L) {
    plain_table(L, 1, "insert");
    if (lua_gettop(L) == 3) {
        lua_Integer end = (lua_Integer)lua_rawlen(L, 1) + 1;
        lua_Integer pos = luaL_checkinteger(L, 2);
        if (pos >= 1 && pos <= end) loop_bound(L, (lua_Unsigned)(end - pos), "insert");
    }
    return call_original(L);
}

static int bounded_remove(lua_State *L) {
    plain_table(L, 1, "remove");
    lua_Integer size = (lua_Integer)lua_rawlen(L, 1);
    lua_Integer pos = luaL_optinteger(L, 2, size);
    if (pos >= 1 && pos < size) loop_bound(L, (lua_Unsigned)(size - pos), "remove");
    return call_original(L);
}

static int bounded_move(lua_State *L) {
    plain_table(L, 1, "move");
    lua_Integer from = luaL_checkinteger(L, 2), to = luaL_checkinteger(L, 3);
    luaL_checkinteger(L, 4);
    if (!lua_isnoneornil(L, 5)) plain_table(L, 5, "move");
    if (to >= from) loop_bound(L, (lua_Unsigned)to - (lua_Unsigned)from + 1u, "move");
    return call_original(L);
}

static int bounded_unpack(lua_State *L) {
    plain_table(L, 1, "unpack");
    lua_Integer from = luaL_optinteger(L, 2, 1);
    lua_Integer to = lua_isnoneornil(L, 3) ? (lua_Integer)lua_rawlen(L, 1) : luaL_checkinteger(L, 3);
    if (to >= from) loop_bound(L, (lua_Unsigned)to - (lua_Unsigned)from + 1u, "unpack");
    return call_original(L);
}

static int bounded_concat(lua_State *L) {
    plain_table(L, 1, "concat");
    return call_original(L);
}

/* table.sort's comparisons, each charged: comparing long strings, or a
 * comparator written in C, would otherwise run unseen. Upvalue 1: the
 * caller's comparator or nil. */
static int sort_compare(lua_State *L) {
    size_t bytes = 0;
    for (int i = 1; i <= 2; i++)
        if (lua_type(L, i) == LUA_TSTRING) bytes += lua_rawlen(L, i);
    charge(L, 1 + bytes / 8);
    if (lua_isnil(L, lua_upvalueindex(1))) {
        lua_pushboolean(L, lua_compare(L, 1, 2, LUA_OPLT));
        return 1;
    }
    lua_settop(L, 2);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, 2, 1);
    return 1;
}

static int bounded_sort(lua_State *L) {
    plain_table(L, 1, "sort");
    if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_settop(L, 2);
    lua_pushcclosure(L, sort_compare, 1);
    return call_original(L);
}

/* A call stopped for instructions or time stays stopped: pcall and xpcall
 * pass that error on instead of returning false. */
static int pcall_result(lua_State *L, int status, int extra) {
    if (status == LUA_OK) return lua_gettop(L) - extra;
    struct hf_lua *ctx;
    lua_getallocf(L, (void **)&ctx);
    if (ctx->stop != HF_LUA_RUNNING) return lua_error(L);
    lua_pushboolean(L, 0);
    lua_pushvalue(L, -2);
    return 2;
}

static int bounded_pcall(lua_State *L) {
    luaL_checkany(L, 1);
    lua_pushboolean(L, 1);
    lua_insert(L, 1); /* true, f, args */
    return pcall_result(L, lua_pcall(L, lua_gettop(L) - 2, LUA_MULTRET, 0), 0);
}

static int bounded_xpcall(lua_State *L) {
    int n = lua_gettop(L);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushboolean(L, 1);
    lua_pushvalue(L, 1);
    lua_rotate(L, 3, 2); /* f, handler, true, f, args */
    return pcall_result(L, lua_pcall(L, n - 2, LUA_MULTRET, 2), 2);
}

/* Finalizers run with hooks off, outside any budget: no __gc. Lua decides
 * whether an object has one when its metatable is set, so checking here is
 * enough. */
static int bounded_setmetatable(lua_State *L) {
    if (lua_type(L, 2) == LUA_TTABLE) {
        lua_pushstring(L, "__gc");
        bool gc = lua_rawget(L, 2) != LUA_TNIL;
        lua_pop(L, 1);
        if (gc) return luaL_error(L, "setmetatable: no __gc metamethods in this sandbox");
    }
    return call_original(L);
}

static void wrap(lua_State *L, const char *name, lua_CFunction f) {
    lua_getfield(L, -1, name);
    lua_pushcclosure(L, f, 1);
    lua_setfield(L, -2, name);
}

static void set(lua_State *L, const char *name, lua_CFunction f) {
    lua_pushcfunction(L, f);
    lua_setfield(L, -2, name);
}

/* Replace the library functions that can run long in C (pattern matching,
 * string.rep, the table functions that loop) with bounded ones, and pcall,
 * xpcall and setmetatable with ones that keep the budgets. */
static void open_bounded(lua_State *L) {
    /* The string table is also the strings' __index: s:find() is covered. */
    lua_getglobal(L, LUA_STRLIBNAME);
    set(L, "find", str_find);
    set(L, "match", str_match);
    set(L, "gmatch", str_gmatch);
    set(L, "gsub", str_gsub);
    wrap(L, "rep", bounded_rep);
    static const char *const linear_string[] = {"byte",    "char",   "format",   "lower",
                                                "upper",   "reverse", "sub",     "pack",
                                                "packsize", "unpack", NULL};
    for (int i = 0; linear_string[i]; i++) wrap(L, linear_string[i], charged);
    lua_pop(L, 1);

    lua_getglobal(L, LUA_UTF8LIBNAME);
    static const char *const linear_utf8[] = {"char", "codepoint", "len", "offset", "codes",
                                              NULL};
    for (int i = 0; linear_utf8[i]; i++) wrap(L, linear_utf8[i], charged);
    lua_pop(L, 1);

    lua_getglobal(L, LUA_TABLIBNAME);
    wrap(L, "insert", bounded_insert);
    wrap(L, "remove", bounded_remove);
    wrap(L, "move", bounded_move);
    wrap(L, "unpack", bounded_unpack);
    wrap(L, "concat", bounded_concat);
    wrap(L, "sort", bounded_sort);
    lua_pop(L, 1);

    lua_pushglobaltable(L);
    set(L, "pcall", bounded_pcall);
    set(L, "xpcall", bounded_xpcall);
    wrap(L, "setmetatable", bounded_setmetatable);
    wrap(L, "tonumber", charged);
    lua_pop(L, 1);
}

/* ---- the state ---- */

static int open_sandbox(lua_State *L) {
    static const luaL_Reg libs[] = {
        {LUA_GNAME, luaopen_base},       {LUA_TABLIBNAME, luaopen_table},
        {LUA_STRLIBNAME, luaopen_string}, {LUA_MATHLIBNAME, luaopen_math},
        {LUA_UTF8LIBNAME, luaopen_utf8},
    };
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
        luaL_requiref(L, libs[i].name, libs[i].func, 1);
        lua_pop(L, 1);
    }
    static const char *const removed[] = {"dofile", "loadfile", "load", "require",
                                          "collectgarbage", "print", NULL};
    for (int i = 0; removed[i]; i++) {
        lua_pushnil(L);
        lua_setglobal(L, removed[i]);
    }
    open_bounded(L);
    return 0;
}

/* Only pure libraries: no io, os, package, debug, coroutine; no way to load
 * more code; the functions that could run long in C replaced by bounded
 * ones. Set up in protected mode like everything else. */
struct hf_lua *hf_lua_create(size_t mem_limit, int check_every) {
    struct hf_lua *lua = calloc(1, sizeof *lua);
    if (!lua) return NULL;
    lua->mem_limit = mem_limit;
    lua->L = lua_newstate(limited_alloc, lua);
    if (!lua->L) {
        free(lua);
        return NULL;
    }
    lua_atpanic(lua->L, on_panic);
    lua_pushcfunction(lua->L, open_sandbox);
    if (lua_pcall(lua->L, 0, 0, 0) != LUA_OK) {
        hf_lua_free(lua);
        return NULL;
    }
    lua_sethook(lua->L, budget_hook, LUA_MASKCOUNT, check_every);
    return lua;
}

void hf_lua_free(struct hf_lua *lua) {
    if (!lua) return;
    lua_close(lua->L);
    free(lua);
}

void hf_lua_keep(struct hf_lua *lua) {
    lua_settop(lua->L, 0);
    lua_gc(lua->L, LUA_GCCOLLECT);
    lua->mem_limit = lua->mem_used + HF_HOOK_MEMORY_HEADROOM;
    lua->max_alloc = HF_HOOK_MAX_ALLOC;
    hf_lua_end(lua);
    lua_sethook(lua->L, budget_hook, LUA_MASKCOUNT, HF_HOOK_CHECK_EVERY);
}

/* The panic handler jumps back here, so the caller learns of a panic as a
 * status instead of never returning. */
int hf_lua_protected(struct hf_lua *lua, lua_CFunction f, void *ud) {
    jmp_buf panic;
    volatile int status = HF_LUA_PANICKED;
    lua->panic_jmp = &panic;
    if (setjmp(panic) == 0) {
        lua_pushcfunction(lua->L, f);
        lua_pushlightuserdata(lua->L, ud);
        status = lua_pcall(lua->L, 1, 0, 0);
    }
    lua->panic_jmp = NULL;
    return status;
}
