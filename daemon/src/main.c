/* main.c - holdfastd: start-up order, signals, reload and shutdown.
 *
 * Start-up: config -> Redis pool (connects and loads the library in the
 * background) -> listener. READY=1 once Redis (and PostgreSQL, where
 * configured) can serve. SIGTERM drains: stop accepting, answer what is in
 * flight (bounded by limits.drain_timeout_ms), exit 0. SIGHUP reloads
 * namespaces, limits and the log level; an invalid file keeps the old
 * configuration. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "busy_poll.h"
#include "config.h"
#include "conn.h"
#include "confirm_db.h"
#include "daemon.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "notify.h"
#include "ops_table.h"
#include "pg_migrate.h"
#include "request.h"
#include "redis_front.h"
#include "server.h"
#include "wake_hub.h"

struct app {
    struct hf_daemon d; /* first: callbacks get the daemon and find the app */
    uv_loop_t loop;
    struct hf_http *http; /* metrics.http; NULL when off */
    uv_signal_t sigterm, sigint, sighup;
    uv_timer_t drain_timer;
    uv_timer_t release_timer; /* shutdown: waits for the session releases */
    uint64_t release_until;   /* loop time the wait for them ends */
    uv_timer_t watchdog;
    uv_prepare_t log_flush; /* one write(2) of log lines per loop iteration */
    bool ready_announced;
    bool last_ready;
    bool stopping;
    int exit_code;
};

/* At most this long (and at most redis.command_timeout_ms) a shutdown waits
 * for the release of the closed connections' session holds. */
enum { SESSION_RELEASE_WAIT_MS = 2000 };

static void usage(FILE *out) {
    fprintf(out,
            "usage: holdfastd --config FILE      run in the foreground\n"
            "       holdfastd --check-config FILE validate FILE and exit (0 = valid)\n"
            "       holdfastd --migrate [--config FILE] [--dsn DSN]\n"
            "                 apply the PostgreSQL schema migrations and exit (0 = up to date)\n"
            "       holdfastd --version\n");
}

static void update_readiness(struct app *app) {
    bool ready = hf_daemon_ready(&app->d);
    if (ready == app->last_ready) return;
    app->last_ready = ready;
    if (ready) {
        log_info("ready: redis %s, scripts via %s", "up", hf_front_path_name(app->d.redis));
        if (!app->ready_announced) {
            hf_notify_ready("serving");
            app->ready_announced = true;
        } else {
            hf_notify_status("serving");
        }
    } else if (!app->d.draining) {
        log_warn("not ready: redis %s%s", hf_front_ready(app->d.redis) ? "up" : "down",
                 app->d.pg && !app->d.pg_ready ? ", postgres down" : "");
        hf_notify_status("backend unavailable; retrying");
    }
}

/* ---- wiring: a connection's frames go to the request layer, whose answers
 * go back to the connection ---- */

static void io_send(void *conn, uint8_t *frame, size_t len) { hf_conn_send(conn, frame, len); }

static void io_fatal(void *conn, hf_code code, const char *message) {
    hf_conn_fatal(conn, code, message);
}

static void io_settled(void *conn) { hf_conn_requests_settled(conn); }

static const struct hf_client_io client_io = {io_send, io_fatal, io_settled};

static void sink_frame(void *client, const uint8_t *payload, size_t len) {
    hf_client_frame(client, payload, len);
}

static void sink_closed(void *client) { hf_client_gone(client); }

/* Requests in flight, and session holds: a connection that keeps session
 * holds alive is not idle (limits.idle_timeout_ms), whatever it sends. */
static unsigned sink_pending(void *client) {
    return hf_client_in_flight(client) + (hf_client_session_holds(client) ? 1 : 0);
}

static const struct hf_conn_sink client_sink = {sink_frame, sink_closed, sink_pending};

