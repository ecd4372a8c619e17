/* backoff.h - the reconnect delay shared by the Redis and PostgreSQL pools:
 * doubling from `min_ms` per consecutive failure, capped at `max_ms`. */
#ifndef HF_BACKOFF_H
#define HF_BACKOFF_H

#include <stdint.h>

/* The delay before the next attempt; counts this failure. */
static inline uint64_t hf_backoff_next_ms(unsigned *failures, uint64_t min_ms, uint64_t max_ms) {
    unsigned shift = *failures < 16 ? *failures : 16;
    uint64_t delay = min_ms << shift;
    (*failures)++;
    return delay < max_ms ? delay : max_ms;
}

#endif
