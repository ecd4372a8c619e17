/* config.c - runs the configuration file in a Lua 5.4 sandbox and turns the
 * returned table into struct hf_config, one field table per section (name,
 * type, default, bounds), as Redis' standardConfig and PgBouncer's CF_ABS
 * tables do. Every error names file:line and the dotted key. */
#include "config.h"

#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_lua.h"
#include "validate.h"

#define CONFIG_MEMORY_LIMIT (16u << 20)
#define CONFIG_INSTRUCTION_BUDGET 10000000
#define CONFIG_HOOK_EVERY 1000

enum field_type { F_UINT, F_BOOL, F_STRING, F_MODE, F_ENUM, F_ID_LIST, F_FUNCTION,
                  F_STRING_LIST };

struct field {
    const char *key;
    enum field_type type;
    size_t offset;
    uint32_t def;             /* F_UINT, F_BOOL, F_MODE, F_ENUM (index) */
    const char *def_str;      /* F_STRING (NULL: optional, stays NULL) */
    uint32_t min, max;        /* F_UINT */
    const char *const *names; /* F_ENUM, NULL-terminated */
};


#define CFG(f) offsetof(struct hf_config, f)
#define NSF(f) offsetof(struct hf_namespace, f)

static const char *const script_names[] = {"auto", "fcall", "evalsha", "eval", NULL};
static const char *const release_names[] = {"auto", "script", "delex", NULL};
static const char *const policy_names[] = {"fail_closed", "best_effort", NULL};
static const char *const level_names[] = {"debug", "info", "warn", "error", NULL};

static const struct field socket_fields[] = {
    {"path", F_STRING, CFG(socket_path), 0, "/run/holdfast/holdfast.sock", 0, 0, NULL},
    {"mode", F_MODE, CFG(socket_mode), 0660, NULL, 0, 0, NULL},
    {"group", F_STRING, CFG(socket_group), 0, NULL, 0, 0, NULL},
    {"allow_uids", F_ID_LIST, CFG(allow_uids), 0, NULL, 0, 0, NULL},
    {"allow_gids", F_ID_LIST, CFG(allow_gids), 0, NULL, 0, 0, NULL},
};

static const struct field redis_fields[] = {
    {"address", F_STRING, CFG(redis_address), 0, "127.0.0.1:6379", 0, 0, NULL},
    {"username", F_STRING, CFG(redis_username), 0, NULL, 0, 0, NULL},
    {"password", F_STRING, CFG(redis_password), 0, NULL, 0, 0, NULL},
    {"db", F_UINT, CFG(redis_db), 0, NULL, 0, 15, NULL},
    {"pool_size", F_UINT, CFG(redis_pool_size), 2, NULL, 1, 64, NULL},
    {"connect_timeout_ms", F_UINT, CFG(redis_connect_timeout_ms), 1000, NULL, 10, 60000, NULL},
    {"command_timeout_ms", F_UINT, CFG(redis_command_timeout_ms), 1000, NULL, 5, 60000, NULL},
    {"script_path", F_ENUM, CFG(script_path), HF_SCRIPT_AUTO, NULL, 0, 0, script_names},
    {"release_path", F_ENUM, CFG(release_path), HF_RELEASE_AUTO, NULL, 0, 0, release_names},
    {"cluster", F_BOOL, CFG(redis_cluster), 0, NULL, 0, 0, NULL},
    {"seeds", F_STRING_LIST, CFG(redis_seeds), 0, NULL, 0, 0, NULL},
};

static const struct field postgres_fields[] = {
    {"dsn", F_STRING, CFG(pg_dsn), 0, NULL, 0, 0, NULL},
    {"pool_size", F_UINT, CFG(pg_pool_size), 2, NULL, 1, 64, NULL},
    {"connect_timeout_ms", F_UINT, CFG(pg_connect_timeout_ms), 2000, NULL, 10, 60000, NULL},
    {"statement_timeout_ms", F_UINT, CFG(pg_statement_timeout_ms), 2000, NULL, 10, 600000, NULL},
    {"idempotency_retention_s", F_UINT, CFG(pg_idempotency_retention_s), 7 * 86400, NULL,
     60, 366 * 86400, NULL},
};

