/* daemon.c - readiness, as health probes and sd_notify see it. */
#include "daemon.h"

#include "scripts.h"

bool hf_daemon_ready(const struct hf_daemon *d) {
    if (d->draining || !hf_scripts_ready(d->scripts)) return false;
    return !d->pg || d->pg_ready;
}
