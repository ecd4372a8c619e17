/* wait.c - one Hold waiting in line: its tries, its fallback timer, leaving
 * its lines when it ends. */
#include "wait.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "metrics.h"
#include "numfmt.h"
#include "ops_common.h"
#include "wake_hub.h"

struct hf_wait {
    struct hf_wake_listener listener; /* the ticket, found by the hub */
    struct hf_wake_hub *hub;
    struct hf_request *req;
    const struct hf_target *t;
    struct hf_argv args;       /* the hold's, then ticket, lease */
    size_t lease_at;           /* index of the lease in args */
    char lease_s[24];
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
    long long index;           /* the item that kept the last try waiting */
    long long extra;           /* pools: units free then (-1: unknown) */
};

static void try_hold(struct hf_wait *w);

static void stop_listening(struct hf_wait *w) {
    if (!w->listener.listening || w->listener.orphaned) return;
    hf_wake_unlisten(w->hub, &w->listener);
}

static void on_leave_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    (void)privdata, (void)status, (void)r; /* best effort: the lease ends it anyway */
}

/* Out of every line at once (the ticket's lease would end it otherwise). */
static void leave_lines(struct hf_wait *w) {
    struct hf_request *req = w->req;
    if (w->listener.orphaned) return; /* shutting down: the lease ends the ticket */
    struct hf_argv args;
    hf_argv_init(&args);
    hf_argv_add(&args, w->listener.ticket, HF_TOKEN_RANDOM_CHARS);
    if (hf_front_call(req->d->redis, NULL, HF_FN_WAIT_LEAVE, hf_keys_lines(w->t->keys), &args,
                      req->cfg->redis_command_timeout_ms, on_leave_reply, NULL) != 0)
        log_debug("hold cid=%s: could not leave the line; the ticket's lease ends it",
                  req->correlation_id);
}

/* The wait ends without a grant: leave, answer (unless answered), done. */
static void end_wait(struct hf_wait *w) {
    struct hf_request *req = w->req;
    w->ended = true;
    stop_listening(w);
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
        hf_target_answer_code(req, w->t, HF_SC_HELD_BY_ANOTHER, w->index, w->extra);
    }
    hf_request_op_done(req);
}

/* Hand the reply to the op: it answers and ends the op. */
static void hand_over(struct hf_wait *w, enum hf_redis_status status, redisReply *r) {
    w->ended = true;
    stop_listening(w);
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
    bool subscribed = !w->listener.orphaned && hf_wake_hub_subscribed(w->hub);
    return subscribed ? HF_WAIT_POLL_SUBSCRIBED_MS : HF_WAIT_POLL_MS;
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
        /* {HELD_BY_ANOTHER, index, pttl, first[, units free]} */
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
    w->args.lens[w->lease_at] = hf_u64_dec(w->lease_s, lease);
    w->again = false;
    w->in_flight = true;
    if (hf_target_call(req, w->t, HF_STEP_HOLD_WAIT, w->conn, &w->args, on_try_reply, w) != 0) {
        w->in_flight = false;
        w->failing = true;
        if (wait_over(w)) end_wait(w);
        else schedule(w, poll_ms(w));
    }
}

/* A release or sale named this waiter's ticket. */
static void on_woken(struct hf_wake_listener *l) {
    struct hf_wait *w = (struct hf_wait *)l;
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

/* The client left, or the daemon drains: end now (a try in flight ends it
 * when it answers; a grant then is withdrawn). */
static void stop_waiting(struct hf_wait *w) {
    if (w->ended) return;
    w->gone = true;
    if (!w->in_flight) end_wait(w);
}

static void on_drained(struct hf_wake_listener *l) { stop_waiting((struct hf_wait *)l); }

static void on_client_gone(void *arg) { stop_waiting(arg); }

int hf_wait_start(struct hf_request *req, const struct hf_target *t,
                  const struct hf_argv *hold_args, uint32_t wait_ms, struct hf_redis_conn **conn,
                  hf_redis_cb *cb, void *privdata, struct hf_wait **out) {
    struct hf_wake_hub *hub = req->d->wakes;
    if (!hub) return -1;
    struct hf_wait *w = calloc(1, sizeof *w);
    if (!w) return -1;
    hf_argv_init(&w->args);
    if (hf_token_random(w->listener.ticket) != 0) {
        free(w);
        return -1;
    }
    hf_argv_add_strs(&w->args, hf_argv_strs(hold_args));
    hf_argv_add(&w->args, w->listener.ticket, HF_TOKEN_RANDOM_CHARS);
    w->lease_at = w->args.n;
    hf_argv_add(&w->args, w->lease_s, 0);
    w->listener.woken = on_woken;
    w->listener.drained = on_drained;
    if (w->args.failed || !hf_wake_listen(hub, &w->listener)) {
        hf_argv_free(&w->args);
        free(w);
        return -1;
    }
    w->hub = hub;
    w->req = req;
    w->t = t;
    w->conn = conn;
    w->cb = cb;
    w->privdata = privdata;
    w->extra = -1;
    uint32_t left = hf_request_remaining_ms(req);
    w->wait_end = uv_now(req->d->loop) + (wait_ms < left ? wait_ms : left);
    *out = w;
    hf_request_on_client_gone(req, on_client_gone, w);
    try_hold(w);
    return 0;
}

void hf_wait_free(struct hf_wait *w) {
    if (!w) return;
    stop_listening(w);
    hf_argv_free(&w->args);
    free(w);
}
