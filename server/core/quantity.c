/* Kubernetes resource quantities with exact arithmetic.
 *
 * A quantity is read as a digit string, a decimal exponent (fraction digits, decimal
 * suffix or e<int>, and the caller's scale) and a binary exponent (Ki..Ei). The integer
 * part is accumulated in 128 bits; the fraction is kept as decimal digits and doubled
 * once per binary exponent bit, so "0.1" x 1000 is exactly 100 and "0.5Ki" is exactly
 * 512. Anything left over in the fraction rounds the result up. */
#include "quantity.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Fraction digits kept; must be >= the largest binary exponent (60) for the result to
 * be exact (digits past it can only make the result inexact, never change its floor). */
#define QUANTITY_FRAC_DIGITS 64
/* |exponent| beyond this is far outside int64 either way. */
#define QUANTITY_EXP_CLAMP 100000

typedef struct quantity_parts {
    bool negative;
    const char *digits; /* s[int_start..int_end) and s[frac_start..frac_end) */
    size_t int_start, int_end;
    size_t frac_start, frac_end;
    int64_t exp10; /* decimal exponent from suffix or e<int> */
    int binary;    /* power of two from Ki..Ei */
} quantity_parts_t;

static bool quantity__is_digit(char c) {
    return c >= '0' && c <= '9';
}

