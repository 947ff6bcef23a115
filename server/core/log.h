/* Leveled logging to stderr, one line per event, safe from any thread.
 *
 * Two formats (docs/operations.md): text, "TS LEVEL msg key=value...", and JSON, one
 * object per line with ts, level, msg and the event's fields. The level and format are
 * set once at start, from FRUGAL_LOG_LEVEL / FRUGAL_LOG_FORMAT (log_init_from_env) and
 * then the command line, before any thread logs. */
#ifndef FRUGAL_LOG_H
#define FRUGAL_LOG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

typedef enum { LOG_LEVEL_DEBUG = 0, LOG_LEVEL_INFO, LOG_LEVEL_WARN, LOG_LEVEL_ERROR } log_level_t;
typedef enum { LOG_FORMAT_TEXT = 0, LOG_FORMAT_JSON } log_format_t;

/* Messages below this level are dropped; default INFO. */
void log_set_level(log_level_t level);
log_level_t log_get_level(void);
/* Parse "debug", "info", "warn", "error"; returns 0 or -1. */
int log_parse_level(const char *name, log_level_t *out);

/* Default text. */
void log_set_format(log_format_t format);
log_format_t log_get_format(void);
/* Parse "text", "json"; returns 0 or -1. */
int log_parse_format(const char *name, log_format_t *out);

/* Apply FRUGAL_LOG_LEVEL and FRUGAL_LOG_FORMAT when set. Returns 0, or -1 after
 * printing which variable holds what unknown value (nothing is changed then). */
int log_init_from_env(void);

/* One named value of an event. */
typedef enum { LOG_FIELD_STR, LOG_FIELD_INT, LOG_FIELD_NUM } log_field_kind_t;
typedef struct log_field {
    const char *key;
    log_field_kind_t kind;
    const char *str; /* LOG_FIELD_STR; NULL is written as null / omitted in text */
    int64_t i;
    double num;
} log_field_t;

#define LOG_STR(k, v) ((log_field_t){.key = (k), .kind = LOG_FIELD_STR, .str = (v)})
#define LOG_INT(k, v) ((log_field_t){.key = (k), .kind = LOG_FIELD_INT, .i = (int64_t)(v)})
#define LOG_NUM(k, v) ((log_field_t){.key = (k), .kind = LOG_FIELD_NUM, .num = (double)(v)})

void log_write(log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An event with fields: msg from fmt, then fields[0..n) in order. */
void log_fields(log_level_t level, const log_field_t *fields, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Format one line (ending in '\n', NUL-terminated) into buf; no I/O. A line too long
 * for buf is cut inside the message or a string field, never inside an escape, so a
 * JSON line stays one valid object. Returns the length. size must be >= 256. */
size_t log_format_line(char *buf, size_t size, log_format_t format, log_level_t level,
                       const struct timespec *ts, const log_field_t *fields, size_t n,
                       const char *msg);

/* Write s as the inside of a JSON string into out (NUL-terminated, at most size - 1
 * bytes): ", \ and control characters escaped, a multi-byte UTF-8 character never cut.
 * Returns the bytes written. */
size_t log_json_escape(char *out, size_t size, const char *s);

/* Write s to f as a JSON string, quotes included, escaped as log_json_escape escapes. */
void log_json_fputs(FILE *f, const char *s);

#define log_debug(...) log_write(LOG_LEVEL_DEBUG, __VA_ARGS__)
#define log_info(...) log_write(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_warn(...) log_write(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_error(...) log_write(LOG_LEVEL_ERROR, __VA_ARGS__)

#endif
