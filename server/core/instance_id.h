/* frugal's own instance ids, frugal://GROUP/NAME: what the simulated provider gives its
 * instances and a hook's placeholder before it reports a machine. The one parser of
 * that form. */
#ifndef FRUGAL_INSTANCE_ID_H
#define FRUGAL_INSTANCE_ID_H

#include <stddef.h>

#define INSTANCE_ID_SCHEME "frugal://"

/* The GROUP of an id of that form: *len bytes at the returned pointer (into id); NULL
 * when id is not of that form (another scheme, no '/' after the group). */
const char *instance_id_group(const char *id, size_t *len);

#endif
