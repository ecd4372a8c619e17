/* session.c - session-bound holds of one connection: batched renewal, the
 * lost-hold events, the release when the connection closes. */
#include "session.h"

#include <stdlib.h>
#include <string.h>
#include <utlist.h>
#include <uv.h>

#include "cluster_slots.h"
#include "frame.h"
#include "log.h"
#include "metrics.h"
#include "numfmt.h"
#include "redis_front.h"
#include "wake_hub.h"

/* At most this many keys in one Redis call (a hold's keys never split):
 * the script runs O(keys) on Redis' one thread. */
#define BATCH_KEYS 4096
/* At most this many lost holds in one event frame. */
#define EVENT_HOLDS 256

struct entry {
    struct entry *prev, *next;
    int refs;            /* the session's list + each call that carries it */
    bool detached;       /* out of the session: calls that carry it ignore it */
    bool in_flight;      /* a renewal call carries it */
    unsigned paused;     /* Release/Confirm of its token in flight */
    unsigned confirming; /* ... of which Confirms */
    unsigned slot;       /* cluster slot, 0 without a cluster */
    uint32_t ttl_ms;
    uint64_t fence;
    uint64_t expires_at; /* loop ms: the TTL last set runs out no later than this */
    char *ns, *partition, *token;
    size_t prefix_len;   /* "hf:{<ns>:<partition>}:" in front of each id */
    size_t n;
    char **keys;
    size_t *lens;
};

struct hf_session {
    struct hf_daemon *d;
    hf_session_send_fn *send;
    void *send_ctx;
    struct entry *head;
    size_t count;
    uv_timer_t timer;
    uint64_t interval; /* the timer's period while it runs, 0: stopped */
    int refs;          /* the owner + the timer handle + each call in flight */
    bool closed;
};

/* One Redis call for many holds. */
struct batch {
    struct hf_session *s;
    bool release;
    uint64_t sent_at;
    size_t n;
    struct entry *e[];
};

/* A hold the session could not keep, for the event. */
struct lost {
    struct entry *e;
    hf_code reason;
    size_t index; /* 1-based key index the reason is about; 0: the first */
    const char *why;
};

struct lost_list {
    struct lost *items;
    size_t n, cap;
};

uint32_t hf_session_ttl(const struct hf_namespace *ns) {
    uint32_t ttl = ns->session_ttl_ms;
    if (ttl > ns->max_ttl_ms) ttl = ns->max_ttl_ms;
    if (ttl < ns->min_ttl_ms) ttl = ns->min_ttl_ms;
    return ttl;
}

/* ---- lifetimes ---- */

static void session_unref(struct hf_session *s) {
    if (--s->refs == 0) free(s);
}

static void entry_unref(struct entry *e) {
    if (--e->refs == 0) free(e);
}

static void on_timer_closed(uv_handle_t *h) { session_unref(h->data); }

/* Out of the session's list; calls still carrying it keep it alive. */
static void detach(struct hf_session *s, struct entry *e) {
    if (e->detached) return;
    DL_DELETE(s->head, e);
    e->detached = true;
    s->count--;
    hf_metrics_gauge_add(HF_G_SESSION_HOLDS, -1);
    entry_unref(e);
}

static struct entry *find(const struct hf_session *s, const char *token) {
    if (!s || !token) return NULL;
    for (struct entry *e = s->head; e; e = e->next)
        if (strcmp(e->token, token) == 0) return e;
    return NULL;
}

size_t hf_session_holds(const struct hf_session *s) { return s ? s->count : 0; }

struct hf_session *hf_session_create(struct hf_daemon *d, hf_session_send_fn *send,
                                     void *send_ctx) {
    struct hf_session *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->d = d;
    s->send = send;
    s->send_ctx = send_ctx;
    uv_timer_init(d->loop, &s->timer);
    s->timer.data = s;
    s->refs = 2; /* the owner, the timer handle */
    return s;
}

/* ---- events ---- */