static const struct field limits_fields[] = {
    {"max_frame_bytes", F_UINT, CFG(max_frame_bytes), 65536, NULL, 1024, 16u << 20, NULL},
    {"max_inflight_per_conn", F_UINT, CFG(max_inflight_per_conn), 1024, NULL, 1, 1000000, NULL},
    {"max_connections", F_UINT, CFG(max_connections), 1024, NULL, 1, 1000000, NULL},
    {"max_ids", F_UINT, CFG(max_ids), 64, NULL, 1, 10000, NULL},
    {"default_timeout_ms", F_UINT, CFG(default_timeout_ms), 2000, NULL, 1, 3600000, NULL},
    {"max_timeout_ms", F_UINT, CFG(max_timeout_ms), 30000, NULL, 1, 3600000, NULL},
    {"drain_timeout_ms", F_UINT, CFG(drain_timeout_ms), 5000, NULL, 0, 3600000, NULL},
};

static const struct field log_fields[] = {
    {"level", F_ENUM, CFG(log_level), HF_LOG_INFO, NULL, 0, 0, level_names},
    {"fingerprint_key", F_STRING, CFG(log_fingerprint_key), 0, NULL, 0, 0, NULL},
};

#define DAY_MS 86400000u
static const struct field namespace_fields[] = {
    {"default_ttl_ms", F_UINT, NSF(default_ttl_ms), 30000, NULL, 10, DAY_MS, NULL},
    {"min_ttl_ms", F_UINT, NSF(min_ttl_ms), 10, NULL, 10, DAY_MS, NULL},
    {"max_ttl_ms", F_UINT, NSF(max_ttl_ms), 600000, NULL, 10, DAY_MS, NULL},
    {"confirmable", F_BOOL, NSF(confirmable), 0, NULL, 0, 0, NULL},
    {"confirm_window_ms", F_UINT, NSF(confirm_window_ms), 30000, NULL, 100, DAY_MS, NULL},
    {"confirmed_marker_ttl_ms", F_UINT, NSF(confirmed_marker_ttl_ms), DAY_MS, NULL, 0,
     30 * DAY_MS, NULL},
    {"on_redis_down", F_ENUM, NSF(on_redis_down), HF_FAIL_CLOSED, NULL, 0, 0, policy_names},
    {"min_replicas_ack", F_UINT, NSF(min_replicas_ack), 0, NULL, 0, 16, NULL},
    {"replicas_ack_timeout_ms", F_UINT, NSF(replicas_ack_timeout_ms), 100, NULL, 1, 60000, NULL},
    {"admit", F_FUNCTION, NSF(admit_hook), 0, NULL, 0, 0, NULL},
};

#define N_FIELDS(a) (sizeof(a) / sizeof((a)[0]))

struct section {
    const char *key;
    const struct field *fields;
    size_t n;
};

static const struct section sections[] = {
    {"socket", socket_fields, N_FIELDS(socket_fields)},
    {"redis", redis_fields, N_FIELDS(redis_fields)},
    {"postgres", postgres_fields, N_FIELDS(postgres_fields)},
    {"limits", limits_fields, N_FIELDS(limits_fields)},
    {"log", log_fields, N_FIELDS(log_fields)},
};

/* ---- locating a key in the source, for file:line messages ---- */

static bool ident_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '_';
}

/* Find `word` as a table key (word followed by optional spaces and '=', or
 * ["word"]) at or after `from`. Returns its offset or -1. */
