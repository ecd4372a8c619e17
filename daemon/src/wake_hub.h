/* wake_hub.h - wake-ups of the lines (docs/waiting.md), in the Redis layer:
 * the daemon's one subscription to the wake channel, whose messages name the
 * ticket to try now, handed to the listener of that ticket (found in O(1));
 * and the one way every path that frees or sells resources wakes their
 * lines (hf_wake_lines). Waiters (wait.c) listen; Release, Confirm, a
 * withdrawn grant and a closing session wake. */
#ifndef HF_WAKE_HUB_H
#define HF_WAKE_HUB_H

#include <stdbool.h>
#include <stddef.h>
#include <uthash.h>
#include <uv.h>

#include "argv.h"
#include "config.h"
#include "redis_front.h"
#include "token.h"

struct hf_wake_hub;

/* How often a listener polls while the subscription is down / up (expiry
 * publishes nothing, so even with it a line's head looks again). */
#define HF_WAIT_POLL_MS 250
#define HF_WAIT_POLL_SUBSCRIBED_MS 1000

/* Someone waiting for wake-ups of one ticket; lives in its owner. */
struct hf_wake_listener {
    char ticket[HF_TOKEN_RANDOM_CHARS + 1];
    void (*woken)(struct hf_wake_listener *l);  /* a wake-up named the ticket */
    void (*drained)(struct hf_wake_listener *l); /* the daemon drains: end now */
    UT_hash_handle hh;
    bool listening;
    bool orphaned; /* the hub closed: the owner must not reach it (or Redis) again */
};

/* The hub and its subscription over front's connections. NULL on OOM. */
struct hf_wake_hub *hf_wake_hub_create(uv_loop_t *loop, struct hf_redis_front *front,
                                       const struct hf_config *cfg);
/* Every listener's drained(), once. */
void hf_wake_hub_drain(struct hf_wake_hub *h);
/* Listeners must have left; frees itself once its handles closed. NULL: a no-op. */
void hf_wake_hub_close(struct hf_wake_hub *h);
/* The subscription is up: wake-ups arrive as messages (else listeners poll). */
bool hf_wake_hub_subscribed(const struct hf_wake_hub *h);

/* false on OOM (not listening). The ticket must be unique (random). */
bool hf_wake_listen(struct hf_wake_hub *h, struct hf_wake_listener *l);
void hf_wake_unlisten(struct hf_wake_hub *h, struct hf_wake_listener *l);

/* Resources were freed (sold = false: the head of each line tries) or sold
 * (sold: every waiter tries, and answers CONFIRMED). lines: the partition's
 * waiters key, then the lines (hf_keys_lines). Fire and forget. */
void hf_wake_lines(struct hf_wake_hub *h, struct hf_strs lines, bool sold);
/* The same for seat hold keys of one partition (hf_keyset_lines_of). */
void hf_wake_freed_keys(struct hf_wake_hub *h, const char *const *hold_keys, const size_t *lens,
                        size_t n);

#endif
