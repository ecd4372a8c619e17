/* print_settings - writes the settings table (hf_config_settings_markdown)
 * to stdout, for tools/gen-settings-doc.sh. */
#include <stdio.h>
#include <stdlib.h>

#include "config.h"

int main(void) {
    char *table = hf_config_settings_markdown();
    if (!table) {
        fputs("print_settings: out of memory\n", stderr);
        return 1;
    }
    int rc = fputs(table, stdout) < 0 || fflush(stdout) != 0 ? 1 : 0;
    free(table);
    return rc;
}
