/* wait_line.c - waiting in line (docs/waiting.md): the waiters of one daemon,
 * their tries of hf1_hold_wait, their fallback timers, and the one pub/sub
 * connection that tells them when a release or a sale named their ticket. */
#include "wait_line.h"

#include <hiredis/async.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "log.h"
#include "metrics.h"
#include "numfmt.h"
#include "redis_events.h"
#include "request.h"
#include "token.h"

#define WAIT_CHANNEL "holdfast:wake" /* as in scripts/holdfast.lua */
#define RECONNECT_MS 1000      /* doubled per failure in a row ... */
#define RECONNECT_MAX_MS 30000 /* ... up to this */
#define FENCE_SUFFIX "#fence"
#define WAITERS_SUFFIX "#waiters"
#define LINE_PREFIX "#line:"
#define POOL_LINE_PREFIX "#pline:"

struct hf_wait_hub {
    struct hf_daemon *d;
    uv_timer_t retry;          /* reconnects the subscription */
    redisAsyncContext *ac;     /* the subscription, or NULL */
    char *host, *path;         /* redis.address (one of them) */
    int port;
    char *username, *password;
    uint32_t connect_timeout_ms;
    bool enabled;              /* false with TLS: waiters poll */
    bool subscribed;
    bool closing;
    bool down_logged;
    unsigned failures;         /* reconnects in a row without a subscription */
    struct hf_wait *waiters;   /* every waiter whose wait has not ended */
};

struct hf_wait {
    struct hf_wait_hub *hub;
    struct hf_wait *prev, *next;
    bool listed;
    struct hf_request *req;
    const struct hf_target *t; /* seats: for the answer; NULL for pools */
    void (*held)(void *privdata, long long index, long long free); /* pools */
    enum hf_script_fn fn;
    /* The try's KEYS: the hold function's n_hold (keys[0] the fence), the
     * partition's waiters, then the lines. */
    char **keys;
    size_t *lens;
    size_t nkeys, n_hold;
    /* The try's ARGV: the hold function's n_args (borrowed), ticket, lease. */
    const char **args;
    size_t *arg_lens;
    size_t n_args;
    char lease_s[24];
    char ticket[HF_TOKEN_RANDOM_CHARS + 1];
    uint64_t wait_end;         /* loop time */
    struct hf_redis_conn **conn;
    hf_redis_cb *cb;
    void *privdata;
    bool in_flight;            /* a try is on its way */
    bool again;                /* woken while a try was on its way */
    bool ended;
    bool gone;                 /* the client left or the daemon drains */
    bool tried;                /* the first try answered */
    bool failing;              /* the last try met a Redis failure */
    long long index;           /* the id that kept the last try waiting */
    long long extra;           /* pools: units free then (-1: unknown) */
};

/* ---- keys ---- */

/* "hf:{<ns>:<partition>}:" of a hold key (ns, partition and ids never hold
 * '}' or ':'), its length; 0 if the key has another shape. */
static size_t key_prefix_len(const char *key, size_t len) {
    const char *end = memchr(key, '}', len);
    if (!end || (size_t)(end - key) + 2 > len || end[1] != ':') return 0;
    return (size_t)(end - key) + 2;
}

/* Fills keys[at..at+n) with the lines of hold_keys; false on OOM. */
static bool add_lines(char **keys, size_t *lens, size_t at, const char *const *hold_keys,
                      const size_t *hold_lens, size_t n) {
    for (size_t i = 0; i < n; i++) {
        size_t p = key_prefix_len(hold_keys[i], hold_lens[i]);
        if (!p) return false;
        size_t id_len = hold_lens[i] - p, pl = strlen(LINE_PREFIX);
        char *k = malloc(p + pl + id_len + 1);
        if (!k) return false;
        memcpy(k, hold_keys[i], p);
        memcpy(k + p, LINE_PREFIX, pl);
        memcpy(k + p + pl, hold_keys[i] + p, id_len);
        k[p + pl + id_len] = '\0';
        keys[at + i] = k;
        lens[at + i] = p + pl + id_len;
    }
    return true;
}