static long find_key(const char *text, size_t from, const char *word) {
    size_t wl = strlen(word);
    for (const char *p = strstr(text + from, word); p; p = strstr(p + 1, word)) {
        if (p > text && ident_char(p[-1])) continue;
        const char *q = p + wl;
        if (ident_char(*q)) continue;
        if (*q == '"' || *q == '\'') q++;
        if (*q == ']') q++;
        while (*q == ' ' || *q == '\t') q++;
        if (*q == '=') return (long)(p - text);
    }
    return -1;
}

/* Line of the deepest component of a dotted path that can be found. */
static int line_of(const char *text, const char *dotted) {
    if (!text) return 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", dotted);
    size_t pos = 0;
    long found = -1;
    char *save = NULL;
    for (char *part = strtok_r(buf, ".", &save); part; part = strtok_r(NULL, ".", &save)) {
        long at = find_key(text, pos, part);
        if (at < 0) break;
        found = at;
        pos = (size_t)at + 1;
    }
    if (found < 0) return 0;
    int line = 1;
    for (long i = 0; i < found; i++)
        if (text[i] == '\n') line++;
    return line;
}

static bool fail(struct hf_lua *ctx, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool fail(struct hf_lua *ctx, const char *key, const char *fmt, ...) {
    char why[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    int line = line_of(ctx->text, key);
    if (line > 0)
        snprintf(ctx->err, ctx->errlen, "%s:%d: key '%s': %s", ctx->name, line, key, why);
    else
        snprintf(ctx->err, ctx->errlen, "%s: key '%s': %s", ctx->name, key, why);
    return false;
}

/* ---- reading typed values ---- */

static bool read_uint(struct hf_lua *ctx, lua_State *L, const char *key, uint32_t min,
                      uint32_t max, uint32_t *out) {
    if (!lua_isinteger(L, -1)) {
        if (lua_type(L, -1) == LUA_TNUMBER)
            return fail(ctx, key, "must be a whole number");
        return fail(ctx, key, "must be a number, got %s", luaL_typename(L, -1));
    }
    lua_Integer v = lua_tointeger(L, -1);
    if (v < (lua_Integer)min || v > (lua_Integer)max)
        return fail(ctx, key, "must be between %u and %u, got %lld", min, max, (long long)v);
    *out = (uint32_t)v;
    return true;
}

static bool read_mode(struct hf_lua *ctx, lua_State *L, const char *key, uint32_t *out) {
    /* "0660" as a string (octal), or a number written as 0x1b0 / 432. */
    if (lua_type(L, -1) == LUA_TSTRING) {
        const char *s = lua_tostring(L, -1);
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 8);
        if (errno || *end || end == s || v > 07777)
            return fail(ctx, key, "must be an octal mode string such as \"0660\"");
        *out = (uint32_t)v;
        return true;
    }
    return read_uint(ctx, L, key, 0, 07777, out);
}

static bool read_id_list(struct hf_lua *ctx, lua_State *L, const char *key, uint32_t **out,
                         size_t *n_out) {
    if (!lua_istable(L, -1)) return fail(ctx, key, "must be a list of numeric ids");
    size_t n = (size_t)luaL_len(L, -1);
    uint32_t *ids = n ? calloc(n, sizeof *ids) : NULL;
    if (n && !ids) return fail(ctx, key, "out of memory");
    for (size_t i = 0; i < n; i++) {
        lua_geti(L, -1, (lua_Integer)i + 1);
        char sub[300];
        snprintf(sub, sizeof sub, "%.256s[%zu]", key, i + 1);
        bool ok = read_uint(ctx, L, sub, 0, UINT32_MAX - 1, &ids[i]);
        lua_pop(L, 1);
        if (!ok) {
            free(ids);
            return false;
        }
    }
    *out = ids;
    *n_out = n;
    return true;
}

static void free_string_list(char **list, size_t n) {
    for (size_t i = 0; list && i < n; i++) free(list[i]);
    free(list);
}

static bool read_string_list(struct hf_lua *ctx, lua_State *L, const char *key, char ***out,
                             size_t *n_out) {
    if (!lua_istable(L, -1)) return fail(ctx, key, "must be a list of strings");
    size_t n = (size_t)luaL_len(L, -1);
    char **list = n ? calloc(n, sizeof *list) : NULL;
    if (n && !list) return fail(ctx, key, "out of memory");
    for (size_t i = 0; i < n; i++) {
        lua_geti(L, -1, (lua_Integer)i + 1);
        size_t len = 0;
        const char *s = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
        char sub[300];
        snprintf(sub, sizeof sub, "%.256s[%zu]", key, i + 1);
        bool ok = s && len > 0 && strlen(s) == len;
        if (ok) list[i] = strdup(s);
        lua_pop(L, 1);
        if (!ok || !list[i]) {
            free_string_list(list, n);
            return fail(ctx, sub, ok ? "out of memory" : "must be a non-empty string");
        }
    }
    free_string_list(*out, *n_out);
    *out = list;
    *n_out = n;
    return true;
}

static bool read_field(struct hf_lua *ctx, lua_State *L, const struct field *f,
                       const char *key, void *base) {
    char *slot = (char *)base + f->offset;
    switch (f->type) {
    case F_UINT:
        return read_uint(ctx, L, key, f->min, f->max, (uint32_t *)(void *)slot);
    case F_MODE:
        return read_mode(ctx, L, key, (uint32_t *)(void *)slot);
    case F_BOOL:
        if (!lua_isboolean(L, -1)) return fail(ctx, key, "must be true or false");
        *(bool *)slot = lua_toboolean(L, -1);
        return true;
    case F_STRING: {
        if (lua_type(L, -1) != LUA_TSTRING) return fail(ctx, key, "must be a string");
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        if (len == 0) return fail(ctx, key, "must not be empty");
        if (strlen(s) != len) return fail(ctx, key, "must not contain NUL bytes");
        char **dst = (char **)(void *)slot;
        free(*dst);
        *dst = strdup(s);
        return *dst ? true : fail(ctx, key, "out of memory");
    }
    case F_ENUM: {
        if (lua_type(L, -1) != LUA_TSTRING) return fail(ctx, key, "must be a string");
        const char *s = lua_tostring(L, -1);
        for (int i = 0; f->names[i]; i++) {
            if (strcmp(s, f->names[i]) == 0) {
                *(int *)(void *)slot = i;
                return true;
            }
        }
        char choices[256] = "";
        for (int i = 0; f->names[i]; i++) {
            strncat(choices, i ? ", " : "", sizeof choices - strlen(choices) - 1);
            strncat(choices, f->names[i], sizeof choices - strlen(choices) - 1);
        }
        return fail(ctx, key, "must be one of %s, got \"%s\"", choices, s);
    }
    case F_FUNCTION:
        if (!lua_isfunction(L, -1)) return fail(ctx, key, "must be a function");
        lua_pushvalue(L, -1); /* luaL_ref pops it; the caller pops the original */
        *(int *)(void *)slot = luaL_ref(L, LUA_REGISTRYINDEX);
        ctx->keep_state = true;
        return true;
    case F_ID_LIST: {
        uint32_t **list = (uint32_t **)(void *)slot;
        size_t *count = (size_t *)(void *)(slot + sizeof(uint32_t *));
        return read_id_list(ctx, L, key, list, count);
    }
    case F_STRING_LIST: {
        char ***list = (char ***)(void *)slot;
        size_t *count = (size_t *)(void *)(slot + sizeof(char **));
        return read_string_list(ctx, L, key, list, count);
    }
    }
    return fail(ctx, key, "internal: unknown field type");
}

static void apply_defaults(const struct field *fields, size_t n, void *base) {
    for (size_t i = 0; i < n; i++) {
        char *slot = (char *)base + fields[i].offset;
        switch (fields[i].type) {
        case F_UINT:
        case F_MODE: *(uint32_t *)(void *)slot = fields[i].def; break;
        case F_BOOL: *(bool *)slot = fields[i].def != 0; break;
        case F_ENUM: *(int *)(void *)slot = (int)fields[i].def; break;
        case F_STRING:
            *(char **)(void *)slot = fields[i].def_str ? strdup(fields[i].def_str) : NULL;
            break;
        case F_ID_LIST:
        case F_STRING_LIST: break; /* zeroed by calloc */
        case F_FUNCTION: *(int *)(void *)slot = 0; break;
        }
    }
}

/* Read the table on top of the stack against `fields`; unknown keys are
 * errors so that a typo never silently falls back to a default. */
static bool read_table(struct hf_lua *ctx, lua_State *L, const char *prefix,
                       const struct field *fields, size_t n, void *base) {
    char key[256];
    if (!lua_istable(L, -1)) return fail(ctx, prefix, "must be a table");
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        if (lua_type(L, -2) != LUA_TSTRING) {
            lua_pop(L, 2);
            return fail(ctx, prefix, "keys must be names");
        }
        const char *k = lua_tostring(L, -2);
        snprintf(key, sizeof key, "%s.%s", prefix, k);
        const struct field *f = NULL;
        for (size_t i = 0; i < n; i++)
            if (strcmp(fields[i].key, k) == 0) f = &fields[i];
        if (!f) {
            lua_pop(L, 2);
            return fail(ctx, key, "unknown key");
        }
        if (!read_field(ctx, L, f, key, base)) {
            lua_pop(L, 2);
            return false;
        }
        lua_pop(L, 1);
    }
    return true;
}

