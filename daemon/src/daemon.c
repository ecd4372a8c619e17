/* daemon.c - readiness, as health probes and sd_notify see it. */
#include "daemon.h"

#include "redis_front.h"

bool hf_daemon_ready(const struct hf_daemon *d) {
    if (d->draining || !hf_front_ready(d->redis)) return false;
    return !d->pg || d->pg_ready;
}
