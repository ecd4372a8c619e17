/* log.h - level-checked logging to stderr (journald adds its own metadata;
 * when stderr is the journal, each line starts with its syslog priority). */
#ifndef HF_LOG_H
#define HF_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum hf_log_level { HF_LOG_DEBUG, HF_LOG_INFO, HF_LOG_WARN, HF_LOG_ERROR };

void hf_log_set_level(enum hf_log_level level);
bool hf_log_enabled(enum hf_log_level level);
/* True when stderr is a journald stream: $JOURNAL_STREAM ("<dev>:<ino>",
 * set by systemd) names stderr's device and inode. A stderr redirected
 * elsewhere (a file, a pipe) keeps the variable but not the match. */
bool hf_log_stderr_is_journal(void);
/* Start every line with its priority, "<3>" error, "<4>" warning, "<6>" info,
 * "<7>" debug (sd-daemon.h's SD_ERR ...), which journald strips and records
 * as PRIORITY= (so `journalctl -p warning` works). Off by default. */
void hf_log_set_journal(bool on);
/* That prefix for `level` ("" while off), for the few lines written to
 * stderr without hf_log (main's configuration errors). */
const char *hf_log_priority(enum hf_log_level level);
/* "debug" | "info" | "warn" | "error" -> 0, else -1. */
int hf_log_parse_level(const char *name, enum hf_log_level *out);
/* A line whose text is already built (the per-request line: it avoids
 * printf on the hot path). */
void hf_log_line(enum hf_log_level level, const char *text, size_t len);
/* Write what is buffered (see log.c); call before the loop blocks and at exit. */
void hf_log_flush(void);
void hf_log(enum hf_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define log_debug(...) \
    do { if (hf_log_enabled(HF_LOG_DEBUG)) hf_log(HF_LOG_DEBUG, __VA_ARGS__); } while (0)
#define log_info(...) hf_log(HF_LOG_INFO, __VA_ARGS__)
#define log_warn(...) hf_log(HF_LOG_WARN, __VA_ARGS__)
#define log_error(...) hf_log(HF_LOG_ERROR, __VA_ARGS__)

#endif
