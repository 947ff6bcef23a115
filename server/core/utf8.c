/* UTF-8 text: see utf8.h. */
#include "utf8.h"

#include <stdint.h>
#include <string.h>

size_t utf8_sequence(const unsigned char *s, size_t n) {
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
    return more + 1;
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
        size_t k = utf8_sequence(p, n);
        if (k == 0 || (k == 1 && ((*p < 0x20 && *p != '\t') || *p == 0x7f))) {
            *p = '?';
            k = 1;
        }
        p += k;
        n -= k;
    }
}
