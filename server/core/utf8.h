/* UTF-8 text: what the state file, CA's strings (protobuf string fields) and the log
 * accept. */
#ifndef FRUGAL_UTF8_H
#define FRUGAL_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The length of the well-formed UTF-8 sequence at s (no overlong forms, surrogates or
 * code points past U+10FFFF), at most n bytes read; 0 when there is none. */
size_t utf8_sequence(const unsigned char *s, size_t n);

/* utf8_sequence, with the code point it encodes in *cp (untouched when there is none). */
size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp);

/* What a reader sees of a code point. Ids must hold visible characters only: a space that
 * is not ASCII's makes one id read as two words, an invisible one makes two ids read
 * alike, a control character moves the terminal's cursor. */
typedef enum utf8_class {
    UTF8_VISIBLE,
    UTF8_SPACE,     /* ASCII whitespace, and U+00A0, U+1680, U+2000-U+200A, U+2028,
                     * U+2029, U+202F, U+205F, U+3000 */
    UTF8_CONTROL,   /* C0 controls but whitespace, DEL, C1 controls (U+0085 too) */
    UTF8_INVISIBLE, /* soft hyphen, zero-width characters, bidirectional marks and
                     * overrides, word joiners, the byte-order mark */
} utf8_class_t;

utf8_class_t utf8_class(uint32_t cp);

/* Whether the NUL-terminated s is well-formed UTF-8. */
bool utf8_valid(const char *s);

/* Make s well-formed UTF-8 text in place: each byte that starts no well-formed sequence,
 * and each control character (C0 but tab, DEL, C1), becomes one '?'. For text frugal did not write
 * (a hook's message), so that it can be stored and sent. */
void utf8_scrub(char *s);

#endif
