/* log.c - one line per event: UTC time, level, message; under journald the
 * line starts with its syslog priority ("<4>"), which journald turns into
 * the entry's PRIORITY.
 *
 * Lines are gathered in a buffer and written to stderr with one write(2) per
 * loop iteration (main.c calls hf_log_flush from a prepare handle, just
 * before the loop waits for I/O), so a busy daemon does not pay a system call
 * per request. Warnings and errors, and a buffer past its high-water mark,
 * are written at once. */
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#define LOG_BUFFER (64 * 1024)
#define LOG_LINE_MAX 8192
#define LOG_HIGH_WATER (LOG_BUFFER - LOG_LINE_MAX)

static enum hf_log_level current_level = HF_LOG_INFO;
static const char *const level_names[] = {"debug", "info", "warn", "error"};
static const char *const level_priorities[] = {SD_DEBUG, SD_INFO, SD_WARNING, SD_ERR};
static bool journal;

static char buffer[LOG_BUFFER];
static size_t buffered;
static time_t stamp_second = -1;
static char stamp[32]; /* "YYYY-MM-DDTHH:MM:SS" of stamp_second */

void hf_log_set_level(enum hf_log_level level) { current_level = level; }

bool hf_log_enabled(enum hf_log_level level) { return level >= current_level; }

bool hf_log_stderr_is_journal(void) {
    const char *e = getenv("JOURNAL_STREAM");
    uintmax_t dev, ino;
    char tail;
    if (!e || sscanf(e, "%ju:%ju%c", &dev, &ino, &tail) != 2) return false;
    struct stat st;
    if (fstat(STDERR_FILENO, &st) != 0) return false;
    return (uintmax_t)st.st_dev == dev && (uintmax_t)st.st_ino == ino;
}

void hf_log_set_journal(bool on) { journal = on; }

const char *hf_log_priority(enum hf_log_level level) {
    return journal ? level_priorities[level] : "";
}

int hf_log_parse_level(const char *name, enum hf_log_level *out) {
    for (int i = 0; i <= HF_LOG_ERROR; i++) {
        if (strcmp(name, level_names[i]) == 0) {
            *out = (enum hf_log_level)i;
            return 0;
        }
    }
    return -1;
}

void hf_log_flush(void) {
    size_t off = 0;
    while (off < buffered) {
        ssize_t n = write(STDERR_FILENO, buffer + off, buffered - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; /* nowhere to log to: drop rather than block */
        off += (size_t)n;
    }
    buffered = 0;
}

/* ["<N>"]"YYYY-MM-DDTHH:MM:SS.mmmZ level " at `out`; returns its length. */
static size_t format_prefix(char *out, enum hf_log_level level) {
    size_t n = 0;
    if (journal) {
        memcpy(out, level_priorities[level], 3); /* "<N>" */
        n = 3;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (ts.tv_sec != stamp_second) {
        struct tm tm;
        gmtime_r(&ts.tv_sec, &tm);
        strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
        stamp_second = ts.tv_sec;
    }
    size_t sl = strlen(stamp);
    memcpy(out + n, stamp, sl);
    n += sl;
    long ms = ts.tv_nsec / 1000000;
    out[n++] = '.';
    out[n++] = (char)('0' + ms / 100);
    out[n++] = (char)('0' + ms / 10 % 10);
    out[n++] = (char)('0' + ms % 10);
    out[n++] = 'Z';
    out[n++] = ' ';
    const char *name = level_names[level];
    size_t nl = strlen(name);
    memcpy(out + n, name, nl);
    n += nl;
    while (nl++ < 5) out[n++] = ' '; /* pad the level to 5 columns */
    out[n++] = ' ';
    return n;
}

static void finish_line(enum hf_log_level level, size_t len) {
    buffer[buffered + len++] = '\n';
    buffered += len;
    if (level >= HF_LOG_WARN || buffered > LOG_HIGH_WATER) hf_log_flush();
}

void hf_log_line(enum hf_log_level level, const char *text, size_t len) {
    if (!hf_log_enabled(level)) return;
    char *line = buffer + buffered;
    size_t n = format_prefix(line, level);
    if (len > LOG_LINE_MAX - n - 1) len = LOG_LINE_MAX - n - 1;
    memcpy(line + n, text, len);
    finish_line(level, n + len);
}

void hf_log(enum hf_log_level level, const char *fmt, ...) {
    if (!hf_log_enabled(level)) return;
    char *line = buffer + buffered;
    size_t len = format_prefix(line, level);
    size_t room = LOG_LINE_MAX - len - 1; /* the newline's byte stays free */
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(line + len, room, fmt, ap);
    va_end(ap);
    /* Truncated: vsnprintf wrote room - 1 characters and a NUL, which must
     * not reach the log. Still one line. */
    if (w > 0) len += (size_t)w < room ? (size_t)w : room - 1;
    finish_line(level, len);
}
