/* redis_cluster.c - the slot map, a pool per primary, and redirections. */
#include "redis_cluster.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_slots.h"
#include "log.h"
#include "metrics.h"
#include "resp.h"

#define REFRESH_MIN_INTERVAL_MS 100 /* at most ten CLUSTER SLOTS a second */
#define REFRESH_WHILE_DOWN_MS 1000  /* and one a second while not usable */
#define MAX_REDIRECTS 5             /* MOVED/ASK hops per call */
#define WAIT_FIRST_MS 5             /* a redirect target still connecting, */
#define WAIT_MAX_MS 50              /* or a TRYAGAIN: pause, then re-send */
#define MAX_TRYAGAIN 5              /* ~125 ms of pauses, then the error stands */

/* A Redis node we keep connections to: a primary in the map, an ASK or
 * MOVED target not yet in it, or a seed (one connection, only ever asked for
 * the slot map; closed once the map is complete and usable). */
struct node {
    struct hf_redis_cluster *c;
    struct node *next;
    char *addr;
    struct hf_redis_pool *pool;
    bool seed;
    bool in_map;
};

struct ccall;

struct hf_redis_cluster {
    uv_loop_t *loop;
    char **seed_addrs;
    size_t n_seeds;
    char *username;
    char *password;
    uint32_t stall_ms;
    uint32_t pool_size;
    uint32_t connect_timeout_ms;
    uint32_t command_timeout_ms;
    struct hf_redis_tls *tls; /* NULL, or every node's pools use it */
    hf_redis_setup_fn *setup;
    hf_redis_state_fn *on_state;
    void *ud;

    struct node *nodes; /* primaries, redirect targets and seeds */
    unsigned n_primaries;
    unsigned served;    /* slots with an owner */
    bool ready;
    bool first_setup_done;
    bool closing;
    bool warned_refresh;

    uv_timer_t refresh_timer;
    bool refresh_inflight;
    bool refresh_again;
    uint64_t last_refresh_ms;
    uint64_t refresh_due_ms; /* valid while the timer is active */
    unsigned refresh_rr;
    char refresh_addr[HF_CLUSTER_ADDR_MAX]; /* the node asked, for the log */
    char refresh_host[HF_CLUSTER_ADDR_MAX]; /* its host, for "?" endpoints */

    struct ccall *waiting; /* calls paused on their own timer */

    struct node *slots[HF_CLUSTER_SLOTS];
    struct node *next_slots[HF_CLUSTER_SLOTS]; /* scratch for a refresh */
};

/* One routed command: lives until its callback has run and, if its timer
 * was ever used, the timer is closed. */
struct ccall {
    struct hf_redis_cluster *c;
    hf_redis_cb *cb;
    void *privdata;
    struct hf_redis_conn **used;
    struct hf_redis_conn *conn; /* where the last send went */
    uint64_t deadline_ms;
    unsigned slot;
    unsigned redirects;
    unsigned tryagains;
    unsigned pauses;
    bool asking;
    bool timer_used;
    struct ccall *wprev, *wnext;
    bool waiting;
    char target[HF_CLUSTER_ADDR_MAX]; /* "" = the slot's owner in the map */
    uv_timer_t timer;
    struct hf_resp_cmd *cmd; /* a reference, for the re-sends */
};

static void request_refresh(struct hf_redis_cluster *c);
static void update_ready(struct hf_redis_cluster *c);

/* ---- nodes ---- */

static void node_setup(void *ud, struct hf_redis_conn *conn, bool first_ever) {
    struct node *n = ud;
    struct hf_redis_cluster *c = n->c;
    bool first = !c->first_setup_done;
    c->first_setup_done = true;
    /* A reconnect may follow a failover: ask who owns what now. */
    if (!first_ever) request_refresh(c);
    c->setup(c->ud, conn, first);
}

