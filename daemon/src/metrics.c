/* metrics.c - counters by op and result, latency histograms per op, and
 * the process_* series every Prometheus client library exports.
 *
 * No series that can never move: a resource op's request counters start at
 * zero only for the result codes its op-table row lists (hf_op_def.codes);
 * any other appears once it is counted (and is logged once, as the row is
 * then wrong). */
#include "metrics.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define N_CODES 18 /* Code enum values 0..17 */
#define N_BUCKETS 14

static const uint64_t bucket_us[N_BUCKETS] = {100,    250,    500,     1000,    2500,
                                              5000,   10000,  25000,   50000,   100000,
                                              250000, 500000, 1000000, 5000000};

static struct {
    const struct hf_op_table *ops;
    uint64_t requests[HF_METRICS_MAX_OPS][N_CODES];
    uint64_t degraded[HF_METRICS_MAX_OPS];
    uint64_t latency_buckets[HF_METRICS_MAX_OPS][N_BUCKETS];
    uint64_t latency_count[HF_METRICS_MAX_OPS];
    uint64_t latency_sum_us[HF_METRICS_MAX_OPS];
    uint64_t counters[HF_C__COUNT];
    int64_t gauges[HF_G__COUNT];
    unsigned unlisted_logged[HF_METRICS_MAX_OPS]; /* code bits warned about */
    const char *script_path;
    const char *release_path;
    const char *version;
    const char *library;
    double start_time; /* process_start_time_seconds, once known */
} m = {.script_path = "none", .release_path = "none", .version = "unknown",
       .library = "unknown"};

