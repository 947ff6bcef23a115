/* Kubernetes resource quantities (docs/wire.md, "Quantities").
 *
 * Grammar: a signed decimal number ("1", "1.5", ".5", "-2"), then an optional suffix:
 * binary Ki Mi Gi Ti Pi Ei, decimal n u m k M G T P E, or an exponent e<int>/E<int>.
 * CPU is read in milli-cores and memory in bytes, both rounded up (towards +inf) as
 * Kubernetes does. Pure functions, no allocation, thread-safe. */
#ifndef FRUGAL_QUANTITY_H
#define FRUGAL_QUANTITY_H

#include <stddef.h>
#include <stdint.h>

#include "errors.h"

/* Resources of a pod or a node, in the units frugal computes with. */
typedef struct resources {
    int64_t cpu_milli;    /* milli-cores */
    int64_t memory_bytes; /* bytes */
    int64_t gpu;          /* whole GPUs (nvidia.com/gpu + amd.com/gpu) */
} resources_t;

/* Parse s[0..len) scaled by 10^scale_exp and rounded up to an integer:
 * scale_exp 0 yields the value itself (bytes, GPUs), 3 yields thousandths (milli-cores).
 * Returns 0, or FRUGAL_EINVAL with err naming the problem for text outside the grammar,
 * or FRUGAL_EINVAL for values that overflow int64. */
int quantity_parse_scaled(const char *s, size_t len, int scale_exp, int64_t *out,
                          frugal_err_t *err);

/* Milli-units of a NUL-terminated quantity: "500m" -> 500, "1.5" -> 1500, "2" -> 2000. */
int quantity_parse_milli(const char *s, int64_t *out, frugal_err_t *err);

/* Whole units of a NUL-terminated quantity, rounded up: "2Gi" -> 2147483648, "1.5" -> 2. */
int quantity_parse_value(const char *s, int64_t *out, frugal_err_t *err);

/* Format a byte count the way Kubernetes would print it when exact ("7680Mi", "2Gi",
 * "1536Ki", else plain bytes) into buf; returns buf. */
char *quantity_format_bytes(int64_t bytes, char *buf, size_t size);

/* Format milli-units ("500m", or "2" when a whole number) into buf; returns buf. */
char *quantity_format_milli(int64_t milli, char *buf, size_t size);

#endif