static void node_state(void *ud, unsigned ready) {
    struct node *n = ud;
    if (ready == 0) request_refresh(n->c);
    update_ready(n->c);
}

static void seed_setup(void *ud, struct hf_redis_conn *conn, bool first_ever) {
    (void)ud;
    (void)first_ever;
    /* Only CLUSTER SLOTS goes here: no library to load. */
    hf_redis_conn_set_ready(conn, true);
}

static void seed_state(void *ud, unsigned ready) {
    struct node *n = ud;
    if (ready > 0) request_refresh(n->c);
}

static struct node *node_find(struct hf_redis_cluster *c, const char *addr, bool seed) {
    for (struct node *n = c->nodes; n; n = n->next)
        if (n->seed == seed && strcmp(n->addr, addr) == 0) return n;
    return NULL;
}

static struct node *node_add(struct hf_redis_cluster *c, const char *addr, bool seed) {
    struct node *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->c = c;
    n->seed = seed;
    n->addr = strdup(addr);
    struct hf_redis_pool_options opts = {
        .address = addr,
        .username = c->username,
        .password = c->password,
        .pool_size = seed ? 1 : c->pool_size,
        .connect_timeout_ms = c->connect_timeout_ms,
        .stall_ms = c->stall_ms,
        .no_metrics = seed,
        .tls = c->tls,
    };
    if (n->addr)
        n->pool = hf_redis_pool_create(c->loop, &opts, seed ? seed_setup : node_setup,
                                       seed ? seed_state : node_state, n);
    if (!n->pool) {
        free(n->addr);
        free(n);
        return NULL;
    }
    if (!seed) log_info("redis cluster: connecting to node %s", addr);
    n->next = c->nodes;
    c->nodes = n;
    return n;
}

static struct node *node_get(struct hf_redis_cluster *c, const char *addr) {
    struct node *n = node_find(c, addr, false);
    return n ? n : node_add(c, addr, false);
}

/* Unlink and close; the pool frees itself once its handles are closed, and
 * calls pending on it end DISCONNECTED. */
static void node_remove(struct hf_redis_cluster *c, struct node *n) {
    for (struct node **p = &c->nodes; *p; p = &(*p)->next) {
        if (*p == n) {
            *p = n->next;
            break;
        }
    }
    if (!n->seed) log_info("redis cluster: closing connections to %s (no slots)", n->addr);
    hf_redis_pool_close(n->pool);
    free(n->addr);
    free(n);
}

static void open_seeds(struct hf_redis_cluster *c) {
    for (size_t i = 0; i < c->n_seeds; i++)
        if (!node_find(c, c->seed_addrs[i], true) && !node_add(c, c->seed_addrs[i], true))
            log_error("redis cluster: cannot open seed %s: out of memory", c->seed_addrs[i]);
}

static void close_seeds(struct hf_redis_cluster *c) {
    struct node *n = c->nodes;
    while (n) {
        struct node *next = n->next;
        if (n->seed) node_remove(c, n);
        n = next;
    }
}

/* in_map flags, the number of primaries and of slots served, from slots[]. */
static void recount(struct hf_redis_cluster *c) {
    for (struct node *n = c->nodes; n; n = n->next) n->in_map = false;
    c->served = 0;
    c->n_primaries = 0;
    for (unsigned s = 0; s < HF_CLUSTER_SLOTS; s++) {
        struct node *n = c->slots[s];
        if (!n) continue;
        c->served++;
        if (!n->in_map) c->n_primaries++;
        n->in_map = true;
    }
    hf_metrics_gauge_set(HF_G_REDIS_CLUSTER_NODES, c->n_primaries);
}

