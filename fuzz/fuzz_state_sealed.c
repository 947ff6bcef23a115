/* libFuzzer target: the state file's checksums. The input is a state file (either
 * version) followed by three bytes: a position (two bytes) and a value. Whatever
 * state_parse accepts is formatted (sealed, version 2), one byte of that text is
 * replaced, and the loader must then either refuse with a checksum mismatch or yield
 * the identical state: no single-byte corruption may load a different cluster. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "state.h"
#include "state_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3)
        return 0;
    size_t n = size - 3;
    size_t pos = (size_t)data[n] << 8 | data[n + 1];
    uint8_t value = data[n + 2];
    char *text = malloc(n > 0 ? n : 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, n);
    state_t st;
    frugal_err_t err;
    if (state_parse("fuzz.state", text, n, &st, &err) != 0) {
        free(text);
        return 0;
    }
    char *sealed = NULL;
    size_t len = 0;
    if (fuzz_format_state(&st, &sealed, &len) != 0)
        __builtin_trap();
    state_free(&st);
    pos %= len;
    if ((uint8_t)sealed[pos] != value) {
        char *bad = malloc(len);
        memcpy(bad, sealed, len);
        bad[pos] = (char)value;
        state_t st2;
        if (state_parse("fuzz.state.2", bad, len, &st2, &err) != 0) {
            if (strstr(err.msg, "checksum mismatch") == NULL)
                __builtin_trap(); /* refused, but not as a corruption */
        } else {
            char *again = NULL;
            size_t again_len = 0;
            if (fuzz_format_state(&st2, &again, &again_len) != 0)
                __builtin_trap();
            if (again_len != len || memcmp(again, sealed, len) != 0)
                __builtin_trap(); /* a corrupted file loaded another state */
            free(again);
            state_free(&st2);
        }
        free(bad);
    }
    free(sealed);
    free(text);
    return 0;
}
