/* The one-screen summary `frugal check` prints of a valid configuration. */
#ifndef FRUGAL_CONFIG_SUMMARY_H
#define FRUGAL_CONFIG_SUMMARY_H

#include <stdio.h>

#include "config.h"

/* Print cfg's one-screen summary (listeners, state, provider, groups, limits) to f. */
void config_summary_print(const frugal_config_t *cfg, FILE *f);

#endif
