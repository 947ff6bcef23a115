/* See timestamp.h. */
#include "timestamp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* n decimal digits at s into *out; false when one is not a digit. */
static bool timestamp__digits(const char *s, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* 9999-12-31T23:59:59Z */
#define TIMESTAMP__MAX 253402300799LL

bool timestamp_parse(const char *s, int64_t *unix_seconds) {
    size_t len = strlen(s);
    size_t whole = strspn(s, "0123456789");
    /* Unix seconds, with a fraction as Prometheus writes them (1767225600.5), dropped. */
    if (whole > 0 && s[whole] == '.' && whole + 1 < len &&
        strspn(s + whole + 1, "0123456789") == len - whole - 1)
        len = whole;
    if (len > 0 && whole == len) {
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno != 0 || v <= 0 || v > TIMESTAMP__MAX)
            return false;
        *unix_seconds = v;
        return true;
    }
    return timestamp_parse_rfc3339(s, unix_seconds);
}

bool timestamp_parse_rfc3339(const char *s, int64_t *unix_seconds) {
    size_t len = strlen(s);
    /* YYYY-MM-DDTHH:MM:SS, then an optional fraction and Z or +HH:MM / -HH:MM. */
    int year, month, day, hour, minute, second;
    if (len < 20 || !timestamp__digits(s, 4, &year) || s[4] != '-' ||
        !timestamp__digits(s + 5, 2, &month) || s[7] != '-' || !timestamp__digits(s + 8, 2, &day) ||
        (s[10] != 'T' && s[10] != 't') || !timestamp__digits(s + 11, 2, &hour) || s[13] != ':' ||
        !timestamp__digits(s + 14, 2, &minute) || s[16] != ':' ||
        !timestamp__digits(s + 17, 2, &second))
        return false;
    if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 59)
        return false;
    const char *rest = s + 19;
    if (*rest == '.') { /* fractions of a second, dropped */
        if (rest[1] < '0' || rest[1] > '9')
            return false;
        for (rest++; *rest >= '0' && *rest <= '9'; rest++)
            ;
    }
    int64_t offset = 0;
    if (*rest == 'Z' || *rest == 'z') {
        rest++;
    } else if (*rest == '+' || *rest == '-') {
        int hh, mm;
        if (!timestamp__digits(rest + 1, 2, &hh) || rest[3] != ':' ||
            !timestamp__digits(rest + 4, 2, &mm) || hh > 23 || mm > 59)
            return false;
        offset = (rest[0] == '-' ? -1 : 1) * (hh * 3600 + mm * 60);
        rest += 6;
    } else {
        return false;
    }
    if (*rest != '\0')
        return false;
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = year - 1900;
    tm.tm_mon = month - 1;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_min = minute;
    tm.tm_sec = second;
    int64_t t = (int64_t)timegm(&tm);
    /* A day the month does not have (February 30) comes back normalised. */
    if (tm.tm_mday != day)
        return false;
    t -= offset;
    if (t <= 0 || t > TIMESTAMP__MAX)
        return false;
    *unix_seconds = t;
    return true;
}
