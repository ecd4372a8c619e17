/* Unit tests for scripts.c: the embedded library is the shipped file, and
 * its version and function names agree with the daemon's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "redis_front.h"

static void embedded_library_is_the_shipped_file(void **state) {
    (void)state;
    FILE *f = fopen(LIBRARY_FILE, "rb");
    assert_non_null(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    size_t len;
    const char *lib = hf_front_library_text(&len);
    assert_int_equal(len, n);
    assert_memory_equal(lib, buf, n);
}

static void version_and_names_agree(void **state) {
    (void)state;
    const char *lib = hf_front_library_text(NULL);
    char shebang[64];
    snprintf(shebang, sizeof shebang, "#!lua name=%s\n", HF_LIBRARY_NAME);
    assert_true(strncmp(lib, shebang, strlen(shebang)) == 0);
    for (int fn = 0; fn < HF_FN__COUNT; fn++) {
        char reg[160], local[96];
        snprintf(reg, sizeof reg, "function_name = '%s', callback = %s",
                 hf_front_function_name(fn), hf_front_local_name(fn));
        assert_non_null(strstr(lib, reg));
        /* batch() passes a third argument to the calls it runs */
        snprintf(local, sizeof local, "local function %s(keys, args", hf_front_local_name(fn));
        assert_non_null(strstr(lib, local));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(embedded_library_is_the_shipped_file),
        cmocka_unit_test(version_and_names_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
