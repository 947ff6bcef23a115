/* See timestamp.h. */
#include "timestamp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

bool timestamp_parse(const char *s, int64_t *unix_seconds) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*s != '\0' && *end == '\0' && errno == 0 && v > 0) {
        *unix_seconds = v;
        return true;
    }
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    int used = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec, &used) != 6 ||
        used != 19)
        return false;
    tm.tm_year -= 1900, tm.tm_mon -= 1;
    const char *rest = s + used;
    if (*rest == '.') /* fractions of a second */
        for (rest++; *rest >= '0' && *rest <= '9'; rest++)
            ;
    int64_t offset = 0;
    if (*rest == 'Z' || *rest == 'z') {
        rest++;
    } else if ((*rest == '+' || *rest == '-') && strlen(rest) == 6 && rest[3] == ':') {
        int hh = atoi(rest + 1), mm = atoi(rest + 4);
        offset = (rest[0] == '-' ? -1 : 1) * (hh * 3600 + mm * 60);
        rest += 6;
    } else {
        return false;
    }
    if (*rest != '\0')
        return false;
    int64_t t = (int64_t)timegm(&tm) - offset;
    if (t <= 0)
        return false;
    *unix_seconds = t;
    return true;
}
