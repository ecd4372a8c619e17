/* validate.c - character-class checks for identifiers that reach Redis keys,
 * SQL parameters and logs. */
#include "validate.h"

static bool name_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

bool hf_valid_name(const char *s, size_t len) {
    if (!s || len == 0 || len > HF_NAME_MAX) return false;
    for (size_t i = 0; i < len; i++)
        if (!name_char(s[i])) return false;
    return true;
}

bool hf_valid_ref_id(const char *s, size_t len) {
    if (!s || len == 0 || len > HF_NAME_MAX) return false;
    for (size_t i = 0; i < len; i++)
        if (!name_char(s[i]) && s[i] != ':') return false;
    return true;
}