static const struct {
    const char *name;
    const char *help;
} counter_info[HF_C__COUNT] = {
    [HF_C_REDIS_RECONNECTS] = {"holdfast_redis_reconnects_total", "Redis connections re-established."},
    [HF_C_REDIS_ERRORS] = {"holdfast_redis_errors_total", "Redis calls that failed (error reply or lost connection)."},
    [HF_C_REDIS_TIMEOUTS] = {"holdfast_redis_timeouts_total", "Redis calls that passed their deadline."},
    [HF_C_REDIS_NOSCRIPT_RECOVERIES] = {"holdfast_redis_noscript_recoveries_total", "Calls re-sent as EVAL after NOSCRIPT or a missing function."},
    [HF_C_LIBRARY_LOADS] = {"holdfast_redis_library_loads_total", "Times the script library was loaded into Redis."},
    [HF_C_LATE_GRANTS_RELEASED] = {"holdfast_late_grants_released_total", "Grants that arrived after the request's deadline and were released again."},
    [HF_C_REPLICA_ACK_FAILURES] = {"holdfast_replica_ack_failures_total", "Grants withdrawn because too few replicas acknowledged them."},
    [HF_C_DEGRADED_ANSWERS] = {"holdfast_degraded_answers_total", "Answers given without Redis under the best_effort policy."},
    [HF_C_FRAMES_REJECTED] = {"holdfast_frames_rejected_total", "Frames refused as oversized or undecodable."},
    [HF_C_CONNECTIONS_REJECTED] = {"holdfast_connections_rejected_total", "Client connections refused (limit or peer credentials)."},
    [HF_C_CONNECTIONS_ACCEPTED] = {"holdfast_connections_accepted_total", "Client connections accepted."},
    [HF_C_PG_RECONNECTS] = {"holdfast_postgres_reconnects_total", "PostgreSQL connections re-established."},
    [HF_C_PG_ERRORS] = {"holdfast_postgres_errors_total", "PostgreSQL calls that failed."},
    [HF_C_RELEASE_AFTER_CONFIRM_FAILED] = {"holdfast_release_after_confirm_failed_total", "Hold releases or markings that failed after a committed confirm."},
    [HF_C_CONFIRM_IN_DOUBT] = {"holdfast_confirm_in_doubt_total", "Confirms whose commit outcome had to be looked up again."},
    [HF_C_CONFIG_RELOADS] = {"holdfast_config_reloads_total", "Successful configuration reloads."},
    [HF_C_CONFIG_RELOAD_FAILURES] = {"holdfast_config_reload_failures_total", "Reloads refused because the new file was invalid."},
    [HF_C_POLICY_HOOK_FAILURES] = {"holdfast_policy_hook_failures_total", "Admit hooks that raised an error or ran out of budget."},
    [HF_C_REDIS_MOVED] = {"holdfast_redis_redirects_total{kind=\"moved\"}", "Redis Cluster redirections followed (MOVED: slot owner changed; ASK: slot migrating)."},
    [HF_C_REDIS_ASK] = {"holdfast_redis_redirects_total{kind=\"ask\"}", NULL},
    [HF_C_REDIS_CLUSTER_REFRESHES] = {"holdfast_redis_cluster_slot_refreshes_total", "Redis Cluster slot maps fetched (CLUSTER SLOTS)."},
    [HF_C_SLOW_READERS_BUDGET] = {"holdfast_slow_readers_closed_total{reason=\"budget\"}", "Client connections closed for not reading their answers (budget: limits.max_queued_bytes reached; stalled: above 8 MiB for limits.slow_reader_timeout_ms)."},
    [HF_C_SLOW_READERS_STALLED] = {"holdfast_slow_readers_closed_total{reason=\"stalled\"}", NULL},
    [HF_C_CONN_TIMEOUTS_FRAME] = {"holdfast_connections_timed_out_total{reason=\"frame\"}", "Client connections closed by a timeout (frame: limits.frame_timeout_ms; idle: limits.idle_timeout_ms)."},
    [HF_C_CONN_TIMEOUTS_IDLE] = {"holdfast_connections_timed_out_total{reason=\"idle\"}", NULL},
    [HF_C_SESSION_RENEWALS] = {"holdfast_session_renewals_total", "Session holds whose TTL a renewal topped up (docs/sessions.md)."},
    [HF_C_SESSION_RENEWAL_CALLS] = {"holdfast_session_renewal_calls_total", "Redis calls that renewed session holds (one per connection and renewal tick, per slot in a cluster, per 4096 keys)."},
    [HF_C_SESSION_HOLDS_LOST] = {"holdfast_session_holds_lost_total", "Session holds reported lost to their connection (expired, taken over, sold, or not renewable before their TTL ran out)."},
    [HF_C_SESSION_RELEASES] = {"holdfast_session_releases_total", "Session holds released because their connection closed."},
    [HF_C_WAITS_GRANTED] = {"holdfast_waits_total{outcome=\"granted\"}", "Holds that waited in line (wait_ms), by how the wait ended (granted; timed_out: the wait or the deadline ran out; confirmed: the resource was sold; left: the client disconnected, the daemon drained, or Redis failed)."},
    [HF_C_WAITS_TIMED_OUT] = {"holdfast_waits_total{outcome=\"timed_out\"}", NULL},
    [HF_C_WAITS_CONFIRMED] = {"holdfast_waits_total{outcome=\"confirmed\"}", NULL},
    [HF_C_WAITS_LEFT] = {"holdfast_waits_total{outcome=\"left\"}", NULL},
    [HF_C_WAIT_WAKEUPS] = {"holdfast_wait_wakeups_total", "Wake-ups received for this daemon's waiters (a release or sale named their ticket)."},
    [HF_C_REDIS_BATCHES] = {"holdfast_redis_batches_total", "Sends of the holds, extends, releases, confirm checks and marks made in one loop iteration (per cluster slot): one Redis call each."},
    [HF_C_REDIS_BATCHED_CALLS] = {"holdfast_redis_batched_calls_total", "Calls sent inside a batch of two or more (hf1_batch); a batch of one goes as its own call."},
};

