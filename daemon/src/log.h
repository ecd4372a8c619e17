/* log.h - level-checked logging to stderr (journald adds its own metadata). */
#ifndef HF_LOG_H
#define HF_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum hf_log_level { HF_LOG_DEBUG, HF_LOG_INFO, HF_LOG_WARN, HF_LOG_ERROR };

void hf_log_set_level(enum hf_log_level level);
bool hf_log_enabled(enum hf_log_level level);
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
