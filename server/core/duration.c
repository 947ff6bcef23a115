/* Durations: see duration.h. Integer arithmetic, so "1h30m" is exact. */
#include "duration.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct duration_unit {
    const char *name;
    uint64_t ns;
} duration_unit_t;

/* Longest names first, so "ms" wins over "m". */
static const duration_unit_t duration_units[] = {
    {"ns", 1ULL},           {"us", 1000ULL},      {"\xc2\xb5s", 1000ULL}, /* U+00B5 MICRO SIGN */
    {"\xce\xbcs", 1000ULL}, /* U+03BC GREEK SMALL LETTER MU */
    {"ms", 1000000ULL},     {"s", 1000000000ULL}, {"m", 60000000000ULL},  {"h", 3600000000000ULL},
};

/* The unit at *p (advanced past it), or NULL. */
static const duration_unit_t *duration__unit(const char **p) {
    const duration_unit_t *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < sizeof(duration_units) / sizeof(duration_units[0]); i++) {
        size_t n = strlen(duration_units[i].name);
        if (n > best_len && strncmp(*p, duration_units[i].name, n) == 0) {
            best = &duration_units[i];
            best_len = n;
        }
    }
    *p += best_len;
    return best;
}

/* One "<number><unit>" term at *p into *term (ns); false when malformed or too large. */
static bool duration__term(const char **p, uint64_t *term) {
    const char *s = *p;
    uint64_t whole = 0;
    bool digits = false, overflow = false;
    for (; *s >= '0' && *s <= '9'; s++, digits = true) {
        if (whole > (UINT64_MAX - 9) / 10)
            overflow = true;
        else
            whole = whole * 10 + (uint64_t)(*s - '0');
    }
    /* The fraction: 18 digits are kept (below a nanosecond even of an hour); further
     * digits are read and dropped. */
    uint64_t frac = 0, scale = 1;
    if (*s == '.') {
        for (s++; *s >= '0' && *s <= '9'; s++, digits = true) {
            if (scale <= UINT64_MAX / 10 / 10) {
                frac = frac * 10 + (uint64_t)(*s - '0');
                scale *= 10;
            }
        }
    }
    if (!digits || overflow)
        return false;
    const duration_unit_t *u = duration__unit(&s);
    if (u == NULL || whole > (uint64_t)INT64_MAX / u->ns)
        return false;
    uint64_t ns = whole * u->ns;
    if (frac > 0) {
        /* frac / scale of a unit, truncated to whole nanoseconds. */
        long double part = (long double)frac * (long double)u->ns / (long double)scale;
        ns += (uint64_t)part;
    }
    if (ns > (uint64_t)INT64_MAX)
        return false;
    *term = ns;
    *p = s;
    return true;
}

int duration_parse(const char *s, int64_t *ns, frugal_err_t *err) {
    const char *p = s[0] == '+' ? s + 1 : s; /* Go takes a leading sign too */
    if (strcmp(p, "0") == 0) {
        *ns = 0;
        return 0;
    }
    uint64_t total = 0;
    do {
        uint64_t term;
        if (!duration__term(&p, &term) || term > (uint64_t)INT64_MAX - total)
            return frugal_err_set(err, FRUGAL_EINVAL, "invalid duration \"%s\"", s);
        total += term;
    } while (*p != '\0');
    *ns = (int64_t)total;
    return 0;
}

const char *duration_format(int64_t ns, char *buf, size_t size) {
    const char *sign = "";
    uint64_t u = (uint64_t)ns;
    if (ns < 0) {
        sign = "-";
        u = 0 - u;
    }
    uint64_t secs = u / DURATION_NS_PER_SEC, frac = u % DURATION_NS_PER_SEC;
    uint64_t h = secs / 3600, m = (secs % 3600) / 60, s = secs % 60;
    char sec[48];
    if (frac == 0) {
        snprintf(sec, sizeof(sec), "%llus", (unsigned long long)s);
    } else {
        snprintf(sec, sizeof(sec), "%llu.%09llu", (unsigned long long)s, (unsigned long long)frac);
        size_t n = strlen(sec);
        while (sec[n - 1] == '0')
            sec[--n] = '\0';
        sec[n] = 's';
        sec[n + 1] = '\0';
    }
    if (h > 0)
        snprintf(buf, size, "%s%lluh%llum%s", sign, (unsigned long long)h, (unsigned long long)m,
                 sec);
    else if (m > 0)
        snprintf(buf, size, "%s%llum%s", sign, (unsigned long long)m, sec);
    else
        snprintf(buf, size, "%s%s", sign, sec);
    return buf;
}

const char *duration_format_short_ms(int64_t ms, char *buf, size_t size) {
    if (ms % 3600000 == 0 && ms != 0)
        snprintf(buf, size, "%" PRId64 "h", ms / 3600000);
    else if (ms % 60000 == 0 && ms != 0)
        snprintf(buf, size, "%" PRId64 "m", ms / 60000);
    else if (ms % 1000 == 0)
        snprintf(buf, size, "%" PRId64 "s", ms / 1000);
    else
        snprintf(buf, size, "%" PRId64 "ms", ms);
    return buf;
}