static void update_ready(struct hf_redis_cluster *c) {
    if (c->closing) return;
    bool ready = c->served == HF_CLUSTER_SLOTS;
    for (struct node *n = c->nodes; ready && n; n = n->next)
        if (n->in_map && hf_redis_pool_ready_count(n->pool) == 0) ready = false;
    if (ready == c->ready) return;
    c->ready = ready;
    if (ready) {
        log_info("redis cluster: usable (%u primaries, all %u slots served)", c->n_primaries,
                 HF_CLUSTER_SLOTS);
        close_seeds(c);
    } else {
        request_refresh(c);
    }
    if (c->on_state) c->on_state(c->ud, ready ? 1 : 0);
}

/* ---- the slot map: CLUSTER SLOTS ---- */

static void schedule_refresh(struct hf_redis_cluster *c, uint64_t delay);

/* [[start, end, [host, port, id, ...], replicas...], ...] into next_slots;
 * false (and nothing applied) when any part is malformed. */
static bool parse_slots(struct hf_redis_cluster *c, const redisReply *r, const char **why) {
    char addr[HF_CLUSTER_ADDR_MAX];
    memset(c->next_slots, 0, sizeof c->next_slots);
    if (r->type != REDIS_REPLY_ARRAY) {
        *why = r->type == REDIS_REPLY_ERROR ? r->str : "not an array";
        return false;
    }
    /* Addresses first, so that a bad reply creates no node. */
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            e->element[0]->type != REDIS_REPLY_INTEGER ||
            e->element[1]->type != REDIS_REPLY_INTEGER ||
            e->element[2]->type != REDIS_REPLY_ARRAY || e->element[2]->elements < 2 ||
            e->element[2]->element[0]->type != REDIS_REPLY_STRING ||
            e->element[2]->element[1]->type != REDIS_REPLY_INTEGER) {
            *why = "unexpected shape";
            return false;
        }
        long long from = e->element[0]->integer, to = e->element[1]->integer;
        const redisReply *host = e->element[2]->element[0];
        if (from < 0 || to < from || to >= HF_CLUSTER_SLOTS ||
            !hf_cluster_addr_format(addr, sizeof addr, host->str, host->len,
                                    e->element[2]->element[1]->integer, c->refresh_host)) {
            *why = "bad slot range or node address";
            return false;
        }
    }
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        const redisReply *host = e->element[2]->element[0];
        hf_cluster_addr_format(addr, sizeof addr, host->str, host->len,
                               e->element[2]->element[1]->integer, c->refresh_host);
        struct node *n = node_get(c, addr);
        if (!n) {
            *why = "out of memory";
            return false;
        }
        for (long long s = e->element[0]->integer; s <= e->element[1]->integer; s++)
            c->next_slots[s] = n;
    }
    return true;
}

static void on_slots_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct hf_redis_cluster *c = privdata;
    c->refresh_inflight = false;
    if (c->closing) return;
    c->last_refresh_ms = uv_now(c->loop);
    const char *why = hf_redis_status_name(status);
    if (status == HF_REDIS_OK && parse_slots(c, r, &why)) {
        c->warned_refresh = false;
        bool changed = memcmp(c->slots, c->next_slots, sizeof c->slots) != 0;
        memcpy(c->slots, c->next_slots, sizeof c->slots);
        recount(c);
        if (changed)
            log_info("redis cluster: slot map from %s: %u primaries, %u of %u slots served",
                     c->refresh_addr, c->n_primaries, c->served, HF_CLUSTER_SLOTS);
        /* Nodes that own nothing any more (and are not seeds) go. */
        struct node *n = c->nodes;
        while (n) {
            struct node *next = n->next;
            if (!n->seed && !n->in_map) node_remove(c, n);
            n = next;
        }
        update_ready(c);
    } else if (!c->warned_refresh) {
        c->warned_refresh = true;
        log_error("redis cluster: CLUSTER SLOTS on %s failed: %s%s", c->refresh_addr, why,
                  strstr(why, "cluster support disabled")
                      ? " (redis.cluster is true but this server is not a cluster node)"
                      : "");
    }
    if (c->refresh_again) {
        c->refresh_again = false;
        request_refresh(c);
    } else if (!c->ready) {
        schedule_refresh(c, REFRESH_WHILE_DOWN_MS);
    }
}

