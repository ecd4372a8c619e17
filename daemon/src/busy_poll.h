/* busy_poll.h - optional busy polling of the daemon's loop
 * (`loop.busy_poll_us`). */
#ifndef HF_BUSY_POLL_H
#define HF_BUSY_POLL_H

#include <stdint.h>
#include <uv.h>

/* Before the first hf_busy_poll_set; its handle never keeps the loop alive. */
void hf_busy_poll_init(uv_loop_t *loop);
/* How long the loop keeps polling after hf_busy_poll_touch; 0: off (the
 * default), and any window open now closes at its end. */
void hf_busy_poll_set(uint32_t us);
/* The daemon expects its next event soon (it took a request, or wrote
 * answers): poll without sleeping for the set time from now. A no-op when
 * off or before init. */
void hf_busy_poll_touch(void);
/* At shutdown, with the loop's other handles. */
void hf_busy_poll_close(void);

#endif
