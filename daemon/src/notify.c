/* notify.c - thin layer over sd_notify(3). */
#include "notify.h"

#include <stdio.h>
#include <systemd/sd-daemon.h>
#include <time.h>

void hf_notify_ready(const char *status) {
    sd_notifyf(0, "READY=1\nSTATUS=%s", status ? status : "ready");
}

void hf_notify_status(const char *status) { sd_notifyf(0, "STATUS=%s", status); }

void hf_notify_stopping(void) { sd_notify(0, "STOPPING=1\nSTATUS=draining"); }

void hf_notify_reloading(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    unsigned long long usec =
        (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000ull;
    sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading configuration", usec);
}

void hf_notify_watchdog(void) { sd_notify(0, "WATCHDOG=1"); }

uint64_t hf_notify_watchdog_usec(void) {
    uint64_t usec = 0;
    return sd_watchdog_enabled(0, &usec) > 0 ? usec : 0;
}
