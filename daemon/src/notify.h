/* notify.h - systemd's notify protocol (READY, STOPPING, RELOADING,
 * WATCHDOG, STATUS). Every call is a no-op outside systemd. */
#ifndef HF_NOTIFY_H
#define HF_NOTIFY_H

#include <stdint.h>

void hf_notify_ready(const char *status);
void hf_notify_status(const char *status);
void hf_notify_stopping(void);
/* RELOADING=1 with MONOTONIC_USEC, as Type=notify-reload expects. */
void hf_notify_reloading(void);
void hf_notify_watchdog(void);
/* The watchdog interval systemd asked for, in microseconds; 0 when none. */
uint64_t hf_notify_watchdog_usec(void);

#endif
