#include "log.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static log_level_t current_level = LOG_LEVEL_INFO;
static log_format_t current_format = LOG_FORMAT_TEXT;
static const char *const level_names[] = {"debug", "info", "warn", "error"};
static const char *const format_names[] = {"text", "json"};

/* A string field's value is cut at this many bytes, so the message keeps room. */
#define LOG_FIELD_MAX 512
#define LOG_LINE_MAX 8192

void log_set_level(log_level_t level) {
    current_level = level;
}

log_level_t log_get_level(void) {
    return current_level;
}

/* The index of name in names[0..n), or -1. */
static int log__lookup(const char *const *names, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

int log_parse_level(const char *name, log_level_t *out) {
    int i = log__lookup(level_names, LOG_LEVEL_ERROR + 1, name);
    if (i < 0)
        return -1;
    *out = (log_level_t)i;
    return 0;
}

void log_set_format(log_format_t format) {
    current_format = format;
}

log_format_t log_get_format(void) {
    return current_format;
}

int log_parse_format(const char *name, log_format_t *out) {
    int i = log__lookup(format_names, LOG_FORMAT_JSON + 1, name);
    if (i < 0)
        return -1;
    *out = (log_format_t)i;
    return 0;
}

int log_init_from_env(void) {
    const char *lv = getenv("FRUGAL_LOG_LEVEL");
    const char *fm = getenv("FRUGAL_LOG_FORMAT");
    log_level_t level = current_level;
    log_format_t format = current_format;
    if (lv != NULL && lv[0] != '\0' && log_parse_level(lv, &level) != 0) {
        fprintf(stderr, "frugal: FRUGAL_LOG_LEVEL=\"%s\" is not debug, info, warn or error\n", lv);
        return -1;
    }
    if (fm != NULL && fm[0] != '\0' && log_parse_format(fm, &format) != 0) {
        fprintf(stderr, "frugal: FRUGAL_LOG_FORMAT=\"%s\" is not text or json\n", fm);
        return -1;
    }
    current_level = level;
    current_format = format;
    return 0;
}

/* The JSON form of the character at p: its bytes into piece (at most 6), their count
 * returned, and the input bytes it took in *used. Invalid UTF-8 stands in as U+FFFD. */
static size_t log__json_piece(const unsigned char *p, char piece[8], size_t *used) {
    *used = 1;
    if (*p == '"' || *p == '\\') {
        piece[0] = '\\';
        piece[1] = (char)*p;
        return 2;
    }
    if (*p == '\n' || *p == '\r' || *p == '\t') {
        piece[0] = '\\';
        piece[1] = *p == '\n' ? 'n' : *p == '\r' ? 'r' : 't';
        return 2;
    }
    if (*p < 0x20 || *p == 0x7f)
        return (size_t)snprintf(piece, 8, "\\u%04x", *p);
    if (*p < 0x80) {
        piece[0] = (char)*p;
        return 1;
    }
    /* a whole UTF-8 sequence or nothing */
    size_t n = *p >= 0xf0 ? 4 : *p >= 0xe0 ? 3 : *p >= 0xc0 ? 2 : 1;
    size_t k = 1;
    while (k < n && (p[k] & 0xc0) == 0x80)
        k++;
    if (k < n || n == 1) {
        memcpy(piece, "\xef\xbf\xbd", 3);
        return 3;
    }
    memcpy(piece, p, n);
    *used = n;
    return n;
}

size_t log_json_escape(char *out, size_t size, const char *s) {
    size_t at = 0;
    if (size == 0)
        return 0;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        char piece[8];
        size_t used, n = log__json_piece(p, piece, &used);
        if (at + n >= size)
            break;
        memcpy(out + at, piece, n);
        at += n;
        p += used;
    }
    out[at] = '\0';
    return at;
}

void log_json_fputs(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        char piece[8];
        size_t used, n = log__json_piece(p, piece, &used);
        fwrite(piece, 1, n, f);
        p += used;
    }
    fputc('"', f);
}

/* Append to buf[*at..size), cutting what does not fit; keeps a NUL at the end. */
static void log__put(char *buf, size_t size, size_t *at, const char *s) {
    size_t n = strlen(s);
    if (*at + n >= size)
        n = size - 1 - *at;
    memcpy(buf + *at, s, n);
    *at += n;
    buf[*at] = '\0';
}

static bool log__needs_quotes(const char *s) {
    if (s[0] == '\0')
        return true;
    for (const char *p = s; *p; p++)
        if (*p == ' ' || *p == '"' || *p == '=' || *p == '\\' || (unsigned char)*p < 0x20)
            return true;
    return false;
}