static void on_accept(void *ud, struct hf_conn *conn) {
    struct app *app = ud;
    uint32_t uid, gid;
    hf_conn_peer(conn, &uid, &gid);
    struct hf_client *client = hf_client_create(&app->d, &client_io, conn, uid, gid);
    if (!client) {
        hf_conn_fatal(conn, HF_CODE(RESOURCE_EXHAUSTED), "out of memory");
        return;
    }
    hf_conn_set_sink(conn, &client_sink, client);
}

static void on_redis_ready(void *ud, bool ready) {
    (void)ready;
    update_readiness(ud);
}

static void on_pg_state(void *ud, unsigned ready) {
    struct app *app = ud;
    app->d.pg_ready = ready > 0;
    update_readiness(app);
}

static void close_walk_cb(uv_handle_t *h, void *arg) {
    (void)arg;
    if (!uv_is_closing(h)) uv_close(h, NULL);
}

/* The last step of a shutdown: close the backends and every handle. */
static void close_everything(struct app *app) {
    uv_close((uv_handle_t *)&app->release_timer, NULL);
    hf_http_close(app->http);
    app->http = NULL;
    hf_wake_hub_close(app->d.wakes); /* after the server: every waiter has left */
    app->d.wakes = NULL;
    hf_front_close(app->d.redis);
    app->d.redis = NULL;
    hf_confirm_db_close(app->d.pg);
    app->d.pg = NULL;
    uv_close((uv_handle_t *)&app->sigterm, NULL);
    uv_close((uv_handle_t *)&app->sigint, NULL);
    uv_close((uv_handle_t *)&app->sighup, NULL);
    /* Closing the handles gave the signals their default action back; the
     * daemon is on its way out, so another SIGTERM must not turn a clean exit
     * into a kill (a slow exit, e.g. under valgrind, can meet one). */
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    uv_close((uv_handle_t *)&app->drain_timer, NULL);
    uv_close((uv_handle_t *)&app->watchdog, NULL);
    uv_close((uv_handle_t *)&app->log_flush, NULL);
    hf_busy_poll_close();
}

/* Closing the connections ended their sessions, whose holds are being
 * released (docs/sessions.md): Redis stays open until every connection is
 * closed and those calls have answered, or the wait is over. */
static void on_release_wait(uv_timer_t *t) {
    struct app *app = t->data;
    bool done = app->d.connections == 0 && app->d.session_releases == 0;
    if (!done && uv_now(&app->loop) < app->release_until) return;
    uv_timer_stop(t);
    if (!done)
        log_warn("shutdown: %u session release calls unanswered; those holds expire within "
                 "their session TTL", app->d.session_releases);
    close_everything(app);
}

static void shutdown_now(struct app *app) {
    if (app->stopping) {
        /* A second signal while session holds are released: stop now. */
        if (uv_is_active((uv_handle_t *)&app->release_timer)) {
            uv_timer_stop(&app->release_timer);
            close_everything(app);
        }
        return;
    }
    app->stopping = true;
    log_info("shutting down (%u requests still in flight)", app->d.in_flight);
    bool had_server = app->d.server != NULL;
    hf_server_close(app->d.server);
    app->d.server = NULL;
    if (!had_server || !app->d.redis) {
        close_everything(app);
        return;
    }
    uint32_t wait = app->d.cfg->redis_command_timeout_ms;
    app->release_until = uv_now(&app->loop) + (wait < SESSION_RELEASE_WAIT_MS ? wait
                                                                              : SESSION_RELEASE_WAIT_MS);
    uv_timer_start(&app->release_timer, on_release_wait, 1, 1);
}

static void on_drained(uv_timer_t *t) { shutdown_now(t->data); }

/* The last request in flight finished. That may be inside a backend's reply
 * callback, where freeing the backend is not allowed: shut down from the
 * next loop iteration instead. */
static void on_idle(struct hf_daemon *d) {
    struct app *app = (struct app *)d;
    uv_timer_start(&app->drain_timer, on_drained, 0, 0);
}

static void on_drain_timeout(uv_timer_t *t) {
    struct app *app = t->data;
    log_warn("drain: %u requests still in flight after %u ms; closing", app->d.in_flight,
             app->d.cfg->drain_timeout_ms);
    shutdown_now(app);
}

