/* UTF-8 text: see utf8.h. */
#include "utf8.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp_out) {
    if (n == 0)
        return 0;
    unsigned c = s[0];
    size_t more = c < 0x80             ? 0
                  : (c & 0xE0) == 0xC0 ? 1
                  : (c & 0xF0) == 0xE0 ? 2
                  : (c & 0xF8) == 0xF0 ? 3
                                       : 9;
    if (more == 9 || more >= n)
        return 0;
    uint32_t cp = more == 0 ? c : c & (0x3Fu >> more);
    for (size_t i = 1; i <= more; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3Fu);
    }
    static const uint32_t min_cp[4] = {0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[more] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    *cp_out = cp;
    return more + 1;
}

size_t utf8_sequence(const unsigned char *s, size_t n) {
    uint32_t cp;
    return utf8_next(s, n, &cp);
}

utf8_class_t utf8_class(uint32_t cp) {
    if (cp == ' ' || (cp >= '\t' && cp <= '\r') || cp == 0xA0 || cp == 0x1680 ||
        (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
        cp == 0x205F || cp == 0x3000)
        return UTF8_SPACE;
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))
        return UTF8_CONTROL;
    if (cp == 0xAD || cp == 0x180E || (cp >= 0x200B && cp <= 0x200F) ||
        (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2060 && cp <= 0x2064) ||
        (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF)
        return UTF8_INVISIBLE;
    return UTF8_VISIBLE;
}

bool utf8_valid(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    while (n > 0) {
        size_t k = utf8_sequence(p, n);
        if (k == 0)
            return false;
        p += k;
        n -= k;
    }
    return true;
}

void utf8_scrub(char *s) {
    unsigned char *p = (unsigned char *)s;
    size_t n = strlen(s);
    while (n > 0) {
        uint32_t cp = 0;
        size_t k = utf8_next(p, n, &cp);
        if (k == 0 || utf8_class(cp) == UTF8_CONTROL || (cp < 0x20 && cp != '\t')) {
            size_t len = k > 0 ? k : 1;
            *p = '?';
            memmove(p + 1, p + len, n - len + 1); /* with the NUL */
            n -= len - 1;
            k = 1;
        }
        p += k;
        n -= k;
    }
}