static bool read_namespace(struct hf_lua *ctx, lua_State *L, const char *name,
                           struct hf_namespace *ns) {
    char prefix[256];
    snprintf(prefix, sizeof prefix, "namespaces.%s", name);
    if (!hf_valid_name(name, strlen(name)))
        return fail(ctx, prefix, "namespace names use [A-Za-z0-9._-], 1-128 bytes");
    apply_defaults(namespace_fields, N_FIELDS(namespace_fields), ns);
    ns->name = strdup(name);
    if (!ns->name) return fail(ctx, prefix, "out of memory");
    if (!read_table(ctx, L, prefix, namespace_fields, N_FIELDS(namespace_fields), ns))
        return false;
    char key[300];
    if (ns->min_ttl_ms > ns->max_ttl_ms) {
        snprintf(key, sizeof key, "%s.min_ttl_ms", prefix);
        return fail(ctx, key, "must not exceed max_ttl_ms (%u)", ns->max_ttl_ms);
    }
    if (ns->default_ttl_ms < ns->min_ttl_ms || ns->default_ttl_ms > ns->max_ttl_ms) {
        snprintf(key, sizeof key, "%s.default_ttl_ms", prefix);
        return fail(ctx, key, "must lie within min_ttl_ms..max_ttl_ms (%u..%u)",
                    ns->min_ttl_ms, ns->max_ttl_ms);
    }
    return true;
}

