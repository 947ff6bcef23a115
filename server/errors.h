/* Error codes shared by every module.
 *
 * Functions return 0 on success or a negative FRUGAL_E* code; a function that fails
 * has changed nothing. Details go into a frugal_err_t the caller passes (may be NULL).
 * Each code maps to exactly one gRPC status so handlers never guess. */
#ifndef FRUGAL_ERRORS_H
#define FRUGAL_ERRORS_H

#include <stdarg.h>
#include <grpc/status.h>

/* X(name, value, grpc status, short description) */
#define FRUGAL_ERRNO_MAP(X)                                                              \
    X(INVAL, -1, GRPC_STATUS_INVALID_ARGUMENT, "invalid argument")                       \
    X(NOTFOUND, -2, GRPC_STATUS_NOT_FOUND, "not found")                                  \
    X(PRECOND, -3, GRPC_STATUS_FAILED_PRECONDITION, "failed precondition")               \
    X(EXHAUSTED, -4, GRPC_STATUS_RESOURCE_EXHAUSTED, "resource exhausted")               \
    X(NOMEM, -5, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory")                        \
    X(IO, -6, GRPC_STATUS_INTERNAL, "I/O error")                                         \
    X(INTERNAL, -7, GRPC_STATUS_INTERNAL, "internal error")                              \
    X(UNIMPL, -8, GRPC_STATUS_UNIMPLEMENTED, "not implemented")                          \
    X(EXISTS, -9, GRPC_STATUS_ALREADY_EXISTS, "already exists")                          \
    X(UNAVAIL, -10, GRPC_STATUS_UNAVAILABLE, "unavailable")                              \
    X(DEADLINE, -11, GRPC_STATUS_DEADLINE_EXCEEDED, "deadline exceeded")

enum {
#define FRUGAL__ERR_ENUM(name, value, status, desc) FRUGAL_E##name = (value),
    FRUGAL_ERRNO_MAP(FRUGAL__ERR_ENUM)
#undef FRUGAL__ERR_ENUM
};

#define FRUGAL_ERR_MSG_MAX 512

typedef struct frugal_err {
    int code;                       /* FRUGAL_E*, 0 when no error */
    char msg[FRUGAL_ERR_MSG_MAX];   /* human-readable, names the problem */
} frugal_err_t;

/* Name of a code ("INVAL"), "OK" for 0, "UNKNOWN" otherwise. */
const char *frugal_err_name(int code);

/* Short description of a code. */
const char *frugal_err_describe(int code);

/* The gRPC status a code maps to; GRPC_STATUS_OK for 0. */
grpc_status_code frugal_err_status(int code);

/* Fill err (if not NULL) with code and a printf-style message; returns code, so
 * `return frugal_err_set(err, FRUGAL_EINVAL, "delta %d must be > 0", d);` reads well. */
int frugal_err_set(frugal_err_t *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Clear err to "no error". */
void frugal_err_clear(frugal_err_t *err);

#endif