static void on_terminate(uv_signal_t *s, int signum) {
    struct app *app = s->data;
    if (app->d.draining) {
        log_warn("second %s: closing now", strsignal(signum));
        shutdown_now(app);
        return;
    }
    log_info("%s: draining %u requests in flight (at most %u ms)", strsignal(signum),
             app->d.in_flight, app->d.cfg->drain_timeout_ms);
    app->d.draining = true;
    hf_notify_stopping();
    hf_wake_hub_drain(app->d.wakes); /* waiters answer now, not at their wait's end */
    hf_server_stop_accepting(app->d.server);
    if (app->d.in_flight == 0) {
        shutdown_now(app);
        return;
    }
    uv_timer_start(&app->drain_timer, on_drain_timeout, app->d.cfg->drain_timeout_ms, 0);
}

static void on_reload(uv_signal_t *s, int signum) {
    (void)signum;
    struct app *app = s->data;
    hf_notify_reloading();
    char err[1024];
    struct hf_config *next = hf_config_load(app->d.cfg->path, err, sizeof err);
    if (!next) {
        hf_metrics_inc(HF_C_CONFIG_RELOAD_FAILURES);
        log_error("reload refused, keeping the running configuration: %s", err);
    } else {
        hf_config_warn_restart_only(app->d.cfg, next);
        hf_config_unref(app->d.cfg);
        app->d.cfg = next;
        if (hf_config_apply(next, err, sizeof err) != 0)
            log_warn("config reload: cannot apply %s", err);
        hf_metrics_inc(HF_C_CONFIG_RELOADS);
        log_info("configuration reloaded from %s (%zu namespaces)", next->path,
                 next->n_namespaces);
    }
    hf_notify_ready(hf_daemon_ready(&app->d) ? "serving" : "backend unavailable; retrying");
}

static void on_log_flush(uv_prepare_t *p) {
    (void)p;
    hf_log_flush();
}

static void on_watchdog(uv_timer_t *t) {
    (void)t;
    hf_notify_watchdog();
}

/* Undo the start of run() when the config cannot be applied: only the
 * loop and its busy-poll handle exist yet. */
static void free_app_early(struct app *app, struct hf_config *cfg) {
    hf_busy_poll_close();
    uv_run(&app->loop, UV_RUN_DEFAULT);
    uv_loop_close(&app->loop);
    free(app);
    hf_config_unref(cfg);
}