/* "<prefix><kind><name>" where prefix is "hf:{<ns>:<partition>}:". */
static char *prefixed(const char *prefix, size_t plen, const char *kind, const char *name,
                      size_t *out_len) {
    size_t kl = strlen(kind), nl = strlen(name);
    char *k = malloc(plen + kl + nl + 1);
    if (!k) return NULL;
    memcpy(k, prefix, plen);
    memcpy(k + plen, kind, kl);
    memcpy(k + plen + kl, name, nl + 1);
    *out_len = plen + kl + nl;
    return k;
}

static char *waiters_key(const char *hold_key, size_t len, size_t *out_len) {
    size_t p = key_prefix_len(hold_key, len), sl = strlen(WAITERS_SUFFIX);
    if (!p) return NULL;
    char *k = malloc(p + sl + 1);
    if (!k) return NULL;
    memcpy(k, hold_key, p);
    memcpy(k + p, WAITERS_SUFFIX, sl + 1);
    *out_len = p + sl;
    return k;
}

static void free_keys(char **keys, size_t *lens, size_t n) {
    if (keys)
        for (size_t i = 0; i < n; i++) free(keys[i]);
    free(keys);
    free(lens);
}

/* ---- the list of waiters ---- */

static void list_add(struct hf_wait *w) {
    struct hf_wait_hub *h = w->hub;
    w->prev = NULL;
    w->next = h->waiters;
    if (h->waiters) h->waiters->prev = w;
    h->waiters = w;
    w->listed = true;
    hf_metrics_gauge_add(HF_G_WAITERS, 1);
}

static void list_remove(struct hf_wait *w) {
    if (!w->listed || !w->hub) return;
    struct hf_wait_hub *h = w->hub;
    if (w->prev) w->prev->next = w->next;
    else h->waiters = w->next;
    if (w->next) w->next->prev = w->prev;
    w->prev = w->next = NULL;
    w->listed = false;
    hf_metrics_gauge_add(HF_G_WAITERS, -1);
}

static struct hf_wait *find_ticket(struct hf_wait_hub *h, const char *ticket, size_t len) {
    if (len != HF_TOKEN_RANDOM_CHARS) return NULL;
    for (struct hf_wait *w = h->waiters; w; w = w->next)
        if (memcmp(w->ticket, ticket, len) == 0) return w;
    return NULL;
}

/* ---- one waiter ---- */

static void try_hold(struct hf_wait *w);

static void on_leave_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    (void)privdata, (void)status, (void)r; /* best effort: the lease ends it anyway */
}

/* Out of every line at once (the ticket's lease would end it otherwise). */
static void leave_lines(struct hf_wait *w) {
    /* The waiters key and the lines close the try's keys. */
    const char *const *keys = (const char *const *)w->keys + w->n_hold;
    const size_t *lens = w->lens + w->n_hold;
    size_t n = w->nkeys - w->n_hold;
    const char *args[] = {w->ticket};
    size_t arg_lens[] = {HF_TOKEN_RANDOM_CHARS};
    struct hf_request *req = w->req;
    if (!w->hub) return; /* shutting down: the lease ends the ticket */
    if (hf_front_call(req->d->redis, NULL, HF_FN_WAIT_LEAVE, n, keys, lens, 1, args,
                      arg_lens, req->cfg->redis_command_timeout_ms, on_leave_reply, NULL) != 0)
        log_debug("hold cid=%s: could not leave the line; the ticket's lease ends it",
                  req->correlation_id);
}

/* The wait ends without a grant: leave, answer (unless answered), done. */
static void end_wait(struct hf_wait *w) {
    struct hf_request *req = w->req;
    w->ended = true;
    list_remove(w);
    hf_request_timer_stop(req);
    leave_lines(w);
    if (req->answered) {
        hf_metrics_inc(HF_C_WAITS_TIMED_OUT); /* the deadline answered it */
    } else if (w->gone) {
        hf_metrics_inc(HF_C_WAITS_LEFT);
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        hf_request_client_gone(req) ? "the client left while waiting"
                                                    : "the daemon is shutting down");
    } else if (w->failing || !w->tried) {
        hf_metrics_inc(HF_C_WAITS_LEFT);
        hf_request_fail(req, HF_CODE(UNAVAILABLE), NULL, NULL,
                        "redis was unavailable while waiting");
    } else {
        hf_metrics_inc(HF_C_WAITS_TIMED_OUT);
        if (w->held) w->held(w->privdata, w->index, w->extra);
        else hf_answer_script_code(req, w->t, HF_SC_HELD_BY_ANOTHER, w->index);
    }
    hf_request_op_done(req);
}

