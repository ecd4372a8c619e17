/* redis_cluster.h - Redis Cluster: the slot map (from CLUSTER SLOTS), one
 * hf_redis_pool per primary, and commands routed by key that follow MOVED
 * and ASK redirections within their deadline. */
#ifndef HF_REDIS_CLUSTER_H
#define HF_REDIS_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "redis_pool.h"

struct hf_redis_cluster;
struct hf_resp_cmd;

struct hf_redis_cluster_options {
    const char *const *seeds; /* "host:port" or "unix:/path": asked for the slot map */
    size_t n_seeds;
    const char *username;     /* may be NULL */
    const char *password;     /* may be NULL */
    uint32_t pool_size;       /* connections per primary */
    uint32_t connect_timeout_ms;
    uint32_t command_timeout_ms; /* for CLUSTER SLOTS */
    uint32_t stall_ms;           /* for every pool (hf_redis_pool_options) */
    struct hf_redis_tls *tls;    /* NULL, or TLS to every node (the cluster keeps a reference) */
};

/* setup runs on every new connection to every primary (as for a single
 * pool); on_state is called with 1 when the cluster became usable (slot map
 * complete, every primary with a ready connection) and 0 when it stopped
 * being usable. */
struct hf_redis_cluster *hf_redis_cluster_create(uv_loop_t *loop,
                                                 const struct hf_redis_cluster_options *opts,
                                                 hf_redis_setup_fn *setup,
                                                 hf_redis_state_fn *on_state, void *ud);

/* A ready connection to the primary that owns `key`'s slot, or NULL. */
struct hf_redis_conn *hf_redis_cluster_pick(struct hf_redis_cluster *c, const char *key,
                                            size_t keylen);

/* Send a formatted command (resp.h) about `key` to `first`, or when that
 * is NULL to a ready connection of the slot's owner; the cluster keeps a
 * reference to cmd for as long as it may re-send it (the caller keeps its
 * own). MOVED (the map is corrected and refreshed) and ASK (ASKING first,
 * map unchanged) re-send the command to the node named, a few times and only
 * within timeout_ms; TRYAGAIN (a multi-key call while its slot migrates) is
 * re-sent after a short pause within the same bound. All three are refused
 * before the command runs, so re-sending is safe. On every send *used (when
 * not NULL) is set to the connection used, so a caller can follow a write
 * with WAIT on the connection that made it; it must stay valid until cb has
 * run. Any other reply, CLUSTERDOWN included, goes to cb as is. 0, or
 * -ENOTCONN / -ENOMEM / -EINVAL (cmd incomplete) when nothing was sent (cb
 * is then never called). */
int hf_redis_cluster_command(struct hf_redis_cluster *c, struct hf_redis_conn *first,
                             struct hf_redis_conn **used, const char *key, size_t keylen,
                             struct hf_resp_cmd *cmd, uint32_t timeout_ms, hf_redis_cb *cb,
                             void *privdata) __attribute__((warn_unused_result));

/* Slot map complete and every primary in it has a ready connection. */
bool hf_redis_cluster_ready(const struct hf_redis_cluster *c);
/* Primaries in the current slot map. */
unsigned hf_redis_cluster_node_count(const struct hf_redis_cluster *c);

/* Close every pool (pending calls end DISCONNECTED, waiting ones too) and
 * free the cluster once its handles are closed. NULL is a no-op. */
void hf_redis_cluster_close(struct hf_redis_cluster *c);

#endif
