/* redis_events.c - see redis_events.h. */
#include "redis_events.h"

#include <stdbool.h>
#include <stdlib.h>

struct redis_events {
    redisAsyncContext *ac; /* NULL once hiredis let go of it */
    uv_poll_t poll;
    uv_timer_t timer;      /* hiredis's connect timeout */
    uv_prepare_t flusher;  /* started while commands wait to be written */
    int watching;          /* the events the poll watches */
    bool want_write;       /* hiredis has bytes to write */
    bool flushing;         /* inside the flusher's write */
    int open_handles;      /* freed when the last one has closed */
};

static void on_poll(uv_poll_t *h, int status, int events) {
    struct redis_events *e = h->data;
    int ev = status < 0 ? e->watching : events;
    if (e->ac && (ev & UV_READABLE)) redisAsyncHandleRead(e->ac);
    if (e->ac && (ev & UV_WRITABLE)) redisAsyncHandleWrite(e->ac);
}

static void start_watch(struct redis_events *e, int events) {
    if (events == e->watching) return;
    e->watching = events;
    if (events) uv_poll_start(&e->poll, events, on_poll);
    else uv_poll_stop(&e->poll);
}

static void on_flusher(uv_prepare_t *p) {
    struct redis_events *e = p->data;
    uv_prepare_stop(p);
    if (!e->ac || !e->want_write) return;
    e->flushing = true;
    redisAsyncHandleWrite(e->ac); /* may free the context: see cleanup */
    e->flushing = false;
}

void hf_redis_events_write_now(redisAsyncContext *ac) {
    struct redis_events *e = ac ? ac->ev.data : NULL;
    if (!e || !e->ac || !e->want_write || (e->watching & UV_WRITABLE) || e->flushing) return;
    if (!(ac->c.flags & REDIS_CONNECTED) || ac->c.err) return;
    /* hiredis's own write would disconnect on an error, and run every
     * pending callback inside our caller's call; the plain write leaves the
     * error in the context, where the flusher meets it from the loop. */
    int done = 0;
    if (redisBufferWrite(&ac->c, &done) == REDIS_OK && done) {
        e->want_write = false;
        uv_prepare_stop(&e->flusher);
    }
}

static void add_read(void *data) {
    struct redis_events *e = data;
    start_watch(e, e->watching | UV_READABLE);
}

static void del_read(void *data) {
    struct redis_events *e = data;
    start_watch(e, e->watching & ~UV_READABLE);
}

static void add_write(void *data) {
    struct redis_events *e = data;
    e->want_write = true;
    /* Connecting, or the socket took only part of the last write: wait for
     * the socket. Otherwise write before the loop next waits. */
    if (!(e->ac->c.flags & REDIS_CONNECTED) || e->flushing)
        start_watch(e, e->watching | UV_WRITABLE);
    else if (!(e->watching & UV_WRITABLE))
        uv_prepare_start(&e->flusher, on_flusher);
}

static void del_write(void *data) {
    struct redis_events *e = data;
    e->want_write = false;
    start_watch(e, e->watching & ~UV_WRITABLE);
}

static void on_timeout(uv_timer_t *t) {
    struct redis_events *e = t->data;
    if (e->ac) redisAsyncHandleTimeout(e->ac);
}

static void schedule_timer(void *data, struct timeval tv) {
    struct redis_events *e = data;
    uint64_t ms = (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
    uv_timer_start(&e->timer, on_timeout, ms, 0);
}

static void on_closed(uv_handle_t *h) {
    struct redis_events *e = h->data;
    if (--e->open_handles == 0) free(e);
}

static void cleanup(void *data) {
    struct redis_events *e = data;
    e->ac = NULL;
    uv_close((uv_handle_t *)&e->poll, on_closed);
    uv_close((uv_handle_t *)&e->timer, on_closed);
    uv_close((uv_handle_t *)&e->flusher, on_closed);
}

int hf_redis_events_attach(redisAsyncContext *ac, uv_loop_t *loop) {
    if (ac->ev.data) return REDIS_ERR;
    struct redis_events *e = calloc(1, sizeof *e);
    if (!e) return REDIS_ERR;
    if (uv_poll_init_socket(loop, &e->poll, ac->c.fd) != 0) {
        free(e);
        return REDIS_ERR;
    }
    uv_timer_init(loop, &e->timer);
    uv_prepare_init(loop, &e->flusher);
    e->poll.data = e->timer.data = e->flusher.data = e;
    e->open_handles = 3;
    e->ac = ac;
    ac->ev.data = e;
    ac->ev.addRead = add_read;
    ac->ev.delRead = del_read;
    ac->ev.addWrite = add_write;
    ac->ev.delWrite = del_write;
    ac->ev.cleanup = cleanup;
    ac->ev.scheduleTimer = schedule_timer;
    return REDIS_OK;
}