static const struct {
    const char *name;
    const char *help;
} gauge_info[HF_G__COUNT] = {
    [HF_G_CONNECTIONS] = {"holdfast_client_connections", "Open client connections."},
    [HF_G_IN_FLIGHT] = {"holdfast_requests_in_flight", "Requests being processed."},
    [HF_G_REDIS_CONNECTED] = {"holdfast_redis_pool_connected", "Redis pool connections that are ready (all cluster nodes)."},
    [HF_G_REDIS_POOL_SIZE] = {"holdfast_redis_pool_size", "Redis pool connections kept (pool_size per cluster primary)."},
    [HF_G_PG_CONNECTED] = {"holdfast_postgres_pool_connected", "PostgreSQL pool connections that are ready."},
    [HF_G_PG_POOL_SIZE] = {"holdfast_postgres_pool_size", "Configured PostgreSQL pool size."},
    [HF_G_REDIS_CLUSTER_NODES] = {"holdfast_redis_cluster_nodes", "Primaries in the Redis Cluster slot map (0 when not in cluster mode)."},
    [HF_G_QUEUED_BYTES] = {"holdfast_client_queued_bytes", "Answer bytes queued for all client connections, not yet written (limits.max_queued_bytes bounds it)."},
    [HF_G_READY] = {"holdfast_ready", "1 while ready for traffic (Redis library loaded, PostgreSQL reachable where configured, not draining)."},
    [HF_G_SESSION_HOLDS] = {"holdfast_session_holds", "Session holds kept alive for their connections now (a daemon restart does not adopt them: they expire by their TTL)."},
    [HF_G_WAITERS] = {"holdfast_waiters", "Holds waiting in line now (wait_ms, docs/waiting.md)."},
    [HF_G_WAIT_SUBSCRIBED] = {"holdfast_wait_subscribed", "1 while the wake-up subscription (Redis pub/sub) is up; 0: waiters poll."},
};

void hf_metrics_set_ops(const struct hf_op_table *ops) {
    m.ops = ops && ops->n <= HF_METRICS_MAX_OPS ? ops : NULL;
}

void hf_metrics_request(const struct hf_op_def *def, hf_code code, bool degraded,
                        uint64_t latency_us) {
    unsigned op = def->index;
    if (op >= HF_METRICS_MAX_OPS) return;
    if ((unsigned)code >= N_CODES) code = 0;
    unsigned bit = 1u << (unsigned)code;
    if (!(def->codes & bit) && !(m.unlisted_logged[op] & bit)) {
        m.unlisted_logged[op] |= bit;
        log_warn("metrics: op %s answered %s, a code its op-table row does not list", def->name,
                 hf_code_name(code));
    }
    m.requests[op][code]++;
    if (degraded) m.degraded[op]++;
    for (int b = 0; b < N_BUCKETS; b++)
        if (latency_us <= bucket_us[b]) m.latency_buckets[op][b]++;
    m.latency_count[op]++;
    m.latency_sum_us[op] += latency_us;
}

void hf_metrics_inc(enum hf_counter c) { m.counters[c]++; }
void hf_metrics_add(enum hf_counter c, uint64_t n) { m.counters[c] += n; }
void hf_metrics_gauge_add(enum hf_gauge g, int64_t delta) { m.gauges[g] += delta; }
void hf_metrics_gauge_set(enum hf_gauge g, int64_t value) { m.gauges[g] = value; }
int64_t hf_metrics_gauge(enum hf_gauge g) { return m.gauges[g]; }

void hf_metrics_set_build_info(const char *version, const char *library) {
    m.version = version;
    m.library = library;
}

void hf_metrics_set_paths(const char *script_path, const char *release_path) {
    m.script_path = script_path;
    m.release_path = release_path;
}

struct buf {
    char *data;
    size_t len, cap;
    bool oom;
};

static void put(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct buf *b, const char *fmt, ...) {
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap * 2 + (size_t)(n > 0 ? n : 0);
        char *grown = realloc(b->data, cap);
        if (!grown) {
            b->oom = true;
            return;
        }
        b->data = grown;
        b->cap = cap;
    }
}

/* ---- process_*, from /proc/self (visible under ProcSubset=pid) ---- */

struct proc_stat {
    double cpu_seconds;
    unsigned long long start_ticks; /* since boot */
    unsigned long long vsize, rss_pages;
};