/* A ready connection to ask for the map: the primaries in turn, then the
 * seeds (opened again when nothing else is reachable). */
static struct hf_redis_conn *refresh_conn(struct hf_redis_cluster *c) {
    struct hf_redis_conn *found[64];
    unsigned n = 0;
    for (struct node *nd = c->nodes; nd && n < 64; nd = nd->next) {
        struct hf_redis_conn *conn = hf_redis_pool_pick(nd->pool);
        if (conn) found[n++] = conn;
    }
    if (n == 0) {
        open_seeds(c);
        return NULL;
    }
    return found[c->refresh_rr++ % n];
}

static void on_refresh_timer(uv_timer_t *t) {
    struct hf_redis_cluster *c = t->data;
    if (c->closing || c->refresh_inflight) return;
    struct hf_redis_conn *conn = refresh_conn(c);
    if (!conn) {
        /* A seed that comes up asks again (seed_state). */
        schedule_refresh(c, REFRESH_WHILE_DOWN_MS);
        return;
    }
    const char *addr = hf_redis_pool_address(hf_redis_conn_pool(conn));
    snprintf(c->refresh_addr, sizeof c->refresh_addr, "%s", addr);
    hf_cluster_addr_host(addr, c->refresh_host, sizeof c->refresh_host);
    const char *argv[] = {"CLUSTER", "SLOTS"};
    if (hf_redis_conn_command(conn, 2, argv, NULL, c->command_timeout_ms, on_slots_reply, c) != 0) {
        schedule_refresh(c, REFRESH_MIN_INTERVAL_MS);
        return;
    }
    c->refresh_inflight = true;
    c->last_refresh_ms = uv_now(c->loop);
    hf_metrics_inc(HF_C_REDIS_CLUSTER_REFRESHES);
}

static void schedule_refresh(struct hf_redis_cluster *c, uint64_t delay) {
    if (c->closing) return;
    uint64_t due = uv_now(c->loop) + delay;
    if (uv_is_active((uv_handle_t *)&c->refresh_timer) && c->refresh_due_ms <= due) return;
    c->refresh_due_ms = due;
    uv_timer_start(&c->refresh_timer, on_refresh_timer, delay, 0);
}

/* Soon, but never more often than REFRESH_MIN_INTERVAL_MS, and always from
 * the timer so that no pool callback re-enters another. */
static void request_refresh(struct hf_redis_cluster *c) {
    if (c->closing) return;
    if (c->refresh_inflight) {
        c->refresh_again = true;
        return;
    }
    uint64_t now = uv_now(c->loop), next = c->last_refresh_ms + REFRESH_MIN_INTERVAL_MS;
    schedule_refresh(c, c->last_refresh_ms && next > now ? next - now : 0);
}

/* A node the slot map (from CLUSTER SLOTS) or the configuration named.
 * Redirections go only to these: a reply cannot point the daemon at an
 * address nobody configured or announced. */
static bool node_known(struct hf_redis_cluster *c, const char *addr) {
    return node_find(c, addr, false) || node_find(c, addr, true);
}

/* MOVED names the slot's owner: believe it at once when it is a known node
 * (the call is re-sent there) and fetch the whole map, since a move rarely
 * comes alone. */
static void note_moved(struct hf_redis_cluster *c, unsigned slot, const char *addr) {
    struct node *n = node_known(c, addr) ? node_get(c, addr) : NULL;
    if (n && c->slots[slot] != n) {
        c->slots[slot] = n;
        recount(c);
        update_ready(c);
    }
    request_refresh(c);
}

/* ---- routed calls ---- */

static void ccall_free(struct ccall *cc) {
    hf_resp_cmd_unref(cc->cmd);
    free(cc);
}

