/* A growable NUL-terminated string: the one buffer frugal builds text in (the state
 * file, the metrics page, the config's error list, similarity keys). Appends never fail
 * loudly: the first allocation that fails marks the buffer failed and every later
 * append is dropped, so a caller checks once, at the end. */
#ifndef FRUGAL_STRBUF_H
#define FRUGAL_STRBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Zero-initialise ({0}): empty, data NULL until the first append. */
typedef struct strbuf {
    char *data; /* NUL-terminated once anything was appended */
    size_t len;
    size_t cap;
    bool failed; /* an allocation failed: what followed was dropped */
} strbuf_t;

/* Append the n bytes at s. */
void strbuf_append(strbuf_t *b, const char *s, size_t n);

/* Append the string s. */
void strbuf_puts(strbuf_t *b, const char *s);

/* Append fmt formatted, whatever its length. */
void strbuf_printf(strbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_vprintf(strbuf_t *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* Append what f holds, to its end: 0; EFBIG when it holds more than max bytes (what was
 * read stays in b); ENOMEM; or the read error's errno (EISDIR for a directory). The one
 * reader of whole files (configs, states, PEM files, traces). */
int strbuf_read_stream(strbuf_t *b, FILE *f, size_t max);

/* Hand over the string (NULL when nothing was appended or an allocation failed) and
 * empty b. */
char *strbuf_take(strbuf_t *b);

/* Free what b holds and empty it. */
void strbuf_free(strbuf_t *b);

#endif