/* The fields, each preceded by a separator: ,"k":v in JSON, " k=v" in text. */
static void log__fields(char *buf, size_t size, size_t *at, log_format_t format,
                        const log_field_t *fields, size_t n) {
    char val[LOG_FIELD_MAX + 64];
    char piece[LOG_FIELD_MAX + 192];
    for (size_t i = 0; i < n; i++) {
        const log_field_t *f = &fields[i];
        switch (f->kind) {
        case LOG_FIELD_STR:
            if (f->str == NULL) {
                if (format == LOG_FORMAT_TEXT)
                    continue;
                snprintf(val, sizeof(val), "null");
            } else if (format == LOG_FORMAT_JSON || log__needs_quotes(f->str)) {
                char esc[LOG_FIELD_MAX];
                log_json_escape(esc, sizeof(esc), f->str);
                snprintf(val, sizeof(val), "\"%s\"", esc);
            } else {
                snprintf(val, sizeof(val), "%.*s", LOG_FIELD_MAX, f->str);
            }
            break;
        case LOG_FIELD_INT:
            snprintf(val, sizeof(val), "%lld", (long long)f->i);
            break;
        case LOG_FIELD_NUM:
            if (!isfinite(f->num))
                snprintf(val, sizeof(val), format == LOG_FORMAT_JSON ? "null" : "%g", f->num);
            else
                snprintf(val, sizeof(val), "%.10g", f->num);
            break;
        }
        if (format == LOG_FORMAT_JSON)
            snprintf(piece, sizeof(piece), ",\"%s\":%s", f->key, val);
        else
            snprintf(piece, sizeof(piece), " %s=%s", f->key, val);
        if (*at + strlen(piece) >= size)
            break; /* a field that does not fit is left out whole */
        log__put(buf, size, at, piece);
    }
}

size_t log_format_line(char *buf, size_t size, log_format_t format, log_level_t level,
                       const struct timespec *ts, const log_field_t *fields, size_t n,
                       const char *msg) {
    struct tm tm;
    gmtime_r(&ts->tv_sec, &tm);
    char stamp[64];
    snprintf(stamp, sizeof(stamp), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts->tv_nsec / 1000000);
    /* Fields first, into the back half, so the message is what gets cut. */
    char *tail = malloc(size / 2);
    size_t tail_len = 0;
    if (tail != NULL) {
        tail[0] = '\0';
        log__fields(tail, size / 2, &tail_len, format, fields, n);
    }
    size_t at = 0;
    buf[0] = '\0';
    char head[128];
    if (format == LOG_FORMAT_JSON)
        snprintf(head, sizeof(head), "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":\"", stamp,
                 level_names[level]);
    else
        snprintf(head, sizeof(head), "%s %-5s ", stamp, level_names[level]);
    log__put(buf, size, &at, head);
    size_t room = size - at - tail_len - 4; /* '"', '}', '\n', NUL */
    if (format == LOG_FORMAT_JSON) {
        at += log_json_escape(buf + at, room, msg);
        log__put(buf, size, &at, "\"");
    } else {
        char *m = buf + at;
        snprintf(m, room, "%s", msg);
        for (; *m; m++) /* one event, one line */
            if (*m == '\n')
                *m = ' ';
        at = (size_t)(m - buf);
    }
    if (tail != NULL) {
        log__put(buf, size, &at, tail);
        free(tail);
    }
    log__put(buf, size, &at, format == LOG_FORMAT_JSON ? "}\n" : "\n");
    return at;
}

static void log__vwrite(log_level_t level, const log_field_t *fields, size_t n, const char *fmt,
                        va_list ap) {
    char msg[LOG_LINE_MAX / 2];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    char line[LOG_LINE_MAX];
    log_format_line(line, sizeof(line), current_format, level, &now, fields, n, msg);
    /* One fputs per line keeps lines from different threads whole. */
    fputs(line, stderr);
}

void log_write(log_level_t level, const char *fmt, ...) {
    if (level < current_level)
        return;
    va_list ap;
    va_start(ap, fmt);
    log__vwrite(level, NULL, 0, fmt, ap);
    va_end(ap);
}

void log_fields(log_level_t level, const log_field_t *fields, size_t n, const char *fmt, ...) {
    if (level < current_level)
        return;
    va_list ap;
    va_start(ap, fmt);
    log__vwrite(level, fields, n, fmt, ap);
    va_end(ap);
}