static int run(const char *config_path) {
    char err[1024];
    struct hf_config *cfg = hf_config_load(config_path, err, sizeof err);
    if (!cfg) {
        fprintf(stderr, "%sholdfastd: %s\n", hf_log_priority(HF_LOG_ERROR), err);
        return 1;
    }
    struct app *app = calloc(1, sizeof *app);
    if (!app) {
        hf_config_unref(cfg);
        return 1;
    }
    uv_loop_init(&app->loop);
    hf_busy_poll_init(&app->loop); /* before the config sets its window */
    if (hf_config_apply(cfg, err, sizeof err) != 0) {
        log_error("cannot apply %s", err);
        free_app_early(app, cfg);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    app->d.loop = &app->loop;
    app->d.cfg = cfg;
    app->d.ops = hf_ops_table();
    app->d.on_idle = on_idle;
    hf_metrics_set_ops(app->d.ops);
    hf_metrics_set_build_info(HOLDFAST_VERSION, HF_LIBRARY_NAME);
    log_info("holdfastd %s starting (config %s, library %s)", HOLDFAST_VERSION, cfg->path,
             HF_LIBRARY_NAME);

    uv_signal_init(&app->loop, &app->sigterm);
    uv_signal_init(&app->loop, &app->sigint);
    uv_signal_init(&app->loop, &app->sighup);
    app->sigterm.data = app->sigint.data = app->sighup.data = app;
    uv_signal_start(&app->sigterm, on_terminate, SIGTERM);
    uv_signal_start(&app->sigint, on_terminate, SIGINT);
    uv_signal_start(&app->sighup, on_reload, SIGHUP);
    uv_timer_init(&app->loop, &app->drain_timer);
    app->drain_timer.data = app;
    uv_timer_init(&app->loop, &app->release_timer);
    app->release_timer.data = app;
    uv_prepare_init(&app->loop, &app->log_flush);
    uv_prepare_start(&app->log_flush, on_log_flush);
    uv_unref((uv_handle_t *)&app->log_flush); /* never keeps the loop alive */
    uv_timer_init(&app->loop, &app->watchdog);
    uint64_t wd = hf_notify_watchdog_usec();
    if (wd) uv_timer_start(&app->watchdog, on_watchdog, wd / 2000, wd / 2000);

    app->d.redis = hf_front_create(&app->loop, cfg, on_redis_ready, app);
    if (app->d.redis) app->d.wakes = hf_wake_hub_create(&app->loop, app->d.redis, cfg);
    if (cfg->pg_dsn) app->d.pg = hf_confirm_db_create(&app->loop, cfg, on_pg_state, app);
    app->d.server = app->d.redis && app->d.wakes && (app->d.pg || !cfg->pg_dsn)
                        ? hf_server_create(&app->d, on_accept, app)
                        : NULL;
    if (app->d.server && cfg->metrics_http)
        app->http = hf_http_create(&app->d, cfg->metrics_http_address);
    if (!app->d.server || (cfg->metrics_http && !app->http)) {
        log_error("start-up failed");
        app->exit_code = 1;
        shutdown_now(app);
    }

    uv_run(&app->loop, UV_RUN_DEFAULT);
    /* Anything still open (nothing, normally) is closed so the loop can be
     * freed cleanly. */
    uv_walk(&app->loop, close_walk_cb, NULL);
    uv_run(&app->loop, UV_RUN_DEFAULT);
    int rc = uv_loop_close(&app->loop);
    hf_request_cache_drain();
    if (rc != 0) log_warn("loop closed with handles open: %s", uv_strerror(rc));
    int exit_code = app->exit_code;
    log_info("stopped");
    hf_log_flush();
    hf_config_unref(app->d.cfg);
    free(app);
    return exit_code;
}

static int check_config(const char *path) {
    char err[1024];
    struct hf_config *cfg = hf_config_load(path, err, sizeof err);
    if (!cfg) {
        /* Also ExecStartPre's and ExecReload's: `journalctl -p err` shows it. */
        fprintf(stderr, "%sholdfastd: %s\n", hf_log_priority(HF_LOG_ERROR), err);
        return 1;
    }
    printf("%s: ok (%zu namespaces)\n", path, cfg->n_namespaces);
    hf_config_unref(cfg);
    return 0;
}

int main(int argc, char **argv) {
    static const struct option options[] = {
        {"config", required_argument, NULL, 'c'},
        {"check-config", required_argument, NULL, 'k'},
        {"version", no_argument, NULL, 'V'},
        {"migrate", no_argument, NULL, 'm'},
        {"dsn", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    hf_log_set_journal(hf_log_stderr_is_journal());
    const char *config = NULL;
    const char *dsn = NULL;
    bool migrate = false;
    int opt;
    while ((opt = getopt_long(argc, argv, "c:k:Vhmd:", options, NULL)) != -1) {
        switch (opt) {
        case 'c': config = optarg; break;
        case 'k': return check_config(optarg);
        case 'V': printf("holdfastd %s (library %s)\n", HOLDFAST_VERSION, HF_LIBRARY_NAME); return 0;
        case 'h': usage(stdout); return 0;
        case 'm': migrate = true; break;
        case 'd': dsn = optarg; break;
        default: usage(stderr); return 2;
        }
    }
    if (migrate && optind == argc) return hf_pg_migrate_command(config, dsn);
    if (!config || optind != argc) {
        usage(stderr);
        return 2;
    }
    return run(config);
}
