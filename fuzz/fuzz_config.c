/* libFuzzer target: config_load_string on arbitrary YAML text. A config either loads
 * (and then the `frugal check` summary prints) or is refused with at least one
 * FILE:LINE:COL message; never both, never neither. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "config.h"
#include "config_summary.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static FILE *devnull;
    if (devnull == NULL)
        devnull = fopen("/dev/null", "w");

    char *text = malloc(size > 0 ? size : 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);

    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    int rc = config_load_string("fuzz.yaml", text, size, &cfg, &errors);
    if (rc == 0) {
        if (cfg == NULL)
            __builtin_trap();
        if (devnull != NULL)
            config_summary_print(cfg, devnull);
    } else {
        if (cfg != NULL || errors == NULL || errors[0] == '\0')
            __builtin_trap();
    }
    config_free(cfg);
    free(errors);
    free(text);
    return 0;
}