static bool read_namespaces(struct hf_lua *ctx, lua_State *L, struct hf_config *cfg) {
    if (!lua_istable(L, -1)) return fail(ctx, "namespaces", "must be a table of tables");
    size_t count = 0;
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        count++;
        lua_pop(L, 1);
    }
    if (count == 0) return fail(ctx, "namespaces", "configure at least one namespace");
    cfg->namespaces = calloc(count, sizeof *cfg->namespaces);
    if (!cfg->namespaces) return fail(ctx, "namespaces", "out of memory");
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        if (lua_type(L, -2) != LUA_TSTRING) {
            lua_pop(L, 2);
            return fail(ctx, "namespaces", "keys must be namespace names");
        }
        const char *name = lua_tostring(L, -2);
        struct hf_namespace *ns = &cfg->namespaces[cfg->n_namespaces++];
        if (!read_namespace(ctx, L, name, ns)) {
            lua_pop(L, 2);
            return false;
        }
        lua_pop(L, 1);
    }
    return true;
}

static bool valid_redis_address(const char *a) {
    return strncmp(a, "unix:", 5) == 0 || strrchr(a, ':') != NULL;
}

static bool validate_whole(struct hf_lua *ctx, struct hf_config *cfg) {
    if (cfg->default_timeout_ms > cfg->max_timeout_ms)
        return fail(ctx, "limits.default_timeout_ms", "must not exceed limits.max_timeout_ms (%u)",
                    cfg->max_timeout_ms);
    if (!valid_redis_address(cfg->redis_address))
        return fail(ctx, "redis.address", "must be \"unix:/path\" or \"host:port\"");
    for (size_t i = 0; i < cfg->n_redis_seeds; i++) {
        char key[64];
        snprintf(key, sizeof key, "redis.seeds[%zu]", i + 1);
        if (!valid_redis_address(cfg->redis_seeds[i]))
            return fail(ctx, key, "must be \"unix:/path\" or \"host:port\"");
    }
    if (cfg->n_redis_seeds && !cfg->redis_cluster)
        return fail(ctx, "redis.seeds", "is only used with redis.cluster = true");
    if (cfg->redis_cluster && cfg->redis_db != 0)
        return fail(ctx, "redis.db", "must be 0 with redis.cluster (a cluster has one database)");
    if (strlen(cfg->socket_path) >= 108)
        return fail(ctx, "socket.path", "longer than a Unix socket path may be (107 bytes)");
    return true;
}