static void on_ccall_closed(uv_handle_t *h) { ccall_free(h->data); }

static void ccall_unwait(struct ccall *cc) {
    if (!cc->waiting) return;
    cc->waiting = false;
    if (cc->wprev) cc->wprev->wnext = cc->wnext;
    else cc->c->waiting = cc->wnext;
    if (cc->wnext) cc->wnext->wprev = cc->wprev;
    cc->wprev = cc->wnext = NULL;
}

static void ccall_finish(struct ccall *cc, enum hf_redis_status status, redisReply *r) {
    ccall_unwait(cc);
    cc->cb(cc->privdata, status, r);
    if (cc->timer_used) uv_close((uv_handle_t *)&cc->timer, on_ccall_closed);
    else ccall_free(cc);
}

static void on_ccall_reply(void *privdata, enum hf_redis_status status, redisReply *r);

static void on_asking_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    (void)privdata;
    (void)status;
    (void)r; /* the command after it says whether it worked */
}

static uint32_t time_left(const struct ccall *cc) {
    uint64_t now = uv_now(cc->c->loop);
    return now < cc->deadline_ms ? (uint32_t)(cc->deadline_ms - now) : 0;
}

static struct hf_redis_conn *ccall_route(struct ccall *cc) {
    struct hf_redis_cluster *c = cc->c;
    struct node *n = cc->target[0] ? node_get(c, cc->target) : c->slots[cc->slot];
    return n ? hf_redis_pool_pick(n->pool) : NULL;
}

static int ccall_send(struct ccall *cc, struct hf_redis_conn *conn) {
    uint32_t left = time_left(cc);
    if (left == 0) return -ETIMEDOUT;
    if (cc->asking) {
        /* ASKING holds for the next command on this connection only, and
         * nothing can come between the two: one loop, one queue. */
        int rc = hf_redis_conn_send_formatted(conn, HF_RESP_ASKING, sizeof HF_RESP_ASKING - 1,
                                              left, on_asking_reply, NULL);
        if (rc != 0) return rc;
    }
    int rc = hf_redis_conn_send_formatted(conn, cc->cmd->buf, cc->cmd->len, left,
                                          on_ccall_reply, cc);
    if (rc == 0) {
        cc->conn = conn;
        if (cc->used) *cc->used = conn;
    }
    return rc;
}

static void on_ccall_timer(uv_timer_t *t);

static void ccall_pause(struct ccall *cc, uint32_t delay) {
    struct hf_redis_cluster *c = cc->c;
    if (!cc->timer_used) {
        uv_timer_init(c->loop, &cc->timer);
        cc->timer.data = cc;
        cc->timer_used = true;
    }
    cc->waiting = true;
    cc->wprev = NULL;
    cc->wnext = c->waiting;
    if (c->waiting) c->waiting->wprev = cc;
    c->waiting = cc;
    uv_timer_start(&cc->timer, on_ccall_timer, delay, 0);
}

static uint32_t pause_ms(struct ccall *cc) {
    uint32_t delay = WAIT_FIRST_MS << (cc->pauses < 4 ? cc->pauses : 4);
    cc->pauses++;
    if (delay > WAIT_MAX_MS) delay = WAIT_MAX_MS;
    uint32_t left = time_left(cc);
    return delay < left ? delay : left;
}

/* Send to the current target now, or pause until it has a ready
 * connection. false: out of time or the send failed. */
static bool ccall_resend(struct ccall *cc) {
    if (time_left(cc) == 0) return false;
    struct hf_redis_conn *conn = ccall_route(cc);
    if (conn) return ccall_send(cc, conn) == 0;
    ccall_pause(cc, pause_ms(cc));
    return true;
}

