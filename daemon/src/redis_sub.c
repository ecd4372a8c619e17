/* redis_sub.c - a subscription on a connection of the Redis layer. A refused
 * SUBSCRIBE (an ACL without the channel) is an error reply with no callback
 * waiting for it, so hiredis drops the connection: the pool then reconnects
 * with its backoff, here up to HF_SUB_RETRY_MS. */
#include "redis_sub.h"

#include <stdlib.h>
#include <string.h>

struct hf_redis_sub {
    struct hf_redis_pool *pool;
    struct hf_redis_conn *conn; /* the connection last set up */
    char *channel;
    hf_sub_message_fn *on_message;
    hf_sub_state_fn *on_state;
    void *ud;
    bool acknowledged;          /* the last SUBSCRIBE was answered */
    bool subscribed;
    bool down_said;             /* on_state(false) since it was last up */
    bool closing;
};

/* Up: each time it comes up. Down: once until it is up again, also when it
 * never was, with why. */
static void set_subscribed(struct hf_redis_sub *sub, bool on, const char *why) {
    if (sub->subscribed == on && (on || sub->down_said)) return;
    sub->subscribed = on;
    sub->down_said = !on;
    if (!sub->closing && sub->on_state) sub->on_state(sub->ud, on, why);
}

static bool is(const redisReply *r, const char *word) {
    size_t n = strlen(word);
    return r->type == REDIS_REPLY_STRING && r->len == n && memcmp(r->str, word, n) == 0;
}

static void on_push(void *ud, const redisReply *r) {
    struct hf_redis_sub *sub = ud;
    if (sub->closing) return;
    if (!r) {
        set_subscribed(sub, false, sub->acknowledged
                                       ? "connection lost"
                                       : "lost before SUBSCRIBE was answered: refused by an "
                                         "ACL, or the connection failed");
        return;
    }
    if ((r->type != REDIS_REPLY_ARRAY && r->type != REDIS_REPLY_PUSH) || r->elements < 3) return;
    if (is(r->element[0], "subscribe")) {
        /* Ready only now: with TLS the handshake is over too. */
        sub->acknowledged = true;
        hf_redis_conn_set_ready(sub->conn, true);
        set_subscribed(sub, true, NULL);
    } else if (is(r->element[0], "message") && r->element[2]->type == REDIS_REPLY_STRING) {
        sub->on_message(sub->ud, r->element[2]->str, r->element[2]->len);
    }
}

/* A (re)connected connection subscribes; that is its whole set-up, ended
 * by the subscription's answer. */
static void on_setup(void *ud, struct hf_redis_conn *conn, bool first_ever) {
    (void)first_ever;
    struct hf_redis_sub *sub = ud;
    sub->conn = conn;
    sub->acknowledged = false;
    if (hf_redis_conn_subscribe(conn, sub->channel, on_push, sub) != 0)
        hf_redis_conn_set_ready(conn, false);
}

struct hf_redis_sub *hf_redis_sub_create(uv_loop_t *loop, const struct hf_redis_pool_options *opts,
                                         const char *channel, hf_sub_message_fn *on_message,
                                         hf_sub_state_fn *on_state, void *ud) {
    struct hf_redis_sub *sub = calloc(1, sizeof *sub);
    if (!sub || !(sub->channel = strdup(channel))) {
        free(sub);
        return NULL;
    }
    sub->on_message = on_message;
    sub->on_state = on_state;
    sub->ud = ud;
    struct hf_redis_pool_options o = *opts;
    o.pool_size = 1;
    o.no_metrics = true;
    o.quiet = true;
    o.backoff_max_ms = HF_SUB_RETRY_MS;
    sub->pool = hf_redis_pool_create(loop, &o, on_setup, NULL, sub);
    if (!sub->pool) {
        free(sub->channel);
        free(sub);
        return NULL;
    }
    return sub;
}

bool hf_redis_sub_subscribed(const struct hf_redis_sub *sub) { return sub && sub->subscribed; }

void hf_redis_sub_close(struct hf_redis_sub *sub) {
    if (!sub) return;
    sub->closing = true;
    /* Its last push (NULL) comes from inside this call and finds closing;
     * the pool needs nothing of the sub after it. */
    hf_redis_pool_close(sub->pool);
    free(sub->channel);
    free(sub);
}