static bool read_root(struct hf_lua *ctx, lua_State *L, struct hf_config *cfg) {
    if (!lua_istable(L, -1)) {
        snprintf(ctx->err, ctx->errlen, "%s: the file must return a table, got %s", ctx->name,
                 luaL_typename(L, -1));
        return false;
    }
    for (size_t i = 0; i < N_FIELDS(sections); i++)
        apply_defaults(sections[i].fields, sections[i].n, cfg);
    bool have_namespaces = false;
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
        bool ok = false, known = false;
        if (k && strcmp(k, "namespaces") == 0) {
            known = true;
            have_namespaces = true;
            ok = read_namespaces(ctx, L, cfg);
        }
        for (size_t i = 0; k && !known && i < N_FIELDS(sections); i++) {
            if (strcmp(k, sections[i].key) == 0) {
                known = true;
                ok = read_table(ctx, L, k, sections[i].fields, sections[i].n, cfg);
            }
        }
        if (!known) ok = fail(ctx, k ? k : "?", "unknown top-level key");
        if (!ok) {
            lua_pop(L, 2);
            return false;
        }
        lua_pop(L, 1);
    }
    if (!have_namespaces) return fail(ctx, "namespaces", "missing: configure at least one");
    return validate_whole(ctx, cfg);
}

/* ---- the sandbox ---- */

static void *limited_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    struct hf_lua *ctx = ud;
    if (!ptr) osize = 0;
    if (nsize == 0) {
        ctx->mem_used -= osize;
        free(ptr);
        return NULL;
    }
    if (nsize > osize && ctx->mem_used + (nsize - osize) > CONFIG_MEMORY_LIMIT) return NULL;
    void *p = realloc(ptr, nsize);
    if (p) ctx->mem_used = ctx->mem_used - osize + nsize;
    return p;
}

static void budget_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    struct hf_lua *ctx;
    lua_getallocf(L, (void **)&ctx);
    ctx->instructions += CONFIG_HOOK_EVERY;
    if (ctx->instructions > ctx->budget)
        luaL_error(L, "instruction budget exceeded (endless loop?)");
}

