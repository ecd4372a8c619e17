/* redis_front.h - the Redis front end: everything the ops send to Redis goes
 * through here. The holdfast Functions library and how it is called (FCALL,
 * or EVALSHA of the same code re-sent as EVAL on NOSCRIPT), plain commands
 * (GET, DELEX), whether Release may use DELEX ... IFEQ, and routing to the
 * single pool or the cluster. */
#ifndef HF_REDIS_FRONT_H
#define HF_REDIS_FRONT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "argv.h"
#include "config.h"
#include "redis_pool.h"
#include "redis_sub.h"

/* Must match the library name and the hf<N>_ prefix in scripts/holdfast.lua. */
#define HF_LIBRARY_VERSION "1"
#define HF_LIBRARY_NAME "holdfast_v" HF_LIBRARY_VERSION

/* The library's functions, one row each: the enum's name, the local Lua
 * function (its Redis name is hf<N>_<local>), and whether hf1_batch may run
 * it (BATCHABLE in scripts/holdfast.lua: coalescing, below). The enum, the
 * names and the batchable set are all made from this one list. */
#define HF_SCRIPT_FNS(X)                                                              \
    X(HOLD, hold, true)                                                               \
    X(EXTEND, extend, true)                                                           \
    X(RELEASE, release, true)                                                         \
    X(STATUS, status, false)                                                          \
    X(CONFIRM_CHECK, confirm_check, true)                                             \
    X(MARK_CONFIRMED, mark_confirmed, true)                                           \
    X(CANCEL_CLEAR, cancel_clear, false)                                              \
    X(POOL_HOLD, pool_hold, true)             /* pools (docs/pools.md) */             \
    X(POOL_EXTEND, pool_extend, true)                                                 \
    X(POOL_RELEASE, pool_release, true)                                               \
    X(POOL_STATUS, pool_status, false)                                                \
    X(POOL_CONFIRM_CHECK, pool_confirm_check, true)                                   \
    X(POOL_MARK_SOLD, pool_mark_sold, true)                                           \
    X(SESSION_RENEW, session_renew, false)    /* many session holds in one call */    \
    X(SESSION_RELEASE, session_release, false) /* their connection closed */          \
    X(HOLD_WAIT, hold_wait, false)            /* waiting in line: hold, or queue */   \
    X(WAIT_LEAVE, wait_leave, false)          /* a waiter leaves its lines */         \
    X(WAIT_WAKE, wait_wake, false)            /* freed or sold: wake the waiters */   \
    X(POOL_HOLD_WAIT, pool_hold_wait, false)  /* waiting in line for units */         \
    X(RELEASE_WAKE, release_wake, true)       /* Release, and wake what it freed */   \
    X(BATCH, batch, false)                    /* many calls in one */

enum hf_script_fn {
#define HF_FN_ENUM(name, local, batchable) HF_FN_##name,
    HF_SCRIPT_FNS(HF_FN_ENUM)
#undef HF_FN_ENUM
    HF_FN__COUNT
};

/* Codes returned by the library's functions. */
enum hf_script_code {
    HF_SC_GRANTED = 1,
    HF_SC_HELD_BY_ANOTHER = 2,
    HF_SC_NOT_HELD = 3,
    HF_SC_CONFIRMED = 4,
    HF_SC_POOL_MISS = 5,           /* the mirror lacks the pool's capacity: load it */
    HF_SC_POOL_COUNT_MISMATCH = 6, /* the token holds another number of units */
};

enum hf_call_path { HF_PATH_NONE, HF_PATH_FCALL, HF_PATH_EVALSHA, HF_PATH_EVAL };
/* The server's native compare-and-delete: Redis >= 8.4 has DELEX key IFEQ v,
 * Valkey >= 9.0 has DELIFEQ key v. */