/* Hand the reply to the op: it answers and ends the op. */
static void hand_over(struct hf_wait *w, enum hf_redis_status status, redisReply *r) {
    w->ended = true;
    list_remove(w);
    hf_request_timer_stop(w->req);
    w->cb(w->privdata, status, r);
}

static bool wait_over(const struct hf_wait *w) {
    const struct hf_request *req = w->req;
    return w->gone || req->answered || hf_request_client_gone(req) ||
           uv_now(req->d->loop) >= w->wait_end;
}

static void on_timer(void *arg) {
    struct hf_wait *w = arg;
    if (w->ended || w->in_flight) return;
    if (wait_over(w)) end_wait(w);
    else try_hold(w);
}

static void schedule(struct hf_wait *w, uint64_t ms) {
    uint64_t now = uv_now(w->req->d->loop);
    uint64_t left = w->wait_end > now ? w->wait_end - now : 0;
    hf_request_timer_start(w->req, ms < left ? ms : left, on_timer, w);
}

static uint64_t poll_ms(const struct hf_wait *w) {
    return w->hub && w->hub->subscribed ? HF_WAIT_POLL_SUBSCRIBED_MS : HF_WAIT_POLL_MS;
}

static void on_try_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct hf_wait *w = privdata;
    long long code = 0;
    bool ok = status == HF_REDIS_OK && hf_reply_code(r, &code);
    w->in_flight = false;
    if (!ok && !w->tried) {
        leave_lines(w); /* in case the call ran and only its reply was lost */
        hand_over(w, status, r); /* answered as a hold without a wait */
        return;
    }
    w->tried = true;
    if (ok && code == HF_SC_GRANTED) {
        hf_metrics_inc(HF_C_WAITS_GRANTED);
        hand_over(w, status, r); /* a grant after the answer is withdrawn there */
        return;
    }
    if (ok && code != HF_SC_HELD_BY_ANOTHER) {
        if (code == HF_SC_CONFIRMED) hf_metrics_inc(HF_C_WAITS_CONFIRMED);
        else leave_lines(w); /* a pool's mirror missing: the op may start again */
        hand_over(w, status, r);
        return;
    }
    w->failing = !ok;
    long long pttl = -1, first = 0;
    if (ok) {
        w->index = hf_reply_int(r, 1);
        pttl = r->elements > 2 ? hf_reply_int(r, 2) : -1;
        first = r->elements > 3 ? hf_reply_int(r, 3) : 0;
        w->extra = r->elements > 4 ? hf_reply_int(r, 4) : -1;
    }
    if (wait_over(w)) {
        end_wait(w);
        return;
    }
    if (w->again) {
        w->again = false;
        try_hold(w);
        return;
    }
    uint64_t ms = poll_ms(w);
    /* The head waits for the holder's TTL at most (expiry publishes nothing). */
    if (first && pttl >= 0 && (uint64_t)pttl + 1 < ms) ms = (uint64_t)pttl + 1;
    schedule(w, ms);
}

static void try_hold(struct hf_wait *w) {
    struct hf_request *req = w->req;
    uint64_t now = uv_now(req->d->loop);
    uint64_t lease = w->wait_end > now ? w->wait_end - now : 0;
    lease += 500; /* past the wait's end: the last try still finds it */
    if (lease > HF_WAIT_LEASE_MS) lease = HF_WAIT_LEASE_MS;
    w->arg_lens[w->n_args + 1] = hf_u64_dec(w->lease_s, lease);
    w->again = false;
    w->in_flight = true;
    if (hf_front_call(req->d->redis, w->conn, w->fn, w->nkeys, (const char *const *)w->keys,
                      w->lens, w->n_args + 2, w->args, w->arg_lens,
                      req->cfg->redis_command_timeout_ms, on_try_reply, w) != 0) {
        w->in_flight = false;
        w->failing = true;
        if (wait_over(w)) end_wait(w);
        else schedule(w, poll_ms(w));
    }
}