/* Only pure libraries: no io, os, package, debug; no way to load more code. */
static lua_State *sandbox_new(struct hf_lua *ctx) {
    lua_State *L = lua_newstate(limited_alloc, ctx);
    if (!L) return NULL;
    static const luaL_Reg libs[] = {
        {LUA_GNAME, luaopen_base},       {LUA_TABLIBNAME, luaopen_table},
        {LUA_STRLIBNAME, luaopen_string}, {LUA_MATHLIBNAME, luaopen_math},
        {LUA_UTF8LIBNAME, luaopen_utf8},
    };
    for (size_t i = 0; i < N_FIELDS(libs); i++) {
        luaL_requiref(L, libs[i].name, libs[i].func, 1);
        lua_pop(L, 1);
    }
    static const char *const removed[] = {"dofile", "loadfile", "load", "require",
                                          "collectgarbage", "print", NULL};
    for (int i = 0; removed[i]; i++) {
        lua_pushnil(L);
        lua_setglobal(L, removed[i]);
    }
    lua_sethook(L, budget_hook, LUA_MASKCOUNT, CONFIG_HOOK_EVERY);
    return L;
}

static struct hf_config *load(struct hf_lua *ctx, const char *path, const char *text) {
    struct hf_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg) {
        snprintf(ctx->err, ctx->errlen, "%s: out of memory", ctx->name);
        return NULL;
    }
    cfg->refs = 1;
    ctx->budget = CONFIG_INSTRUCTION_BUDGET;
    lua_State *L = sandbox_new(ctx);
    if (!L) {
        snprintf(ctx->err, ctx->errlen, "%s: cannot create Lua state", ctx->name);
        free(cfg);
        return NULL;
    }
    char chunkname[300];
    snprintf(chunkname, sizeof chunkname, "@%s", ctx->name);
    /* "t": text only, precompiled bytecode could escape the sandbox. */
    int rc = luaL_loadbufferx(L, text, strlen(text), chunkname, "t");
    if (rc == LUA_OK) rc = lua_pcall(L, 0, 1, 0);
    bool ok;
    if (rc != LUA_OK) {
        /* Lua's message says file:line: why, except for "not enough
         * memory" (the sandbox's limit), which gets the file name. */
        const char *msg = lua_tostring(L, -1);
        if (!msg) msg = "error";
        if (strncmp(msg, ctx->name, strlen(ctx->name)) == 0)
            snprintf(ctx->err, ctx->errlen, "%s", msg);
        else if (strstr(msg, "memory"))
            snprintf(ctx->err, ctx->errlen, "%s: %s (the sandbox allows %u MiB)", ctx->name,
                     msg, CONFIG_MEMORY_LIMIT >> 20);
        else
            snprintf(ctx->err, ctx->errlen, "%s: %s", ctx->name, msg);
        ok = false;
    } else {
        ok = read_root(ctx, L, cfg);
    }
    if (ok) {
        cfg->path = strdup(path);
        if (!cfg->path) ok = false;
    }
    if (ok && ctx->keep_state) {
        /* Policy hooks live on in this state; it moves into the config. */
        lua_settop(L, 0);
        struct hf_lua *kept = malloc(sizeof *kept);
        if (kept) {
            *kept = *ctx;
            kept->name = kept->text = NULL;
            kept->err = NULL;
            kept->L = L;
            lua_setallocf(L, limited_alloc, kept);
            cfg->lua = kept;
            return cfg;
        }
        ok = false;
    }
    lua_close(L);
    if (!ok) {
        cfg->refs = 1;
        hf_config_unref(cfg);
        return NULL;
    }
    return cfg;
}

struct hf_config *hf_config_load_string(const char *name, const char *text, char *err,
                                        size_t errlen) {
    struct hf_lua ctx = {.name = name, .text = text, .err = err, .errlen = errlen};
    return load(&ctx, name, text);
}

