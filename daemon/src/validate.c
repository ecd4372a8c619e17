/* validate.c - character-class checks for identifiers that reach Redis keys,
 * SQL parameters and logs, and the UTF-8 check of free text. */
#include "validate.h"

#include <stdint.h>

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

bool hf_valid_utf8(const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        size_t len;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F;
        else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F;
        else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07;
        else return false;
        if (len > n - i) return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}