/* A release or sale named this waiter's ticket. */
static void wake(struct hf_wait *w) {
    if (w->ended) return;
    hf_metrics_inc(HF_C_WAIT_WAKEUPS);
    if (w->in_flight) {
        w->again = true;
        return;
    }
    hf_request_timer_stop(w->req);
    if (wait_over(w)) end_wait(w);
    else try_hold(w);
}

static void on_client_gone(void *arg) {
    struct hf_wait *w = arg;
    if (w->ended) return;
    w->gone = true;
    if (!w->in_flight) end_wait(w); /* else its reply ends it (a grant is withdrawn) */
}

static void free_wait(struct hf_wait *w) {
    free_keys(w->keys, w->lens, w->nkeys);
    free(w->args);
    free(w->arg_lens);
    free(w);
}

/* A wait whose try is fn with the hold function's keys (copied: key 0 the
 * fence) and args (borrowed); the waiters key and the lines are added by
 * the caller into w->keys[n_hold..]. NULL on OOM. */
static struct hf_wait *wait_create(enum hf_script_fn fn, const char *const *keys,
                                   const size_t *key_lens, size_t n_hold, size_t n_lines,
                                   const char *const *args, size_t n_args) {
    struct hf_wait *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->fn = fn;
    w->n_hold = n_hold;
    w->nkeys = n_hold + 1 + n_lines;
    w->keys = calloc(w->nkeys, sizeof *w->keys);
    w->lens = calloc(w->nkeys, sizeof *w->lens);
    w->n_args = n_args;
    w->args = calloc(n_args + 2, sizeof *w->args);
    w->arg_lens = calloc(n_args + 2, sizeof *w->arg_lens);
    bool ok = w->keys && w->lens && w->args && w->arg_lens && hf_token_random(w->ticket) == 0;
    for (size_t i = 0; ok && i < n_hold; i++) {
        w->keys[i] = strndup(keys[i], key_lens[i]);
        w->lens[i] = key_lens[i];
        ok = w->keys[i] != NULL;
    }
    if (ok) {
        w->keys[n_hold] = waiters_key(keys[0], key_lens[0], &w->lens[n_hold]);
        ok = w->keys[n_hold] != NULL;
    }
    if (!ok) {
        free_wait(w);
        return NULL;
    }
    for (size_t i = 0; i < n_args; i++) {
        w->args[i] = args[i];
        w->arg_lens[i] = strlen(args[i]);
    }
    w->args[n_args] = w->ticket;
    w->arg_lens[n_args] = HF_TOKEN_RANDOM_CHARS;
    w->args[n_args + 1] = w->lease_s;
    return w;
}

static int wait_begin(struct hf_request *req, struct hf_wait *w, uint32_t wait_ms,
                      struct hf_redis_conn **conn, hf_redis_cb *cb, void *privdata,
                      struct hf_wait **out) {
    w->hub = req->d->waits;
    w->req = req;
    w->conn = conn;
    w->cb = cb;
    w->privdata = privdata;
    w->extra = -1;
    uint32_t left = hf_request_remaining_ms(req);
    w->wait_end = uv_now(req->d->loop) + (wait_ms < left ? wait_ms : left);
    *out = w;
    list_add(w);
    hf_request_on_client_gone(req, on_client_gone, w);
    try_hold(w);
    return 0;
}

int hf_wait_start(struct hf_request *req, const struct hf_target *t, const char *random,
                  const char *ttl_s, uint32_t wait_ms, struct hf_redis_conn **conn,
                  hf_redis_cb *cb, void *privdata, struct hf_wait **out) {
    if (!req->d->waits) return -1;
    const struct hf_keyset *ks = t->keys;
    size_t n = ks->count - 1;
    const char *args[] = {random, ttl_s};
    struct hf_wait *w = wait_create(HF_FN_HOLD_WAIT, ks->keys, ks->lens, ks->count, n, args, 2);
    if (!w) return -1;
    if (!add_lines(w->keys, w->lens, ks->count + 1, ks->keys + 1, ks->lens + 1, n)) {
        free_wait(w);
        return -1;
    }
    w->t = t;
    return wait_begin(req, w, wait_ms, conn, cb, privdata, out);
}