static void lost_add(struct hf_session *s, struct lost_list *l, struct entry *e, hf_code reason,
                     size_t index, const char *why) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        struct lost *grown = realloc(l->items, cap * sizeof *grown);
        if (!grown) {
            /* Out of memory: the hold leaves the session unreported; its
             * loss still shows on the next call that touches it. */
            log_error("session: out of memory reporting a lost hold (ns=%s partition=%s "
                      "fence=%llu)", e->ns, e->partition, (unsigned long long)e->fence);
            hf_metrics_inc(HF_C_SESSION_HOLDS_LOST);
            detach(s, e);
            return;
        }
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->n++] = (struct lost){e, reason, index, why};
}

static const char *id_of(const struct entry *e, size_t index) {
    size_t i = index >= 1 && index <= e->n ? index - 1 : 0;
    return e->n ? e->keys[i] + e->prefix_len : "";
}

/* One frame for items[0..n-1]; false on OOM. */
static bool send_event(struct hf_session *s, const struct lost *items, size_t n) {
    Holdfast__V1__SessionHoldLost *holds = calloc(n, sizeof *holds);
    Holdfast__V1__SessionHoldLost **ptrs = calloc(n, sizeof *ptrs);
    char ***ids = calloc(n, sizeof *ids);
    bool ok = holds && ptrs && ids;
    for (size_t i = 0; ok && i < n; i++) {
        const struct entry *e = items[i].e;
        ids[i] = malloc((e->n ? e->n : 1) * sizeof *ids[i]);
        if (!ids[i]) {
            ok = false;
            break;
        }
        for (size_t k = 0; k < e->n; k++) ids[i][k] = e->keys[k] + e->prefix_len;
        holdfast__v1__session_hold_lost__init(&holds[i]);
        holds[i].namespace_ = e->ns;
        holds[i].partition = e->partition;
        holds[i].n_ids = e->n;
        holds[i].ids = ids[i];
        holds[i].fence = e->fence;
        holds[i].reason = items[i].reason;
        holds[i].resource_id = (char *)id_of(e, items[i].index);
        holds[i].message = (char *)items[i].why;
        ptrs[i] = &holds[i];
    }
    if (ok) {
        hf_response_msg resp = HOLDFAST__V1__RESPONSE__INIT;
        Holdfast__V1__SessionEvent ev = HOLDFAST__V1__SESSION_EVENT__INIT;
        ev.n_lost = n;
        ev.lost = ptrs;
        resp.id = 0;
        resp.code = HF_CODE(OK);
        resp.message = n == 1 ? "a session hold was lost" : "session holds were lost";
        resp.result_case = HOLDFAST__V1__RESPONSE__RESULT_SESSION_EVENT;
        resp.session_event = &ev;
        size_t len;
        uint8_t *frame = hf_frame_pack_response(&resp, &len);
        if (frame) s->send(s->send_ctx, frame, len);
        else ok = false;
    }
    for (size_t i = 0; ids && i < n; i++) free(ids[i]);
    free(ids);
    free(ptrs);
    free(holds);
    return ok;
}

/* Tell the connection, then take the holds out of the session. */
static void report(struct hf_session *s, struct lost_list *l) {
    if (l->n == 0) {
        free(l->items);
        return;
    }
    const struct lost *first = &l->items[0];
    log_warn("session: %zu hold%s lost on a connection (first: ns=%s partition=%s ids=%s%s "
             "fence=%llu reason=%s: %s)", l->n, l->n == 1 ? "" : "s", first->e->ns,
             first->e->partition, id_of(first->e, 1), first->e->n > 1 ? ",..." : "",
             (unsigned long long)first->e->fence, hf_code_name(first->reason), first->why);
    for (size_t i = 0; i < l->n; i += EVENT_HOLDS) {
        size_t n = l->n - i < EVENT_HOLDS ? l->n - i : EVENT_HOLDS;
        if (!s->closed && !send_event(s, l->items + i, n))
            log_error("session: out of memory sending a lost-hold event; the client learns "
                      "of the loss on its next call");
    }
    for (size_t i = 0; i < l->n; i++) {
        hf_metrics_inc(HF_C_SESSION_HOLDS_LOST);
        detach(s, l->items[i].e);
    }
    free(l->items);
}

static hf_code reason_of(long long script_code) {
    switch (script_code) {
    case HF_SC_HELD_BY_ANOTHER: return HF_CODE(HELD_BY_ANOTHER);
    case HF_SC_CONFIRMED: return HF_CODE(CONFIRMED);
    default: return HF_CODE(NOT_HELD);
    }
}