static bool read_proc_stat(struct proc_stat *out) {
    char text[1024];
    FILE *f = fopen("/proc/self/stat", "re");
    if (!f) return false;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    /* The command name (field 2) may hold spaces and parentheses: fields
     * are counted from its closing parenthesis, field 3 onwards. */
    char *p = strrchr(text, ')');
    if (!p) return false;
    unsigned long long utime, stime;
    int got = sscanf(p + 1,
                     " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d "
                     "%*d %*d %llu %llu %llu",
                     &utime, &stime, &out->start_ticks, &out->vsize, &out->rss_pages);
    if (got != 5) return false;
    long hz = sysconf(_SC_CLK_TCK);
    if (hz <= 0) return false;
    out->cpu_seconds = (double)(utime + stime) / (double)hz;
    return true;
}

/* Descriptors open now, not counting the one that lists them. */
static long open_fds(void) {
    DIR *dir = opendir("/proc/self/fd");
    if (!dir) return -1;
    long n = 0;
    for (struct dirent *e; (e = readdir(dir));)
        if (e->d_name[0] != '.') n++;
    closedir(dir);
    return n - 1;
}

/* Start time in seconds since the epoch: boot time (now minus time since
 * boot) plus the start tick. /proc/stat's btime would do, but ProcSubset=pid
 * hides it. Computed once, so it never jitters between scrapes. */
static double start_time(const struct proc_stat *ps) {
    if (m.start_time > 0) return m.start_time;
    struct timespec real, boot;
    long hz = sysconf(_SC_CLK_TCK);
    if (hz <= 0 || clock_gettime(CLOCK_REALTIME, &real) != 0 ||
        clock_gettime(CLOCK_BOOTTIME, &boot) != 0)
        return 0;
    double booted = ((double)real.tv_sec + real.tv_nsec / 1e9) -
                    ((double)boot.tv_sec + boot.tv_nsec / 1e9);
    m.start_time = booted + (double)ps->start_ticks / (double)hz;
    return m.start_time;
}

static void put_gauge(struct buf *b, const char *name, const char *help, long long value) {
    put(b, "# HELP %s %s\n# TYPE %s gauge\n%s %lld\n", name, help, name, name, value);
}

static void put_process(struct buf *b) {
    struct proc_stat ps;
    if (read_proc_stat(&ps)) {
        /* Clock ticks are 1/100 s: two decimals say all there is. */
        put(b, "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
               "# TYPE process_cpu_seconds_total counter\n"
               "process_cpu_seconds_total %.2f\n",
            ps.cpu_seconds);
        long page = sysconf(_SC_PAGESIZE);
        put_gauge(b, "process_resident_memory_bytes", "Resident memory size in bytes.",
                  (long long)ps.rss_pages * (page > 0 ? page : 4096));
        put_gauge(b, "process_virtual_memory_bytes", "Virtual memory size in bytes.",
                  (long long)ps.vsize);
        double started = start_time(&ps);
        if (started > 0)
            put(b, "# HELP process_start_time_seconds Start time of the process since unix "
                   "epoch in seconds.\n"
                   "# TYPE process_start_time_seconds gauge\n"
                   "process_start_time_seconds %.2f\n",
                started);
    }
    long fds = open_fds();
    if (fds >= 0) put_gauge(b, "process_open_fds", "Number of open file descriptors.", fds);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        put_gauge(b, "process_max_fds", "Maximum number of open file descriptors.",
                  (long long)rl.rlim_cur);
}

