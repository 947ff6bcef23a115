/* libFuzzer target: quantity_parse_scaled on arbitrary bytes, at the two scales frugal
 * uses (0: bytes/GPUs, 3: milli-cores). Beyond memory safety it checks what the
 * contract promises: both scales agree (ceil(1000x) vs 1000*ceil(x)), and what
 * quantity_format_* prints parses back to the same value. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "quantity.h"

static void check_format_roundtrip(int64_t v, int milli) {
    char buf[64];
    int64_t back = 0;
    frugal_err_t err;
    if (milli)
        quantity_format_milli(v, buf, sizeof(buf));
    else
        quantity_format_bytes(v, buf, sizeof(buf));
    if (quantity_parse_scaled(buf, strlen(buf), milli ? 3 : 0, &back, &err) != 0 || back != v)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* An exact-size copy, not NUL-terminated: ASan flags any read past len. */
    char *s = malloc(size > 0 ? size : 1);
    if (s == NULL)
        return 0;
    memcpy(s, data, size);

    int64_t v0 = 0, v3 = 0;
    frugal_err_t e0, e3;
    int rc0 = quantity_parse_scaled(s, size, 0, &v0, &e0);
    int rc3 = quantity_parse_scaled(s, size, 3, &v3, &e3);
    if ((rc0 != 0 && rc0 != FRUGAL_EINVAL) || (rc3 != 0 && rc3 != FRUGAL_EINVAL))
        __builtin_trap();
    /* Every refusal names the problem. */
    if ((rc0 != 0 && e0.msg[0] == '\0') || (rc3 != 0 && e3.msg[0] == '\0'))
        __builtin_trap();
    /* Text outside the grammar is refused at every scale; a value valid in milli-units
     * is valid in whole units (its magnitude is 1000 times smaller). */
    if (rc3 == 0 && rc0 != 0)
        __builtin_trap();
    if (rc0 == 0 && rc3 == 0) {
        /* Rounding up: 1000*ceil(x) - 1000 < ceil(1000x) <= 1000*ceil(x). */
        __int128 scaled = (__int128)v0 * 1000;
        if (!((__int128)v3 <= scaled && scaled - 1000 < (__int128)v3))
            __builtin_trap();
    }
    if (rc0 == 0)
        check_format_roundtrip(v0, 0);
    if (rc3 == 0)
        check_format_roundtrip(v3, 1);
    free(s);
    return 0;
}
