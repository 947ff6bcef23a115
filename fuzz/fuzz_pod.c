/* libFuzzer target: pod_decode_request on arbitrary bytes (a v1.Pod as CA sends it in
 * BestOptions and PricingPodPrice). Decoding either succeeds with non-negative
 * resources or fails with FRUGAL_EINVAL and a message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "pod.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    resources_t r;
    frugal_err_t err;
    memset(&r, 0, sizeof(r));
    memset(&err, 0, sizeof(err));
    int rc = pod_decode_request(data, size, &r, &err);
    if (rc != 0 && (rc != FRUGAL_EINVAL || err.msg[0] == '\0'))
        __builtin_trap();
    return 0;
}