/* The lines of pools: "hf:{<ns>:<partition>}:#pline:<pool>", from the fence
 * key's prefix. */
static bool add_pool_lines(char **keys, size_t *lens, size_t at, const char *fence_key,
                           size_t fence_len, char *const *pools, size_t n) {
    size_t plen = key_prefix_len(fence_key, fence_len);
    if (!plen) return false;
    for (size_t i = 0; i < n; i++)
        if (!(keys[at + i] = prefixed(fence_key, plen, POOL_LINE_PREFIX, pools[i], &lens[at + i])))
            return false;
    return true;
}

int hf_wait_start_pools(struct hf_request *req, const char *const *keys, const size_t *key_lens,
                        size_t n_keys, char *const *pools, size_t n_pools,
                        const char *const *args, size_t n_args, uint32_t wait_ms,
                        struct hf_redis_conn **conn, hf_redis_cb *cb,
                        void (*held)(void *privdata, long long index, long long free),
                        void *privdata, struct hf_wait **out) {
    if (!req->d->waits) return -1;
    struct hf_wait *w =
        wait_create(HF_FN_POOL_HOLD_WAIT, keys, key_lens, n_keys, n_pools, args, n_args);
    if (!w) return -1;
    if (!add_pool_lines(w->keys, w->lens, n_keys + 1, keys[0], key_lens[0], pools, n_pools)) {
        free_wait(w);
        return -1;
    }
    w->held = held;
    return wait_begin(req, w, wait_ms, conn, cb, privdata, out);
}

void hf_wait_free(struct hf_wait *w) {
    if (!w) return;
    list_remove(w);
    free_wait(w);
}

/* ---- wake-ups ---- */

static void wake_tickets(struct hf_wait_hub *h, const redisReply *r) {
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e->type != REDIS_REPLY_STRING) continue;
        struct hf_wait *w = find_ticket(h, e->str, e->len);
        if (w) wake(w);
    }
}

static void on_wake_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct hf_daemon *d = privdata;
    /* With the subscription up, the same tickets come as messages. */
    if (status == HF_REDIS_OK && d->waits && !d->waits->subscribed) wake_tickets(d->waits, r);
}

void hf_wait_wake_keys(struct hf_daemon *d, const char *const *hold_keys, const size_t *lens,
                       size_t n, bool confirmed) {
    if (!d->redis || n == 0) return;
    char **keys = calloc(n + 1, sizeof *keys);
    size_t *klens = calloc(n + 1, sizeof *klens);
    bool ok = keys && klens && (keys[0] = waiters_key(hold_keys[0], lens[0], &klens[0])) &&
              add_lines(keys, klens, 1, hold_keys, lens, n);
    if (ok) {
        const char *args[] = {confirmed ? "1" : "0"};
        size_t arg_lens[] = {1};
        if (hf_front_call(d->redis, NULL, HF_FN_WAIT_WAKE, n + 1, (const char *const *)keys,
                          klens, 1, args, arg_lens, d->cfg->redis_command_timeout_ms,
                          on_wake_reply, d) != 0)
            log_debug("could not send a wake-up; waiters poll");
    }
    free_keys(keys, klens, n + 1);
}

void hf_wait_wake_pools(struct hf_daemon *d, const char *fence_key, size_t fence_len,
                        char *const *pools, size_t n_pools) {
    if (!d->redis || n_pools == 0) return;
    char **keys = calloc(n_pools + 1, sizeof *keys);
    size_t *lens = calloc(n_pools + 1, sizeof *lens);
    bool ok = keys && lens && (keys[0] = waiters_key(fence_key, fence_len, &lens[0])) &&
              add_pool_lines(keys, lens, 1, fence_key, fence_len, pools, n_pools);
    if (ok) {
        const char *args[] = {"0"};
        size_t arg_lens[] = {1};
        if (hf_front_call(d->redis, NULL, HF_FN_WAIT_WAKE, n_pools + 1, (const char *const *)keys,
                          lens, 1, args, arg_lens, d->cfg->redis_command_timeout_ms,
                          on_wake_reply, d) != 0)
            log_debug("could not send a wake-up; waiters poll");
    }
    free_keys(keys, lens, n_pools + 1);
}

