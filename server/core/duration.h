/* Durations as operators write them, in one grammar for the config file and every
 * command-line option: Go's duration syntax without a sign. A duration is "0", or one
 * or more <decimal number><unit> terms whose sum it is: "45s", "10m", "1h30m", "1.5h",
 * "250ms". The number is digits with an optional fraction (".5s" and "1.s" are allowed,
 * as in Go); no sign, exponent, space or other suffix. Units: ns, us (also written µs
 * or μs), ms, s, m, h. */
#ifndef FRUGAL_DURATION_H
#define FRUGAL_DURATION_H

#include <stddef.h>
#include <stdint.h>

#include "errors.h"

#define DURATION_NS_PER_SEC 1000000000LL

/* Parse s into nanoseconds (a fraction finer than a nanosecond is dropped); a leading
 * "+" is taken, as Go does (a "-" is for the caller to refuse or take).
 * 0, or FRUGAL_EINVAL when s is not a duration or exceeds INT64_MAX ns; *ns is only
 * set on success. err gets "invalid duration \"S\"". */
int duration_parse(const char *s, int64_t *ns, frugal_err_t *err);

/* ns rendered into buf (always NUL-terminated) like Go does from a second up:
 * "1h0m0s", "15m0s", "1.5s", "0s"; shorter ones as fractional seconds ("0.25s"); a
 * leading '-' when negative. Returns buf. */
const char *duration_format(int64_t ns, char *buf, size_t size);

/* ms in its largest whole unit, as an operator writes it: "2h", "90m", "30s", "250ms".
 * Returns buf. */
const char *duration_format_short_ms(int64_t ms, char *buf, size_t size);

#endif
