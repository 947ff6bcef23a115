#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static log_level_t current_level = LOG_LEVEL_INFO;
static const char *const level_names[] = {"debug", "info", "warn", "error"};

void log_set_level(log_level_t level) {
    current_level = level;
}

log_level_t log_get_level(void) {
    return current_level;
}

int log_parse_level(const char *name, log_level_t *out) {
    for (int i = 0; i <= LOG_LEVEL_ERROR; i++) {
        if (strcmp(name, level_names[i]) == 0) {
            *out = (log_level_t)i;
            return 0;
        }
    }
    return -1;
}

void log_write(log_level_t level, const char *fmt, ...) {
    if (level < current_level)
        return;
    char line[2048];
    struct timespec now;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    int n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     now.tv_nsec / 1000000, level_names[level]);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    /* One fputs per line keeps lines from different threads whole. */
    size_t len = strlen(line);
    if (len < sizeof(line) - 1) {
        line[len] = '\n';
        line[len + 1] = '\0';
    } else {
        line[sizeof(line) - 2] = '\n';
    }
    fputs(line, stderr);
}
