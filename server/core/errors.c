#include "errors.h"

#include <stdio.h>
#include <string.h>

const char *frugal_err_code_name(int code) {
    switch (code) {
    case 0:
        return "OK";
#define FRUGAL__ERR_CODE_NAME(name, value, status, desc)                                           \
    case value:                                                                                    \
        return #status;
        FRUGAL_ERRNO_MAP(FRUGAL__ERR_CODE_NAME)
#undef FRUGAL__ERR_CODE_NAME
    }
    return "UNKNOWN";
}

const char *frugal_err_name(int code) {
    switch (code) {
    case 0:
        return "OK";
#define FRUGAL__ERR_NAME(name, value, status, desc)                                                \
    case value:                                                                                    \
        return #name;
        FRUGAL_ERRNO_MAP(FRUGAL__ERR_NAME)
#undef FRUGAL__ERR_NAME
    }
    return "UNKNOWN";
}

const char *frugal_err_describe(int code) {
    switch (code) {
    case 0:
        return "success";
#define FRUGAL__ERR_DESC(name, value, status, desc)                                                \
    case value:                                                                                    \
        return desc;
        FRUGAL_ERRNO_MAP(FRUGAL__ERR_DESC)
#undef FRUGAL__ERR_DESC
    }
    return "unknown error";
}

int frugal_err_set(frugal_err_t *err, int code, const char *fmt, ...) {
    if (err != NULL) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
    }
    return code;
}

void frugal_err_clear(frugal_err_t *err) {
    if (err != NULL) {
        err->code = 0;
        err->msg[0] = '\0';
    }
}
