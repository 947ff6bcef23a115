#include "strbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for n more bytes and the NUL; false (b failed) when it cannot be made. */
static bool strbuf__reserve(strbuf_t *b, size_t n) {
    if (b->failed)
        return false;
    if (b->len + n + 1 <= b->cap)
        return true;
    size_t cap = b->cap != 0 ? b->cap : 256;
    while (cap < b->len + n + 1)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (p == NULL) {
        b->failed = true;
        return false;
    }
    b->data = p;
    b->cap = cap;
    return true;
}

void strbuf_append(strbuf_t *b, const char *s, size_t n) {
    if (!strbuf__reserve(b, n))
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void strbuf_puts(strbuf_t *b, const char *s) {
    strbuf_append(b, s, strlen(s));
}

void strbuf_vprintf(strbuf_t *b, const char *fmt, va_list ap) {
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    if (n < 0)
        b->failed = true;
    else if (strbuf__reserve(b, (size_t)n)) {
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
        b->len += (size_t)n;
    }
    va_end(again);
}

void strbuf_printf(strbuf_t *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    strbuf_vprintf(b, fmt, ap);
    va_end(ap);
}

int strbuf_read_stream(strbuf_t *b, FILE *f, size_t max) {
    size_t start = b->len;
    errno = 0;
    for (;;) {
        /* Read in chunks of at least 4 KiB, the room doubling as the text grows. */
        if (b->cap - b->len < 4096 + 1 && !strbuf__reserve(b, b->cap > 65536 ? b->cap : 65536))
            return ENOMEM;
        size_t n = fread(b->data + b->len, 1, b->cap - b->len - 1, f);
        b->len += n;
        b->data[b->len] = '\0';
        if (b->len - start > max)
            return EFBIG;
        if (n == 0)
            break;
    }
    return ferror(f) ? (errno != 0 ? errno : EIO) : 0;
}

char *strbuf_take(strbuf_t *b) {
    char *s = b->failed ? NULL : b->data;
    if (b->failed)
        free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = false;
    return s;
}

void strbuf_free(strbuf_t *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = false;
}
