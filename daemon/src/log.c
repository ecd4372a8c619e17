/* log.c - one line per event: UTC time, level, message. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum hf_log_level current_level = HF_LOG_INFO;
static const char *const level_names[] = {"debug", "info", "warn", "error"};

void hf_log_set_level(enum hf_log_level level) { current_level = level; }

bool hf_log_enabled(enum hf_log_level level) { return level >= current_level; }

int hf_log_parse_level(const char *name, enum hf_log_level *out) {
    for (int i = 0; i <= HF_LOG_ERROR; i++) {
        if (strcmp(name, level_names[i]) == 0) {
            *out = (enum hf_log_level)i;
            return 0;
        }
    }
    return -1;
}

void hf_log(enum hf_log_level level, const char *fmt, ...) {
    if (!hf_log_enabled(level)) return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char line[8192];
    size_t n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(line + n, sizeof line - n, ".%03ldZ %-5s ",
                          ts.tv_nsec / 1000000, level_names[level]);
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    va_end(ap);
    if (w < 0) w = 0;
    n += (size_t)w;
    if (n > sizeof line - 2) n = sizeof line - 2; /* truncated, still one line */
    line[n++] = '\n';
    /* One write per line so concurrent writers never interleave mid-line. */
    fwrite(line, 1, n, stderr);
}