struct hf_config *hf_config_load(const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (cap - len < 4096) {
            cap = cap ? cap * 2 : 8192;
            if (cap > (4u << 20)) {
                snprintf(err, errlen, "%s: larger than 4 MiB", path);
                free(text);
                fclose(f);
                return NULL;
            }
            char *grown = realloc(text, cap);
            if (!grown) {
                free(text);
                fclose(f);
                snprintf(err, errlen, "%s: out of memory", path);
                return NULL;
            }
            text = grown;
        }
        size_t n = fread(text + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0) break;
    }
    bool read_error = ferror(f);
    fclose(f);
    if (read_error) {
        snprintf(err, errlen, "%s: read error", path);
        free(text);
        return NULL;
    }
    text[len] = '\0';
    struct hf_lua ctx = {.name = path, .text = text, .err = err, .errlen = errlen};
    struct hf_config *cfg = load(&ctx, path, text);
    free(text);
    return cfg;
}

struct hf_config *hf_config_ref(struct hf_config *cfg) {
    cfg->refs++;
    return cfg;
}

static void free_strings(const struct field *fields, size_t n, void *base) {
    for (size_t i = 0; i < n; i++) {
        char *slot = (char *)base + fields[i].offset;
        if (fields[i].type == F_STRING || fields[i].type == F_ID_LIST)
            free(*(void **)(void *)slot);
        else if (fields[i].type == F_STRING_LIST)
            free_string_list(*(char ***)(void *)slot,
                             *(size_t *)(void *)(slot + sizeof(char **)));
    }
}

void hf_config_unref(struct hf_config *cfg) {
    if (!cfg || --cfg->refs > 0) return;
    for (size_t i = 0; i < N_FIELDS(sections); i++)
        free_strings(sections[i].fields, sections[i].n, cfg);
    for (size_t i = 0; i < cfg->n_namespaces; i++) free(cfg->namespaces[i].name);
    free(cfg->namespaces);
    if (cfg->lua) {
        lua_close(cfg->lua->L);
        free(cfg->lua);
    }
    free(cfg->path);
    free(cfg);
}

const struct hf_namespace *hf_config_namespace(const struct hf_config *cfg, const char *name) {
    for (size_t i = 0; i < cfg->n_namespaces; i++)
        if (strcmp(cfg->namespaces[i].name, name) == 0) return &cfg->namespaces[i];
    return NULL;
}

static bool str_differs(const char *a, const char *b) {
    if (!a || !b) return a != b;
    return strcmp(a, b) != 0;
}

static bool string_lists_differ(char *const *a, size_t na, char *const *b, size_t nb) {
    if (na != nb) return true;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i], b[i]) != 0) return true;
    return false;
}

void hf_config_warn_restart_only(const struct hf_config *o, const struct hf_config *n) {
    if (str_differs(o->socket_path, n->socket_path) || o->socket_mode != n->socket_mode ||
        str_differs(o->socket_group, n->socket_group))
        log_warn("config reload: socket settings changed; they take effect on restart");
    if (str_differs(o->redis_address, n->redis_address) ||
        str_differs(o->redis_username, n->redis_username) ||
        str_differs(o->redis_password, n->redis_password) || o->redis_db != n->redis_db ||
        o->redis_pool_size != n->redis_pool_size || o->script_path != n->script_path ||
        o->release_path != n->release_path || o->redis_cluster != n->redis_cluster ||
        string_lists_differ(o->redis_seeds, o->n_redis_seeds, n->redis_seeds, n->n_redis_seeds))
        log_warn("config reload: redis settings changed; they take effect on restart");
    if (str_differs(o->pg_dsn, n->pg_dsn) || o->pg_pool_size != n->pg_pool_size ||
        o->pg_connect_timeout_ms != n->pg_connect_timeout_ms ||
        o->pg_statement_timeout_ms != n->pg_statement_timeout_ms ||
        o->pg_idempotency_retention_s != n->pg_idempotency_retention_s)
        log_warn("config reload: postgres settings changed; they take effect on restart");
}