static void on_ccall_timer(uv_timer_t *t) {
    struct ccall *cc = t->data;
    ccall_unwait(cc);
    struct hf_redis_conn *conn = ccall_route(cc);
    if (conn) {
        if (ccall_send(cc, conn) != 0) ccall_finish(cc, HF_REDIS_DISCONNECTED, NULL);
    } else if (time_left(cc) == 0) {
        hf_metrics_inc(HF_C_REDIS_TIMEOUTS);
        ccall_finish(cc, HF_REDIS_TIMEOUT, NULL);
    } else {
        ccall_pause(cc, pause_ms(cc));
    }
}

static void on_ccall_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct ccall *cc = privdata;
    /* Not OK: the cluster may be closing; touch nothing but the call. */
    if (status != HF_REDIS_OK || r->type != REDIS_REPLY_ERROR) {
        ccall_finish(cc, status, r);
        return;
    }
    struct hf_redis_cluster *c = cc->c;
    char host[HF_CLUSTER_ADDR_MAX], addr[HF_CLUSTER_ADDR_MAX];
    unsigned slot;
    hf_cluster_addr_host(hf_redis_pool_address(hf_redis_conn_pool(cc->conn)), host, sizeof host);
    enum hf_redirect kind =
        hf_cluster_parse_redirect(r->str, r->len, host, &slot, addr, sizeof addr);
    if (kind != HF_REDIRECT_NONE) {
        hf_metrics_inc(kind == HF_REDIRECT_MOVED ? HF_C_REDIS_MOVED : HF_C_REDIS_ASK);
        /* Only the map changes on MOVED; ASK is about this one call. */
        if (kind == HF_REDIRECT_MOVED) note_moved(c, slot, addr);
        if (!node_known(c, addr) && cc->redirects++ < MAX_REDIRECTS && !c->closing &&
            time_left(cc) > 0) {
            /* Not in the map yet (a new primary) or not a node at all: only
             * a refreshed map, from the nodes we know, may add it. Wait for
             * it and route by slot again. */
            request_refresh(c);
            cc->target[0] = '\0';
            cc->asking = false;
            ccall_pause(cc, pause_ms(cc));
            return;
        }
        if (node_known(c, addr) && cc->redirects++ < MAX_REDIRECTS && !c->closing) {
            snprintf(cc->target, sizeof cc->target, "%s", addr);
            cc->asking = kind == HF_REDIRECT_ASK;
            /* The command was refused before it ran, so sending it again is
             * safe, also for a hold. */
            if (ccall_resend(cc)) return;
        } else {
            log_warn("redis cluster: slot %u: giving up after %u redirections (%s)", slot,
                     cc->redirects - 1, r->str);
        }
    } else if (strncmp(r->str, "TRYAGAIN", 8) == 0 && cc->tryagains++ < MAX_TRYAGAIN &&
               !c->closing && time_left(cc) > 0) {
        /* A multi-key call while its slot moves and its keys are split: also
         * refused before it ran. Same target after a pause; a migration that
         * takes longer is answered with the error (UNAVAILABLE). */
        ccall_pause(cc, pause_ms(cc));
        return;
    }
    ccall_finish(cc, status, r);
}

int hf_redis_cluster_command(struct hf_redis_cluster *c, struct hf_redis_conn *first,
                             struct hf_redis_conn **used, const char *key, size_t keylen,
                             struct hf_resp_cmd *cmd, uint32_t timeout_ms, hf_redis_cb *cb,
                             void *privdata) {
    if (c->closing) return -ENOTCONN;
    if (!hf_resp_cmd_complete(cmd)) return -EINVAL;
    unsigned slot = hf_cluster_keyslot(key, keylen);
    struct node *owner = c->slots[slot];
    struct hf_redis_conn *conn = first ? first : owner ? hf_redis_pool_pick(owner->pool) : NULL;
    if (!conn) {
        /* No owner, or its connections are all down: maybe it failed over. */
        request_refresh(c);
        return -ENOTCONN;
    }
    struct ccall *cc = calloc(1, sizeof *cc);
    if (!cc) return -ENOMEM;
    cc->c = c;
    cc->cb = cb;
    cc->privdata = privdata;
    cc->used = used;
    cc->slot = slot;
    cc->deadline_ms = uv_now(c->loop) + (timeout_ms ? timeout_ms : 1);
    /* The bytes as formatted by the caller, not a copy. */
    cc->cmd = hf_resp_cmd_ref(cmd);
    int rc = ccall_send(cc, conn);
    if (rc != 0) ccall_free(cc);
    return rc;
}