enum hf_delex_state {
    HF_DELEX_UNKNOWN,
    HF_DELEX_ABSENT,
    HF_DELEX_PRESENT, /* DELEX ... IFEQ */
    HF_DELEX_DELIFEQ, /* DELIFEQ */
    HF_DELEX_DENIED,
};

struct hf_redis_front;

/* Called when Redis becomes usable (library loaded on at least one
 * connection; in cluster mode: slot map complete and every primary with a
 * ready connection) or stops being usable. */
typedef void hf_front_ready_fn(void *ud, bool ready);

/* Creates the Redis pool (or, with redis.cluster, the cluster's pools)
 * too; loading happens on every (re)connect to every node. */
struct hf_redis_front *hf_front_create(uv_loop_t *loop, const struct hf_config *cfg,
                                     hf_front_ready_fn *on_ready, void *ud);
void hf_front_close(struct hf_redis_front *s);

/* Call a library function. keys and args (NULL: none; a builder that
 * failed: nothing is sent) are copied; keys.n >= 1 (the first key
 * routes the call in cluster mode). Holds, extends, releases, confirm checks
 * and marks made in one loop iteration (conn NULL or *conn NULL) are
 * coalesced: sent together, in the order made, as one hf1_batch call per
 * cluster slot (at 16 calls, or just before the loop next waits); each still
 * gets its own reply, status and *conn. Any other call or command first
 * sends the open batches, so each connection carries its calls in the order
 * they were made. conn may be NULL; otherwise *conn, when not NULL, is the
 * connection to try first, and *conn is set to the connection that gave the
 * reply before cb runs (a cluster redirection may change it), so that a
 * WAIT can follow on the connection that wrote. 0, or negative when nothing
 * was sent (cb is then never called). */
int hf_front_call(struct hf_redis_front *s, struct hf_redis_conn **conn, enum hf_script_fn fn,
                  struct hf_strs keys, const struct hf_argv *args, uint32_t timeout_ms,
                  hf_redis_cb *cb, void *privdata) __attribute__((warn_unused_result));

/* A plain command about `key` (DELEX, GET): on `conn` when not NULL, else on
 * a connection that serves the key; cluster redirections are followed. */
int hf_front_command(struct hf_redis_front *s, struct hf_redis_conn *conn, const char *key,
                       size_t keylen, int argc, const char **argv, const size_t *argvlen,
                       uint32_t timeout_ms, hf_redis_cb *cb, void *privdata)
    __attribute__((warn_unused_result));
/* A subscription of the daemon's on `channel` (redis_sub.h), over the same
 * address, credentials and TLS as every call. NULL on OOM. */
struct hf_redis_sub *hf_front_subscribe(struct hf_redis_front *s, const struct hf_config *cfg,
                                        const char *channel, hf_sub_message_fn *on_message,
                                        hf_sub_state_fn *on_state, void *ud);

/* A ready connection that serves `key`, or NULL. */
struct hf_redis_conn *hf_front_pick(struct hf_redis_front *s, const char *key, size_t keylen);

/* The single pool; NULL in cluster mode (use hf_front_pick). */
struct hf_redis_pool *hf_front_pool(struct hf_redis_front *s);
bool hf_front_ready(const struct hf_redis_front *s);
/* Release goes through the server's compare-and-delete (configured and
 * detected): HF_DELEX_PRESENT or HF_DELEX_DELIFEQ; anything else: the script. */
enum hf_delex_state hf_front_release_command(const struct hf_redis_front *s);
bool hf_front_release_uses_delex(const struct hf_redis_front *s);
const char *hf_front_path_name(const struct hf_redis_front *s);
const char *hf_front_release_path_name(const struct hf_redis_front *s);

/* The library as embedded at build time; exposed for tests. */
const char *hf_front_library_text(size_t *len);
/* The function's name inside the library ("hold") and in Redis ("hf1_hold"). */
const char *hf_front_local_name(enum hf_script_fn fn);
const char *hf_front_function_name(enum hf_script_fn fn);

#endif
