/* Shared by the state-file fuzz targets: format a parsed state (state_format) into
 * *out; 0 or a negative FRUGAL_E* code. */
#ifndef FRUGAL_FUZZ_STATE_UTIL_H
#define FRUGAL_FUZZ_STATE_UTIL_H

#include <stdlib.h>

#include "state.h"

static inline int fuzz_format_state(const state_t *st, char **out, size_t *len) {
    const group_t **ptrs = calloc(st->count > 0 ? st->count : 1, sizeof(*ptrs));
    if (ptrs == NULL)
        return -1;
    for (size_t i = 0; i < st->count; i++)
        ptrs[i] = &st->groups[i];
    frugal_err_t err;
    int rc = state_format(ptrs, st->count, out, len, &err);
    free(ptrs);
    return rc;
}

#endif
