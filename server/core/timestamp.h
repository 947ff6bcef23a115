/* Points in time as operators write them: RFC 3339 (2026-11-25T12:00:00Z, with an
 * optional fraction of a second and a "Z" or "+HH:MM" offset) or unix seconds (with an
 * optional fraction: 1767225600.5). */
#ifndef FRUGAL_TIMESTAMP_H
#define FRUGAL_TIMESTAMP_H

#include <stdbool.h>
#include <stdint.h>

/* Parse s into *unix_seconds (the fraction dropped); false when s is neither form, is
 * not after the epoch or is after the year 9999. A leap second (:60) is refused, as
 * Kubernetes (Go) refuses it. */
bool timestamp_parse(const char *s, int64_t *unix_seconds);

/* The same, RFC 3339 only (Kubernetes' own times). */
bool timestamp_parse_rfc3339(const char *s, int64_t *unix_seconds);

#endif
