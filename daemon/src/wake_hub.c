/* wake_hub.c - the wake channel and the listeners of its tickets. */
#include "wake_hub.h"

#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "log.h"
#include "metrics.h"

#define WAKE_CHANNEL "holdfast:wake" /* as in scripts/holdfast.lua */

/* uthash allocates; out of memory it would exit. Here it leaves the table
 * as it was and says so. */
#undef uthash_nonfatal_oom
#define uthash_nonfatal_oom(obj) (oom = true)
static bool oom;

struct hf_wake_hub {
    struct hf_redis_front *front;
    struct hf_redis_sub *sub;
    uint32_t timeout_ms;
    struct hf_wake_listener *listeners; /* by ticket */
    unsigned calls;                     /* wake-ups in flight: their replies find the hub */
    bool closed;
};

static struct hf_wake_listener *find(struct hf_wake_hub *h, const char *ticket, size_t len) {
    if (len != HF_TOKEN_RANDOM_CHARS) return NULL;
    struct hf_wake_listener *l = NULL;
    HASH_FIND(hh, h->listeners, ticket, len, l);
    return l;
}

static void wake_ticket(struct hf_wake_hub *h, const char *ticket, size_t len) {
    struct hf_wake_listener *l = find(h, ticket, len);
    if (l) l->woken(l);
}

static void on_message(void *ud, const char *payload, size_t len) {
    wake_ticket(ud, payload, len);
}

static void on_state(void *ud, bool subscribed, const char *why) {
    (void)ud;
    hf_metrics_gauge_set(HF_G_WAIT_SUBSCRIBED, subscribed);
    if (subscribed) log_info("waiting in line: wake-ups subscribed");
    else log_warn("waiting in line: wake-up subscription down (%s); waiters poll every %u ms",
                  why, HF_WAIT_POLL_MS);
}

struct hf_wake_hub *hf_wake_hub_create(uv_loop_t *loop, struct hf_redis_front *front,
                                       const struct hf_config *cfg) {
    (void)loop;
    struct hf_wake_hub *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->front = front;
    h->timeout_ms = cfg->redis_command_timeout_ms;
    h->sub = hf_front_subscribe(front, cfg, WAKE_CHANNEL, on_message, on_state, h);
    if (!h->sub) {
        free(h);
        return NULL;
    }
    return h;
}

bool hf_wake_hub_subscribed(const struct hf_wake_hub *h) {
    return h && hf_redis_sub_subscribed(h->sub);
}

bool hf_wake_listen(struct hf_wake_hub *h, struct hf_wake_listener *l) {
    if (!h || l->listening) return false;
    oom = false;
    HASH_ADD(hh, h->listeners, ticket, HF_TOKEN_RANDOM_CHARS, l);
    if (oom) return false;
    l->listening = true;
    hf_metrics_gauge_add(HF_G_WAITERS, 1);
    return true;
}

void hf_wake_unlisten(struct hf_wake_hub *h, struct hf_wake_listener *l) {
    if (!h || !l->listening) return;
    HASH_DELETE(hh, h->listeners, l);
    l->listening = false;
    hf_metrics_gauge_add(HF_G_WAITERS, -1);
}

void hf_wake_hub_drain(struct hf_wake_hub *h) {
    if (!h) return;
    struct hf_wake_listener *l, *next;
    HASH_ITER(hh, h->listeners, l, next) l->drained(l);
}

void hf_wake_hub_close(struct hf_wake_hub *h) {
    if (!h) return;
    hf_wake_hub_drain(h);
    struct hf_wake_listener *l, *next;
    HASH_ITER(hh, h->listeners, l, next) { /* tries still in flight end later */
        hf_wake_unlisten(h, l);
        l->orphaned = true;
    }
    hf_redis_sub_close(h->sub);
    h->sub = NULL;
    h->closed = true;
    if (h->calls == 0) free(h);
}

/* With the subscription up the same tickets come as messages; without it
 * the reply is how this daemon's waiters learn of them. */
static void on_wake_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct hf_wake_hub *h = privdata;
    h->calls--;
    if (h->closed) {
        if (h->calls == 0) free(h);
        return;
    }
    if (status != HF_REDIS_OK || r->type != REDIS_REPLY_ARRAY || hf_wake_hub_subscribed(h))
        return;
    for (size_t i = 0; i < r->elements; i++)
        if (r->element[i]->type == REDIS_REPLY_STRING)
            wake_ticket(h, r->element[i]->str, r->element[i]->len);
}

void hf_wake_lines(struct hf_wake_hub *h, struct hf_strs lines, bool sold) {
    if (!h || h->closed || lines.n < 2) return;
    struct hf_argv args;
    hf_argv_init(&args);
    hf_argv_add(&args, sold ? "1" : "0", 1);
    if (hf_front_call(h->front, NULL, HF_FN_WAIT_WAKE, lines, &args, h->timeout_ms, on_wake_reply,
                      h) == 0)
        h->calls++;
    else
        log_debug("could not send a wake-up; waiters poll");
}

void hf_wake_freed_keys(struct hf_wake_hub *h, const char *const *hold_keys, const size_t *lens,
                        size_t n) {
    struct hf_keyset *lines = h ? hf_keyset_lines_of(hold_keys, lens, n) : NULL;
    if (lines) hf_wake_lines(h, hf_keys_lines(lines), false);
    hf_keyset_free(lines);
}