char *hf_metrics_render(void) {
    struct buf b = {.data = malloc(16384), .cap = 16384};
    if (!b.data) return NULL;
    b.data[0] = '\0';
    size_t n_ops = m.ops ? m.ops->n : 0;
    const struct hf_op_def *ops = m.ops ? m.ops->ops : NULL;
    put(&b, "# HELP holdfast_requests_total Requests answered, by operation and result.\n"
            "# TYPE holdfast_requests_total counter\n");
    for (size_t op = 0; op < n_ops; op++)
        for (int c = 1; c < N_CODES; c++)
            if (m.requests[op][c] ||
                ((ops[op].flags & HF_OP_RESOURCE) && (ops[op].codes & (1u << c))))
                put(&b, "holdfast_requests_total{op=\"%s\",result=\"%s\"} %llu\n",
                    ops[op].name, hf_code_name((hf_code)c),
                    (unsigned long long)m.requests[op][c]);
    put(&b, "# HELP holdfast_degraded_requests_total Requests answered degraded (best_effort, Redis down).\n"
            "# TYPE holdfast_degraded_requests_total counter\n");
    for (size_t op = 0; op < n_ops; op++)
        if (ops[op].flags & HF_OP_DEGRADABLE)
            put(&b, "holdfast_degraded_requests_total{op=\"%s\"} %llu\n", ops[op].name,
                (unsigned long long)m.degraded[op]);
    put(&b, "# HELP holdfast_request_duration_seconds Time from reading a request to answering it.\n"
            "# TYPE holdfast_request_duration_seconds histogram\n");
    for (size_t op = 0; op < n_ops; op++) {
        if (!m.latency_count[op] && !(ops[op].flags & HF_OP_RESOURCE)) continue;
        const char *name = ops[op].name;
        for (int bk = 0; bk < N_BUCKETS; bk++)
            put(&b, "holdfast_request_duration_seconds_bucket{op=\"%s\",le=\"%g\"} %llu\n", name,
                (double)bucket_us[bk] / 1e6, (unsigned long long)m.latency_buckets[op][bk]);
        put(&b, "holdfast_request_duration_seconds_bucket{op=\"%s\",le=\"+Inf\"} %llu\n", name,
            (unsigned long long)m.latency_count[op]);
        put(&b, "holdfast_request_duration_seconds_sum{op=\"%s\"} %.6f\n", name,
            (double)m.latency_sum_us[op] / 1e6);
        put(&b, "holdfast_request_duration_seconds_count{op=\"%s\"} %llu\n", name,
            (unsigned long long)m.latency_count[op]);
    }
    for (int c = 0; c < HF_C__COUNT; c++) {
        /* A labelled series without help text continues the family above. */
        const char *name = counter_info[c].name;
        int family = (int)strcspn(name, "{");
        if (counter_info[c].help)
            put(&b, "# HELP %.*s %s\n# TYPE %.*s counter\n", family, name, counter_info[c].help,
                family, name);
        put(&b, "%s %llu\n", name, (unsigned long long)m.counters[c]);
    }
    for (int g = 0; g < HF_G__COUNT; g++)
        put(&b, "# HELP %s %s\n# TYPE %s gauge\n%s %lld\n", gauge_info[g].name,
            gauge_info[g].help, gauge_info[g].name, gauge_info[g].name, (long long)m.gauges[g]);
    put(&b, "# HELP holdfast_script_path_info Active Redis call path (1 = in use).\n"
            "# TYPE holdfast_script_path_info gauge\n");
    static const char *const script_paths[] = {"fcall", "evalsha", "eval"};
    for (int i = 0; i < 3; i++)
        put(&b, "holdfast_script_path_info{path=\"%s\"} %d\n", script_paths[i],
            strcmp(m.script_path, script_paths[i]) == 0);
    put(&b, "# HELP holdfast_release_path_info Active release path (1 = in use).\n"
            "# TYPE holdfast_release_path_info gauge\n");
    static const char *const release_paths[] = {"script", "delex", "delifeq"};
    for (int i = 0; i < 3; i++)
        put(&b, "holdfast_release_path_info{path=\"%s\"} %d\n", release_paths[i],
            strcmp(m.release_path, release_paths[i]) == 0);
    put(&b, "# HELP holdfast_build_info The daemon's version and its Redis library (always 1).\n"
            "# TYPE holdfast_build_info gauge\n"
            "holdfast_build_info{version=\"%s\",library=\"%s\"} 1\n",
        m.version, m.library);
    put_process(&b);
    if (b.oom) {
        free(b.data);
        return NULL;
    }
    return b.data;
}