bool hf_wait_release_keys(const char *const *hold_keys, const size_t *lens, size_t n,
                          char ***keys, size_t **klens) {
    *keys = calloc(n + 1, sizeof **keys);
    *klens = calloc(n + 1, sizeof **klens);
    if (*keys && *klens && ((*keys)[0] = waiters_key(hold_keys[0], lens[0], &(*klens)[0])) &&
        add_lines(*keys, *klens, 1, hold_keys, lens, n))
        return true;
    free_keys(*keys, *klens, n + 1);
    *keys = NULL;
    *klens = NULL;
    return false;
}

void hf_wait_keys_free(char **keys, size_t *lens, size_t n) { free_keys(keys, lens, n); }

void hf_wait_wake(struct hf_daemon *d, const struct hf_target *t, bool confirmed) {
    const struct hf_keyset *ks = t->keys;
    hf_wait_wake_keys(d, ks->keys + 1, ks->lens + 1, ks->count - 1, confirmed);
}

/* ---- the subscription ---- */

static void sub_connect(struct hf_wait_hub *h);

static void set_subscribed(struct hf_wait_hub *h, bool on) {
    if (h->subscribed == on) return;
    h->subscribed = on;
    hf_metrics_gauge_set(HF_G_WAIT_SUBSCRIBED, on);
    if (on) {
        log_info("waiting in line: wake-ups subscribed on %s", h->host ? h->host : h->path);
        h->down_logged = false;
        h->failures = 0;
    }
}

static void on_retry(uv_timer_t *t) { sub_connect(t->data); }

static void schedule_reconnect(struct hf_wait_hub *h, const char *why) {
    set_subscribed(h, false);
    if (h->closing) return;
    if (!h->down_logged) {
        log_warn("waiting in line: wake-up subscription down (%s); waiters poll every %u ms",
                 why, HF_WAIT_POLL_MS);
        h->down_logged = true;
    }
    uint64_t ms = (uint64_t)RECONNECT_MS << (h->failures < 5 ? h->failures : 5);
    h->failures++;
    uv_timer_start(&h->retry, on_retry, ms < RECONNECT_MAX_MS ? ms : RECONNECT_MAX_MS, 0);
}

static void on_message(redisAsyncContext *ac, void *reply, void *privdata) {
    struct hf_wait_hub *h = privdata;
    redisReply *r = reply;
    if (!r || h->closing) return;
    if (r->type == REDIS_REPLY_ERROR) {
        log_debug("waiting in line: SUBSCRIBE refused: %s", r->str);
        redisAsyncDisconnect(ac);
        return;
    }
    if (r->type != REDIS_REPLY_ARRAY && r->type != REDIS_REPLY_PUSH) return;
    if (r->elements < 3 || r->element[0]->type != REDIS_REPLY_STRING) return;
    const redisReply *kind = r->element[0];
    if (kind->len == 9 && memcmp(kind->str, "subscribe", 9) == 0) {
        set_subscribed(h, true);
    } else if (kind->len == 7 && memcmp(kind->str, "message", 7) == 0) {
        const redisReply *m = r->element[2];
        if (m->type != REDIS_REPLY_STRING) return;
        struct hf_wait *w = find_ticket(h, m->str, m->len);
        if (w) wake(w);
    }
}

static void on_auth(redisAsyncContext *ac, void *reply, void *privdata) {
    (void)privdata;
    redisReply *r = reply;
    if (r && r->type == REDIS_REPLY_ERROR) {
        log_debug("waiting in line: AUTH refused: %s", r->str);
        redisAsyncDisconnect(ac);
    }
}

static void on_sub_connect(redisAsyncContext *ac, int status) {
    struct hf_wait_hub *h = ac->data;
    if (status != REDIS_OK) {
        h->ac = NULL; /* hiredis frees it */
        schedule_reconnect(h, ac->errstr);
    }
}

static void on_sub_disconnect(const redisAsyncContext *ac, int status) {
    struct hf_wait_hub *h = ac->data;
    h->ac = NULL;
    schedule_reconnect(h, status == REDIS_OK ? "closed" : ac->errstr);
}