static const char *why_of(long long script_code) {
    switch (script_code) {
    case HF_SC_HELD_BY_ANOTHER: return "held by another token: this hold was lost";
    case HF_SC_CONFIRMED: return "confirmed (sold); the session no longer renews it";
    default: return "no longer held by this token (expired or deleted)";
    }
}

static const char WHY_UNRENEWED[] =
    "could not be renewed before its TTL ran out (Redis unreachable, paused or slow)";

/* ---- calls ---- */

static void on_batch_reply(void *privdata, enum hf_redis_status status, redisReply *r);

/* One call for e[0..n-1] (one slot, at most BATCH_KEYS keys). false when
 * nothing was sent. */
static bool send_batch(struct hf_session *s, bool release, struct entry **e, size_t n) {
    size_t nkeys = 0;
    for (size_t i = 0; i < n; i++) nkeys += e[i]->n;
    struct batch *b = malloc(sizeof *b + n * sizeof b->e[0]);
    const char **keys = malloc((nkeys ? nkeys : 1) * sizeof *keys);
    size_t *lens = malloc((nkeys ? nkeys : 1) * sizeof *lens);
    /* Per hold: its token, its number of keys[, the TTL to set]; the
     * numbers' digits live here, the builder borrows them. */
    char (*digits)[2][21] = malloc(n * sizeof *digits);
    struct hf_argv args;
    hf_argv_init(&args);
    bool sent = false;
    if (!b || !keys || !lens || !digits || nkeys == 0) goto out;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < e[i]->n; j++, k++) {
            keys[k] = e[i]->keys[j];
            lens[k] = e[i]->lens[j];
        }
        hf_argv_add_str(&args, e[i]->token);
        hf_argv_add(&args, digits[i][0], hf_u64_dec(digits[i][0], e[i]->n));
        if (!release) hf_argv_add(&args, digits[i][1], hf_u64_dec(digits[i][1], e[i]->ttl_ms));
    }
    b->s = s;
    b->release = release;
    b->sent_at = uv_now(s->d->loop);
    b->n = n;
    memcpy(b->e, e, n * sizeof *e);
    struct hf_strs key_run = {keys, lens, nkeys};
    if (hf_front_call(s->d->redis, NULL, release ? HF_FN_SESSION_RELEASE : HF_FN_SESSION_RENEW,
                      key_run, &args, s->d->cfg->redis_command_timeout_ms, on_batch_reply,
                      b) != 0)
        goto out;
    sent = true;
    s->refs++;
    if (release) s->d->session_releases++;
    for (size_t i = 0; i < n; i++) {
        e[i]->refs++;
        if (!release) e[i]->in_flight = true;
    }
    if (!release) hf_metrics_inc(HF_C_SESSION_RENEWAL_CALLS);
out:
    if (!sent) free(b);
    hf_argv_free(&args);
    free(keys);
    free(lens);
    free(digits);
    return sent;
}

static int by_slot(const void *a, const void *b) {
    unsigned x = (*(struct entry *const *)a)->slot, y = (*(struct entry *const *)b)->slot;
    return x < y ? -1 : x > y;
}

/* Calls for e[0..n-1], one per slot and per BATCH_KEYS keys. The entries
 * of calls that could not be sent are moved to the front of e; returns
 * how many. */
static size_t send_batches(struct hf_session *s, bool release, struct entry **e, size_t n) {
    if (s->d->cfg->redis_cluster) qsort(e, n, sizeof *e, by_slot);
    size_t unsent = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i, keys = 0;
        while (j < n && e[j]->slot == e[i]->slot && (j == i || keys + e[j]->n <= BATCH_KEYS))
            keys += e[j++]->n;
        if (!send_batch(s, release, e + i, j - i)) {
            /* e[unsent..i-1] are unsent already; move this run after them. */
            for (size_t k = i; k < j; k++) e[unsent++] = e[k];
        }
        i = j;
    }
    return unsent;
}

