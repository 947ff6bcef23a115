/* `frugal ctl`'s argument helpers (ctl.h): an option's value, numbers and durations, a
 * verb's entry and usage line, for ctl.c and any verb file; it calls none of them. */
#include "ctl.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"

/* The value of option argv[*i] ("--opt V"), advancing *i; NULL when missing. */
const char *ctl_optarg(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        fprintf(stderr, "frugal ctl: %s needs a value\n", argv[*i]);
        return NULL;
    }
    (*i)++;
    return argv[*i];
}

/* A decimal int32 as written (no blanks); says what is wrong with it otherwise. */
bool ctl_parse_int32(const char *s, int32_t *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (isspace((unsigned char)s[0]) || errno != 0 || end == s || *end != '\0' || v < INT32_MIN ||
        v > INT32_MAX) {
        fprintf(stderr, "frugal ctl: \"%s\" is not a whole number from %d to %d\n", s, INT32_MIN,
                INT32_MAX);
        return false;
    }
    *out = (int32_t)v;
    return true;
}

bool ctl_parse_double(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !isfinite(v)) {
        return false;
    }
    *out = v;
    return true;
}

/* A pricing period in hours: within 100 years either way (a negative one asks for the
 * server's INVALID_ARGUMENT), so that its end in nanoseconds cannot overflow. */
#define CTL_HOURS_MAX 876000.0
bool ctl_parse_hours(const char *s, double *out) {
    double v;
    if (!ctl_parse_double(s, &v) || fabs(v) > CTL_HOURS_MAX) {
        fprintf(stderr, "frugal ctl: --hours: \"%s\" is not a number of hours within +-%.0f\n", s,
                CTL_HOURS_MAX);
        return false;
    }
    *out = v;
    return true;
}

/* A duration option (duration.h's grammar) in nanoseconds. */
bool ctl_parse_duration(const char *s, int64_t *out) {
    return duration_parse(s, out, NULL) == 0;
}

/* The verb called name in verbs[0..count), or NULL. */
const ctl_verb_t *ctl_verb_find(const ctl_verb_t *verbs, size_t count, const char *name) {
    for (size_t i = 0; i < count; i++) {
        if (strcmp(verbs[i].name, name) == 0) {
            return &verbs[i];
        }
    }
    return NULL;
}

/* Print the usage of verb as verbs[0..count) has it; returns 2, the exit status of a usage
 * error. */
int ctl_usage_verb(const ctl_verb_t *verbs, size_t count, const char *verb) {
    const ctl_verb_t *v = ctl_verb_find(verbs, count, verb);
    fprintf(stderr, "usage: frugal ctl [OPTIONS] %s %s\n", verb, v != NULL ? v->usage : "...");
    return 2;
}
