/* ops_health.c - Health (liveness/readiness for probes) and Metrics. */
#include <stdlib.h>

#include "metrics.h"
#include "ops_common.h"
#include "redis_front.h"

void hf_op_health(struct hf_request *req) {
    struct hf_daemon *d = req->d;
    Holdfast__V1__HealthResponse hr = HOLDFAST__V1__HEALTH_RESPONSE__INIT;
    hr.live = true;
    hr.ready = hf_daemon_ready(d);
    hr.version = HOLDFAST_VERSION;
    hr.redis = hf_front_ready(d->redis) ? "up" : "down";
    hr.postgres = !d->pg ? "disabled" : d->pg_ready ? "up" : "down";
    hr.script_path = (char *)hf_front_path_name(d->redis);
    hr.release_path = (char *)hf_front_release_path_name(d->redis);
    hr.library = HF_LIBRARY_NAME;
    hr.connections = d->connections;
    hr.in_flight = d->in_flight;
    hr.draining = d->draining;
    HF_REPLY_OK(req, health, HEALTH, &hr);
}

void hf_op_metrics(struct hf_request *req) {
    hf_metrics_gauge_set(HF_G_READY, hf_daemon_ready(req->d));
    char *text = hf_metrics_render();
    if (!text) {
        hf_request_fail(req, HF_CODE(RESOURCE_EXHAUSTED), NULL, NULL, "out of memory");
        return;
    }
    Holdfast__V1__MetricsResponse mr = HOLDFAST__V1__METRICS_RESPONSE__INIT;
    mr.text = text;
    HF_REPLY_OK(req, metrics, METRICS, &mr);
    free(text);
}