static void renewal_reply(struct batch *b, enum hf_redis_status status, redisReply *r) {
    struct hf_session *s = b->s;
    uint64_t now = uv_now(s->d->loop);
    bool ok = status == HF_REDIS_OK && r->type == REDIS_REPLY_ARRAY && r->elements == 2 * b->n;
    for (size_t i = 0; ok && i < 2 * b->n; i++)
        ok = r->element[i]->type == REDIS_REPLY_INTEGER;
    struct lost_list lost = {0};
    uint64_t renewed = 0;
    for (size_t i = 0; i < b->n; i++) {
        struct entry *e = b->e[i];
        e->in_flight = false;
        if (e->detached || s->closed) continue;
        if (ok) {
            long long code = r->element[2 * i]->integer;
            if (code == HF_SC_GRANTED) {
                e->expires_at = b->sent_at + e->ttl_ms;
                renewed++;
            } else if (!e->paused) {
                /* Paused: the Release or Confirm in flight answers for it;
                 * a failed one resumes it and the next renewal tells. */
                lost_add(s, &lost, e, reason_of(code), (size_t)r->element[2 * i + 1]->integer,
                         why_of(code));
            }
        } else if (!e->paused && now >= e->expires_at) {
            lost_add(s, &lost, e, HF_CODE(NOT_HELD), 0, WHY_UNRENEWED);
        }
    }
    for (uint64_t i = 0; i < renewed; i++) hf_metrics_inc(HF_C_SESSION_RENEWALS);
    report(s, &lost);
}

static void release_reply(struct batch *b, enum hf_redis_status status, redisReply *r) {
    if (status == HF_REDIS_OK && r->type == REDIS_REPLY_ARRAY && r->elements == b->n) {
        for (size_t i = 0; i < b->n; i++)
            if (r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer > 0) {
                hf_metrics_inc(HF_C_SESSION_RELEASES);
                struct entry *e = b->e[i];
                hf_wake_freed_keys(b->s->d->wakes, (const char *const *)e->keys, e->lens, e->n);
            }
        return;
    }
    log_warn("session: releasing %zu hold%s of a closed connection failed (%s); they expire "
             "within their session TTL", b->n, b->n == 1 ? "" : "s",
             hf_redis_failure_text(status, r));
}

static void on_batch_reply(void *privdata, enum hf_redis_status status, redisReply *r) {
    struct batch *b = privdata;
    if (b->release) {
        release_reply(b, status, r);
        b->s->d->session_releases--;
    } else {
        renewal_reply(b, status, r);
    }
    for (size_t i = 0; i < b->n; i++) entry_unref(b->e[i]);
    struct hf_session *s = b->s;
    free(b);
    session_unref(s);
}

/* ---- the renewal tick ---- */

static void on_tick(uv_timer_t *t);

/* The period: a third of the shortest TTL kept; stopped when none. */
static void schedule(struct hf_session *s) {
    if (s->closed) return;
    uint64_t shortest = 0;
    for (struct entry *e = s->head; e; e = e->next)
        if (!shortest || e->ttl_ms < shortest) shortest = e->ttl_ms;
    uint64_t interval = shortest ? (shortest / 3 ? shortest / 3 : 1) : 0;
    if (interval == s->interval) return;
    s->interval = interval;
    if (interval) uv_timer_start(&s->timer, on_tick, interval, interval);
    else uv_timer_stop(&s->timer);
}

/* Every hold not already in a renewal and not paused, in one call per slot
 * (and per BATCH_KEYS keys). A hold whose call cannot even be sent is lost
 * once its TTL has run out. */
static void on_tick(uv_timer_t *t) {
    struct hf_session *s = t->data;
    struct entry **due = malloc((s->count ? s->count : 1) * sizeof *due);
    if (!due) {
        log_error("session: out of memory renewing %zu holds; trying again", s->count);
        return;
    }
    size_t n = 0;
    for (struct entry *e = s->head; e; e = e->next)
        if (!e->in_flight && !e->paused) due[n++] = e;
    size_t unsent = send_batches(s, false, due, n);
    uint64_t now = uv_now(s->d->loop);
    struct lost_list lost = {0};
    for (size_t i = 0; i < unsent; i++)
        if (now >= due[i]->expires_at)
            lost_add(s, &lost, due[i], HF_CODE(NOT_HELD), 0, WHY_UNRENEWED);
    free(due);
    report(s, &lost);
    schedule(s);
}

/* ---- the request layer's calls ---- */