/* Split s[0..len) into number and suffix per the Kubernetes grammar. */
static int quantity__split(const char *s, size_t len, quantity_parts_t *q, frugal_err_t *err) {
    size_t i = 0;

    memset(q, 0, sizeof(*q));
    q->digits = s;
    if (len == 0)
        return frugal_err_set(err, FRUGAL_EINVAL, "empty quantity");
    if (s[i] == '+' || s[i] == '-') {
        q->negative = s[i] == '-';
        i++;
    }
    q->int_start = i;
    while (i < len && quantity__is_digit(s[i]))
        i++;
    q->int_end = i;
    q->frac_start = q->frac_end = i;
    if (i < len && s[i] == '.') {
        i++;
        q->frac_start = i;
        while (i < len && quantity__is_digit(s[i]))
            i++;
        q->frac_end = i;
    }
    if (q->int_end == q->int_start && q->frac_end == q->frac_start)
        return frugal_err_set(err, FRUGAL_EINVAL, "quantity \"%.*s\" has no number", (int)len, s);

    const char *suf = s + i;
    size_t sl = len - i;
    static const struct {
        const char *name;
        int exp10;
        int binary;
    } suffixes[] = {
        {"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50},
        {"Ei", 0, 60}, {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"k", 3, 0},
        {"M", 6, 0},   {"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},
    };
    if (sl == 0)
        return 0;
    for (size_t k = 0; k < sizeof(suffixes) / sizeof(suffixes[0]); k++) {
        if (strlen(suffixes[k].name) == sl && memcmp(suffixes[k].name, suf, sl) == 0) {
            q->exp10 = suffixes[k].exp10;
            q->binary = suffixes[k].binary;
            return 0;
        }
    }
    if (suf[0] == 'e' || suf[0] == 'E') {
        size_t j = 1;
        bool neg = false;
        int64_t e = 0;
        if (j < sl && (suf[j] == '+' || suf[j] == '-')) {
            neg = suf[j] == '-';
            j++;
        }
        if (j == sl)
            goto bad_suffix;
        for (; j < sl; j++) {
            if (!quantity__is_digit(suf[j]))
                goto bad_suffix;
            if (e < QUANTITY_EXP_CLAMP)
                e = e * 10 + (suf[j] - '0');
        }
        q->exp10 = neg ? -e : e;
        return 0;
    }
bad_suffix:
    return frugal_err_set(err, FRUGAL_EINVAL, "quantity \"%.*s\" has an invalid suffix \"%.*s\"",
                          (int)len, s, (int)sl, suf);
}

/* Digit number k of the number's digit sequence (integer digits then fraction digits). */
static int quantity__digit_at(const quantity_parts_t *q, size_t k) {
    size_t ni = q->int_end - q->int_start;
    if (k < ni)
        return q->digits[q->int_start + k] - '0';
    return q->digits[q->frac_start + (k - ni)] - '0';
}

int quantity_parse_scaled(const char *s, size_t len, int scale_exp, int64_t *out,
                          frugal_err_t *err) {
    quantity_parts_t q;
    int rc;

    if (s == NULL)
        return frugal_err_set(err, FRUGAL_EINVAL, "missing quantity");
    rc = quantity__split(s, len, &q, err);
    if (rc != 0)
        return rc;

    /* value = 0.g[first..n) x 10^point x 2^binary, g the digit sequence. */
    size_t n = (q.int_end - q.int_start) + (q.frac_end - q.frac_start);
    size_t first = 0;
    while (first < n && quantity__digit_at(&q, first) == 0)
        first++;
    if (first == n) {
        *out = 0;
        return 0;
    }
    int64_t point = (int64_t)(q.int_end - q.int_start) - (int64_t)first + q.exp10 + scale_exp;
    /* A leading non-zero digit at 10^(point-1) >= 10^19 exceeds int64 before any Ki. */
    if (point > 19)
        goto overflow;

    /* Integer part: the first `point` significant digits (zeros past the end). */
    unsigned __int128 ipart = 0;
    for (int64_t k = 0; k < point; k++) {
        size_t idx = first + (size_t)k;
        ipart = ipart * 10 + (unsigned)(idx < n ? quantity__digit_at(&q, idx) : 0);
    }

    /* Fraction part: -point zeros when point < 0, then the remaining digits. */
    unsigned char frac[QUANTITY_FRAC_DIGITS];
    size_t nfrac = 0;
    bool sticky = false;
    int64_t lead_zeros = point < 0 ? -point : 0;
    size_t next = first + (size_t)(point > 0 ? point : 0);
    for (int64_t k = 0; k < lead_zeros && nfrac < QUANTITY_FRAC_DIGITS; k++)
        frac[nfrac++] = 0;
    for (; next < n; next++) {
        int d = quantity__digit_at(&q, next);
        if (nfrac < QUANTITY_FRAC_DIGITS)
            frac[nfrac++] = (unsigned char)d;
        else if (d != 0)
            sticky = true;
    }

    /* Multiply by 2^binary: shift the integer, double the fraction bit by bit. */
    ipart <<= q.binary;
    unsigned __int128 carried = 0;
    for (int b = 0; b < q.binary; b++) {
        int carry = 0;
        for (size_t k = nfrac; k-- > 0;) {
            int v = frac[k] * 2 + carry;
            frac[k] = (unsigned char)(v % 10);
            carry = v / 10;
        }
        carried = carried * 2 + (unsigned)carry;
    }
    ipart += carried;
    for (size_t k = 0; k < nfrac && !sticky; k++)
        if (frac[k] != 0)
            sticky = true;

    if (q.negative) {
        /* Rounding up moves a negative value towards zero: drop the fraction. */
        if (ipart > (unsigned __int128)INT64_MAX + 1)
            goto overflow;
        *out = ipart == (unsigned __int128)INT64_MAX + 1 ? INT64_MIN : -(int64_t)ipart;
    } else {
        if (sticky)
            ipart += 1;
        if (ipart > (unsigned __int128)INT64_MAX)
            goto overflow;
        *out = (int64_t)ipart;
    }
    return 0;

overflow:
    return frugal_err_set(err, FRUGAL_EINVAL, "quantity \"%.*s\" is out of range", (int)len, s);
}

int quantity_parse_milli(const char *s, int64_t *out, frugal_err_t *err) {
    if (s == NULL)
        return frugal_err_set(err, FRUGAL_EINVAL, "missing quantity");
    return quantity_parse_scaled(s, strlen(s), 3, out, err);
}

int quantity_parse_value(const char *s, int64_t *out, frugal_err_t *err) {
    if (s == NULL)
        return frugal_err_set(err, FRUGAL_EINVAL, "missing quantity");
    return quantity_parse_scaled(s, strlen(s), 0, out, err);
}

char *quantity_format_bytes(int64_t bytes, char *buf, size_t size) {
    static const char *const suffixes[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    int64_t v = bytes;
    int k = 0;

    /* Largest binary suffix that divides exactly, as Kubernetes prints BinarySI. */
    while (v != 0 && k < 6 && v % 1024 == 0) {
        v /= 1024;
        k++;
    }
    snprintf(buf, size, "%" PRId64 "%s", v, suffixes[k]);
    return buf;
}

char *quantity_format_milli(int64_t milli, char *buf, size_t size) {
    if (milli % 1000 == 0)
        snprintf(buf, size, "%" PRId64, milli / 1000);
    else
        snprintf(buf, size, "%" PRId64 "m", milli);
    return buf;
}

const char *quantity_format_bytes_limit(int64_t bytes, char *buf, size_t size) {
    if (bytes == INT64_MAX) {
        snprintf(buf, size, "unlimited");
        return buf;
    }
    return quantity_format_bytes(bytes, buf, size);
}

const char *quantity_format_milli_limit(int64_t milli, char *buf, size_t size) {
    if (milli == INT64_MAX) {
        snprintf(buf, size, "unlimited");
        return buf;
    }
    return quantity_format_milli(milli, buf, size);
}