struct hf_redis_conn *hf_redis_cluster_pick(struct hf_redis_cluster *c, const char *key,
                                            size_t keylen) {
    struct node *n = c->slots[hf_cluster_keyslot(key, keylen)];
    return n ? hf_redis_pool_pick(n->pool) : NULL;
}

bool hf_redis_cluster_ready(const struct hf_redis_cluster *c) { return c->ready; }

unsigned hf_redis_cluster_node_count(const struct hf_redis_cluster *c) { return c->n_primaries; }

/* ---- life cycle ---- */

static void free_cluster(struct hf_redis_cluster *c) {
    for (size_t i = 0; i < c->n_seeds; i++) free(c->seed_addrs[i]);
    free(c->seed_addrs);
    free(c->username);
    free(c->password);
    hf_redis_tls_unref(c->tls);
    free(c);
}

static void on_refresh_timer_closed(uv_handle_t *h) { free_cluster(h->data); }

struct hf_redis_cluster *hf_redis_cluster_create(uv_loop_t *loop,
                                                 const struct hf_redis_cluster_options *opts,
                                                 hf_redis_setup_fn *setup,
                                                 hf_redis_state_fn *on_state, void *ud) {
    struct hf_redis_cluster *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->loop = loop;
    c->pool_size = opts->pool_size ? opts->pool_size : 1;
    c->stall_ms = opts->stall_ms;
    c->connect_timeout_ms = opts->connect_timeout_ms;
    c->command_timeout_ms = opts->command_timeout_ms;
    if (opts->tls) c->tls = hf_redis_tls_ref(opts->tls);
    c->setup = setup;
    c->on_state = on_state;
    c->ud = ud;
    c->username = opts->username ? strdup(opts->username) : NULL;
    c->password = opts->password ? strdup(opts->password) : NULL;
    c->seed_addrs = calloc(opts->n_seeds ? opts->n_seeds : 1, sizeof *c->seed_addrs);
    bool ok = c->seed_addrs && opts->n_seeds > 0 && (!opts->username || c->username) &&
              (!opts->password || c->password);
    for (size_t i = 0; ok && i < opts->n_seeds; i++) {
        c->seed_addrs[i] = strdup(opts->seeds[i]);
        if (!c->seed_addrs[i]) ok = false;
        c->n_seeds = i + 1;
    }
    if (!ok) {
        free_cluster(c);
        return NULL;
    }
    uv_timer_init(loop, &c->refresh_timer);
    c->refresh_timer.data = c;
    hf_metrics_gauge_set(HF_G_REDIS_CLUSTER_NODES, 0);
    /* The seeds' pools connect from the loop; when one is up it asks for
     * the slot map, which creates a pool per primary. */
    open_seeds(c);
    return c;
}

void hf_redis_cluster_close(struct hf_redis_cluster *c) {
    if (!c || c->closing) return;
    c->closing = true;
    while (c->waiting) {
        struct ccall *cc = c->waiting;
        uv_timer_stop(&cc->timer);
        ccall_finish(cc, HF_REDIS_DISCONNECTED, NULL);
    }
    while (c->nodes) {
        struct node *n = c->nodes;
        c->nodes = n->next;
        hf_redis_pool_close(n->pool);
        free(n->addr);
        free(n);
    }
    memset(c->slots, 0, sizeof c->slots);
    uv_close((uv_handle_t *)&c->refresh_timer, on_refresh_timer_closed);
}