bool hf_session_add(struct hf_session *s, const struct hf_session_hold *h) {
    if (!s || s->closed || h->n_keys == 0) return false;
    size_t nl = strlen(h->ns), pl = strlen(h->partition), tl = strlen(h->token);
    size_t text = nl + pl + tl + 3;
    for (size_t i = 0; i < h->n_keys; i++) text += h->key_lens[i] + 1;
    struct entry *e = malloc(sizeof *e + h->n_keys * (sizeof(char *) + sizeof(size_t)) + text);
    if (!e) return false;
    *e = (struct entry){.refs = 1, .ttl_ms = h->ttl_ms, .fence = h->fence, .n = h->n_keys};
    e->keys = (char **)(e + 1);
    e->lens = (size_t *)(e->keys + h->n_keys);
    char *p = (char *)(e->lens + h->n_keys);
    e->ns = memcpy(p, h->ns, nl + 1);
    p += nl + 1;
    e->partition = memcpy(p, h->partition, pl + 1);
    p += pl + 1;
    e->token = memcpy(p, h->token, tl + 1);
    p += tl + 1;
    for (size_t i = 0; i < h->n_keys; i++) {
        e->keys[i] = memcpy(p, h->keys[i], h->key_lens[i]);
        p[h->key_lens[i]] = '\0';
        e->lens[i] = h->key_lens[i];
        p += h->key_lens[i] + 1;
    }
    e->prefix_len = strlen("hf:{") + nl + 1 + pl + strlen("}:");
    e->slot = s->d->cfg->redis_cluster ? hf_cluster_keyslot(e->keys[0], e->lens[0]) : 0;
    e->expires_at = h->sent_at_ms + h->ttl_ms;
    DL_PREPEND(s->head, e);
    s->count++;
    hf_metrics_gauge_add(HF_G_SESSION_HOLDS, 1);
    uint64_t interval = h->ttl_ms / 3 ? h->ttl_ms / 3 : 1;
    if (!s->interval || interval < s->interval) {
        s->interval = interval;
        uv_timer_start(&s->timer, on_tick, interval, interval);
    }
    return true;
}

bool hf_session_pause(struct hf_session *s, const char *token, bool confirm) {
    struct entry *e = find(s, token);
    if (!e) return false;
    e->paused++;
    if (confirm) e->confirming++;
    return true;
}

void hf_session_resume(struct hf_session *s, const char *token, bool confirm, bool forget) {
    struct entry *e = find(s, token);
    if (!e) return;
    if (e->paused) e->paused--;
    if (confirm && e->confirming) e->confirming--;
    if (forget) {
        detach(s, e);
        schedule(s);
    }
}

void hf_session_released(struct hf_session *s, const char *token, const char *const *keys,
                         const size_t *lens, size_t n) {
    struct entry *e = find(s, token);
    if (!e) return;
    size_t kept = 0;
    for (size_t i = 0; i < e->n; i++) {
        bool named = false;
        for (size_t j = 0; j < n && !named; j++)
            named = lens[j] == e->lens[i] && memcmp(keys[j], e->keys[i], lens[j]) == 0;
        if (named) continue;
        e->keys[kept] = e->keys[i];
        e->lens[kept++] = e->lens[i];
    }
    e->n = kept;
    if (kept == 0) {
        detach(s, e);
        schedule(s);
    }
}

void hf_session_close(struct hf_session *s) {
    if (!s) return;
    s->closed = true;
    uv_timer_stop(&s->timer);
    struct entry **all = malloc((s->count ? s->count : 1) * sizeof *all);
    size_t n = 0;
    for (struct entry *e = s->head; all && e; e = e->next)
        if (!e->confirming) all[n++] = e; /* a Confirm in flight answers for the others */
    if (n) {
        size_t unsent = send_batches(s, true, all, n);
        if (unsent)
            log_warn("session: %zu hold%s of a closed connection could not be released (redis "
                     "not connected); they expire within their session TTL", unsent,
                     unsent == 1 ? "" : "s");
    } else if (!all && s->count) {
        log_error("session: out of memory releasing %zu holds of a closed connection; they "
                  "expire within their session TTL", s->count);
    }
    free(all);
    while (s->head) detach(s, s->head);
    uv_close((uv_handle_t *)&s->timer, on_timer_closed);
    session_unref(s); /* the owner's */
}
