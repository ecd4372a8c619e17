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

#include "config.h"
#include "redis_pool.h"

/* Must match the library name and the hf<N>_ prefix in scripts/holdfast.lua. */
#define HF_LIBRARY_VERSION "1"
#define HF_LIBRARY_NAME "holdfast_v" HF_LIBRARY_VERSION

enum hf_script_fn {
    HF_FN_HOLD,
    HF_FN_EXTEND,
    HF_FN_RELEASE,
    HF_FN_STATUS,
    HF_FN_CONFIRM_CHECK,
    HF_FN_MARK_CONFIRMED,
    HF_FN_CANCEL_CLEAR,
    /* Pools (docs/pools.md). */
    HF_FN_POOL_HOLD,
    HF_FN_POOL_EXTEND,
    HF_FN_POOL_RELEASE,
    HF_FN_POOL_STATUS,
    HF_FN_POOL_CONFIRM_CHECK,
    HF_FN_POOL_MARK_SOLD,
    HF_FN_SESSION_RENEW,   /* session holds: many holds' renewal in one call */
    HF_FN_SESSION_RELEASE, /* session holds: their connection closed */
    HF_FN_HOLD_WAIT,       /* waiting in line (docs/waiting.md): hold, or queue */
    HF_FN_WAIT_LEAVE,      /* a waiter leaves its lines */
    HF_FN_WAIT_WAKE,       /* resources freed or sold: wake their waiters */
    HF_FN_POOL_HOLD_WAIT,  /* waiting in line for units */
    HF_FN_RELEASE_WAKE,    /* Release, and wake the lines of what it freed */
    HF_FN_BATCH,           /* many calls in one (coalescing, below) */
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

/* Call a library function. keys/args are copied; nkeys >= 1 (the first key
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
                    size_t nkeys, const char *const *keys, const size_t *keylens, size_t nargs,
                    const char *const *args, const size_t *arglens, uint32_t timeout_ms,
                    hf_redis_cb *cb, void *privdata) __attribute__((warn_unused_result));

/* A plain command about `key` (DELEX, GET): on `conn` when not NULL, else on
 * a connection that serves the key; cluster redirections are followed. */
int hf_front_command(struct hf_redis_front *s, struct hf_redis_conn *conn, const char *key,
                       size_t keylen, int argc, const char **argv, const size_t *argvlen,
                       uint32_t timeout_ms, hf_redis_cb *cb, void *privdata)
    __attribute__((warn_unused_result));
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
