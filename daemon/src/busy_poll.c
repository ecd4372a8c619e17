/* busy_poll.c - optional busy polling (`loop.busy_poll_us`, off by default).
 *
 * A request through the daemon wakes it twice (on the request, then on
 * Redis' reply), and on a machine whose idle cores sleep each wake-up costs
 * tens of µs: that, not the daemon's work, is most of what a lone request
 * pays for the hop. While the window is open an idle handle is active, so
 * libuv polls with a zero timeout instead of sleeping, and the next event
 * (Redis' reply, the client's next request) finds the loop awake. Each empty
 * turn yields the CPU: a process the kernel woke onto this core (a
 * unix-socket wake-up prefers the waker's core), say Redis with the request
 * just written, runs at once instead of waiting for the spinning loop's time
 * slice to end. The price is a core kept busy while traffic flows. */
#include "busy_poll.h"

#include <sched.h>
#include <stdbool.h>

/* One loop, one thread. */
static struct {
    uv_idle_t idle;
    bool ready;      /* idle initialised */
    uint64_t window; /* ns; 0: off */
    uint64_t until;  /* uv_hrtime() at which the open window closes */
} bp;

static void on_idle(uv_idle_t *h) {
    if (uv_hrtime() >= bp.until) uv_idle_stop(h);
    else sched_yield();
}

void hf_busy_poll_init(uv_loop_t *loop) {
    uv_idle_init(loop, &bp.idle);
    uv_unref((uv_handle_t *)&bp.idle);
    bp.ready = true;
}

void hf_busy_poll_set(uint32_t us) {
    bp.window = (uint64_t)us * 1000;
    if (bp.window == 0) bp.until = 0; /* the open window closes at the next turn */
}

void hf_busy_poll_touch(void) {
    if (bp.window == 0 || !bp.ready) return;
    bp.until = uv_hrtime() + bp.window;
    uv_idle_start(&bp.idle, on_idle); /* no-op when started */
}

void hf_busy_poll_close(void) {
    if (!bp.ready) return;
    bp.ready = false;
    bp.window = 0;
    uv_close((uv_handle_t *)&bp.idle, NULL);
}