static void sub_connect(struct hf_wait_hub *h) {
    if (h->closing || h->ac) return;
    redisOptions o = {0};
    if (h->host) REDIS_OPTIONS_SET_TCP(&o, h->host, h->port);
    else REDIS_OPTIONS_SET_UNIX(&o, h->path);
    struct timeval tv = {.tv_sec = h->connect_timeout_ms / 1000,
                         .tv_usec = (h->connect_timeout_ms % 1000) * 1000};
    o.connect_timeout = &tv;
    redisAsyncContext *ac = redisAsyncConnectWithOptions(&o);
    if (!ac || ac->err) {
        if (ac) redisAsyncFree(ac);
        schedule_reconnect(h, "could not connect");
        return;
    }
    ac->data = h;
    if (hf_redis_events_attach(ac, h->d->loop) != REDIS_OK) {
        redisAsyncFree(ac);
        schedule_reconnect(h, "could not attach");
        return;
    }
    h->ac = ac;
    redisAsyncSetDisconnectCallback(ac, on_sub_disconnect);
    redisAsyncSetConnectCallbackNC(ac, on_sub_connect);
    int rc = REDIS_OK;
    if (h->password && h->username)
        rc = redisAsyncCommand(ac, on_auth, h, "AUTH %s %s", h->username, h->password);
    else if (h->password)
        rc = redisAsyncCommand(ac, on_auth, h, "AUTH %s", h->password);
    if (rc == REDIS_OK) rc = redisAsyncCommand(ac, on_message, h, "SUBSCRIBE " WAIT_CHANNEL);
    if (rc != REDIS_OK) redisAsyncDisconnect(ac);
}

/* "host:port" or "unix:/path" (config.c checked it). */
static bool parse_address(struct hf_wait_hub *h, const char *a) {
    if (strncmp(a, "unix:", 5) == 0) return (h->path = strdup(a + 5)) != NULL;
    const char *colon = strrchr(a, ':');
    if (!colon) return false;
    size_t hl = (size_t)(colon - a);
    if (hl >= 2 && a[0] == '[' && a[hl - 1] == ']') {
        a++;
        hl -= 2;
    }
    h->port = atoi(colon + 1);
    return (h->host = strndup(a, hl)) != NULL;
}

static void free_hub(struct hf_wait_hub *h) {
    free(h->host);
    free(h->path);
    free(h->username);
    free(h->password);
    free(h);
}

struct hf_wait_hub *hf_wait_hub_create(struct hf_daemon *d, const struct hf_config *cfg) {
    struct hf_wait_hub *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->d = d;
    h->connect_timeout_ms = cfg->redis_connect_timeout_ms;
    h->enabled = !cfg->redis_tls;
    if (h->enabled && (!parse_address(h, cfg->redis_address) ||
                       (cfg->redis_username && !(h->username = strdup(cfg->redis_username))) ||
                       (cfg->redis_password && !(h->password = strdup(cfg->redis_password))))) {
        free_hub(h);
        return NULL;
    }
    uv_timer_init(d->loop, &h->retry);
    h->retry.data = h;
    if (h->enabled) sub_connect(h);
    else log_info("waiting in line: no wake-up subscription over TLS; waiters poll every %u ms",
                  HF_WAIT_POLL_MS);
    return h;
}

void hf_wait_hub_drain(struct hf_wait_hub *h) {
    if (!h) return;
    struct hf_wait *next;
    for (struct hf_wait *w = h->waiters; w; w = next) {
        next = w->next;
        w->gone = true;
        if (!w->in_flight) end_wait(w);
    }
}

static void on_hub_closed(uv_handle_t *handle) { free_hub(handle->data); }

void hf_wait_hub_close(struct hf_wait_hub *h) {
    if (!h) return;
    hf_wait_hub_drain(h);
    h->closing = true;
    set_subscribed(h, false);
    if (h->ac) {
        redisAsyncContext *ac = h->ac;
        h->ac = NULL;
        redisAsyncFree(ac);
    }
    /* Waiters with a try in flight end when the front end closes them. */
    while (h->waiters) {
        struct hf_wait *w = h->waiters;
        list_remove(w);
        w->hub = NULL;
    }
    uv_close((uv_handle_t *)&h->retry, on_hub_closed);
}
