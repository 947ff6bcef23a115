/* libFuzzer target: the state-file parser. Whatever state_parse accepts must format
 * (state_format) into text that parses again and formats to the very same text, or a
 * restart would not resume where the last change left off. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "state.h"
#include "state_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size > 0 ? size : 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);

    state_t st;
    frugal_err_t err;
    int rc = state_parse("fuzz.state", text, size, &st, &err);
    if (rc != 0) {
        /* Failure leaves *out empty and names FILE:LINE. */
        if (st.groups != NULL || st.count != 0 || err.msg[0] == '\0')
            __builtin_trap();
        free(text);
        return 0;
    }

    char *f1 = NULL, *f2 = NULL;
    size_t l1 = 0, l2 = 0;
    if (fuzz_format_state(&st, &f1, &l1) != 0)
        __builtin_trap();
    state_t st2;
    if (state_parse("fuzz.state.2", f1, l1, &st2, &err) != 0)
        __builtin_trap(); /* our own output refused: err.msg says why */
    if (fuzz_format_state(&st2, &f2, &l2) != 0)
        __builtin_trap();
    if (l1 != l2 || memcmp(f1, f2, l1) != 0)
        __builtin_trap();
    state_free(&st2);
    state_free(&st);
    free(f1);
    free(f2);
    free(text);
    return 0;
}
