/* libFuzzer target: configuration text through the Lua sandbox and the
 * validators. The sandbox's instruction budget and memory cap keep every
 * input bounded. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 16384) return 0;
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char err[1024];
    struct hf_config *cfg = hf_config_load_string("fuzz.lua", text, err, sizeof err);
    hf_config_unref(cfg);
    free(text);
    return 0;
}
