/* UTF-8 text: what the state file, CA's strings (protobuf string fields) and the log
 * accept. */
#ifndef FRUGAL_UTF8_H
#define FRUGAL_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* The length of the well-formed UTF-8 sequence at s (no overlong forms, surrogates or
 * code points past U+10FFFF), at most n bytes read; 0 when there is none. */
size_t utf8_sequence(const unsigned char *s, size_t n);

/* Whether the NUL-terminated s is well-formed UTF-8. */
bool utf8_valid(const char *s);

/* Make s well-formed UTF-8 text in place: each byte that starts no well-formed sequence,
 * and each control character but tab, becomes '?'. For text frugal did not write (a
 * hook's message), so that it can be stored and sent. */
void utf8_scrub(char *s);

#endif
