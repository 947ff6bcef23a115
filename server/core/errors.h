/* Error codes shared by every module.
 *
 * Functions return 0 on success or a negative FRUGAL_E* code; a function that fails
 * has changed nothing. Details go into a frugal_err_t the caller passes (may be NULL).
 * Each code names exactly one gRPC status (by its canonical name, so this header stays
 * free of gRPC); server/rpc/status.c turns it into the status a call answers with. */
#ifndef FRUGAL_ERRORS_H
#define FRUGAL_ERRORS_H

#include <stdarg.h>

/* X(name, value, gRPC status name without , short description) */
#define FRUGAL_ERRNO_MAP(X)                                                                        \
    X(INVAL, -1, INVALID_ARGUMENT, "invalid argument")                                             \
    X(NOTFOUND, -2, NOT_FOUND, "not found")                                                        \
    X(PRECOND, -3, FAILED_PRECONDITION, "failed precondition")                                     \
    X(EXHAUSTED, -4, RESOURCE_EXHAUSTED, "resource exhausted")                                     \
    X(NOMEM, -5, RESOURCE_EXHAUSTED, "out of memory")                                              \
    X(IO, -6, INTERNAL, "I/O error")                                                               \
    X(INTERNAL, -7, INTERNAL, "internal error")                                                    \
    X(UNIMPL, -8, UNIMPLEMENTED, "not implemented")                                                \
    X(EXISTS, -9, ALREADY_EXISTS, "already exists")                                                \
    X(UNAVAIL, -10, UNAVAILABLE, "unavailable")                                                    \
    X(DEADLINE, -11, DEADLINE_EXCEEDED, "deadline exceeded")                                       \
    X(ABORTED, -12, ABORTED, "aborted by a concurrent change")

enum {
#define FRUGAL__ERR_ENUM(name, value, status, desc) FRUGAL_E##name = (value),
    FRUGAL_ERRNO_MAP(FRUGAL__ERR_ENUM)
#undef FRUGAL__ERR_ENUM
};

#define FRUGAL_ERR_MSG_MAX 512

typedef struct frugal_err {
    int code;                     /* FRUGAL_E*, 0 when no error */
    char msg[FRUGAL_ERR_MSG_MAX]; /* human-readable, names the problem */
} frugal_err_t;

/* Name of a code ("INVAL"), "OK" for 0, "UNKNOWN" otherwise. */
const char *frugal_err_name(int code);
/* The gRPC status name code maps to ("FAILED_PRECONDITION"; "OK" for 0), for logs. */
const char *frugal_err_code_name(int code);

/* Short description of a code. */
const char *frugal_err_describe(int code);

/* Fill err (if not NULL) with code and a printf-style message; returns code, so
 * `return frugal_err_set(err, FRUGAL_EINVAL, "delta %d must be > 0", d);` reads well. */
int frugal_err_set(frugal_err_t *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Clear err to "no error". */
void frugal_err_clear(frugal_err_t *err);

#endif
