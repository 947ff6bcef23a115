/* The state codec: every node group's target size and instances (plus the full spec of
 * autoprovisioned groups) as text, so that a restart resumes exactly where the last
 * acknowledged change left off (docs/state-format.md). Pure: the file backend
 * (server/store/state_file.h) writes this text whole, the etcd backend one group per
 * key.
 *
 * Format (version 2): UTF-8/ASCII text, one record per line, '#' comment lines and
 * blank lines allowed. A record is a type word followed by space-separated key=value
 * fields; values are percent-encoded (every byte outside '!'..'~', and '%' itself,
 * becomes %XX), so no value contains a space or a newline. An absent optional string
 * (zone, error_code) is an omitted field; an empty string is "key=". Every record line
 * ends with " crc=XXXXXXXX", the CRC-32 of the line before it; the end record carries
 * "sum=XXXXXXXX", the CRC-32 of every byte of the file before the end line.
 *
 *   frugal-state version=2 crc=...
 *   group id=pool-a managed=1 autoprovisioned=0 exists=1 min=0 max=10 target=2
 *         next_seq=3 empty_since=0 machine_type=n1-standard-2 zone=us-central1-a
 *         spot=0 spot_price=-1 crc=...                  (one line)
 *   label key=team value=web crc=...                    (belongs to the group above)
 *   taint key=dedicated value=web effect=NoSchedule crc=...
 *   resource key=nvidia.com/gpu value=1 crc=...
 *   instance id=frugal://pool-a/pool-a-1 state=running since=1700000000000
 *            [error_code=... error_message=... error_class=1] crc=...
 *   end groups=1 instances=2 sum=... crc=...
 *
 * Version 1 is the same without crc and sum; it is still read (and written back as
 * version 2 by the next save). Parsing is strict: in a sealed file any seal that does
 * not match is "FILE:LINE: checksum mismatch" before anything else is looked at; then
 * an unknown record or field, a missing field, a bad number, a duplicate key or
 * instance id, an id that is not a DNS label, text that is not UTF-8, a provider id
 * frugal://G/... listed under another group than G, or a missing end record is an
 * error naming FILE:LINE. */
#ifndef FRUGAL_STATE_H
#define FRUGAL_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "group.h"
#include "errors.h"

#define STATE_FORMAT_VERSION 2

typedef struct state {
    group_t *groups; /* in file order; each owns its members */
    size_t count;
    int version; /* of the file parsed: 1 is migrated by the next save */
} state_t;

/* Serialise groups into a malloc'ed NUL-terminated text (*out, length *len). */
int state_format(const group_t *const *groups, size_t n, char **out, size_t *len,
                 frugal_err_t *err);

/* Parse text[0..len); name is used in messages ("name:line: reason"). On success *out
 * owns the groups (free with state_free); on failure returns FRUGAL_EINVAL (or
 * FRUGAL_ENOMEM) and *out is empty. */
int state_parse(const char *name, const char *text, size_t len, state_t *out, frugal_err_t *err);

void state_free(state_t *s);

/* CRC-32 (IEEE 802.3, as zlib's crc32) of data, continuing from crc (0 to start). */
uint32_t state_crc32(uint32_t crc, const void *data, size_t len);

#endif
