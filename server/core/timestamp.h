/* Points in time as operators write them: RFC 3339 (2026-11-25T12:00:00Z, with an
 * optional fraction of a second and a "Z" or "+HH:MM" offset) or unix seconds. */
#ifndef FRUGAL_TIMESTAMP_H
#define FRUGAL_TIMESTAMP_H

#include <stdbool.h>
#include <stdint.h>

/* Parse s into *unix_seconds (the fraction dropped); false when s is neither form or
 * is not after the epoch. */
bool timestamp_parse(const char *s, int64_t *unix_seconds);

#endif
