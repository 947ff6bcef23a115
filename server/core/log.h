/* Leveled logging to stderr, one line per event, safe from any thread. */
#ifndef FRUGAL_LOG_H
#define FRUGAL_LOG_H

typedef enum { LOG_LEVEL_DEBUG = 0, LOG_LEVEL_INFO, LOG_LEVEL_WARN, LOG_LEVEL_ERROR } log_level_t;

/* Messages below this level are dropped; default INFO, FRUGAL_LOG_LEVEL=debug overrides. */
void log_set_level(log_level_t level);
log_level_t log_get_level(void);
/* Parse "debug", "info", "warn", "error"; returns 0 or -1. */
int log_parse_level(const char *name, log_level_t *out);

void log_write(log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_write(LOG_LEVEL_DEBUG, __VA_ARGS__)
#define log_info(...) log_write(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_warn(...) log_write(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_error(...) log_write(LOG_LEVEL_ERROR, __VA_ARGS__)

#endif
