#include "status.h"

#include "errors.h"

grpc_status_code frugal_err_status(int code) {
    switch (code) {
    case 0:
        return GRPC_STATUS_OK;
#define FRUGAL__ERR_STATUS(name, value, status, desc)                                              \
    case value:                                                                                    \
        return GRPC_STATUS_##status;
        FRUGAL_ERRNO_MAP(FRUGAL__ERR_STATUS)
#undef FRUGAL__ERR_STATUS
    }
    return GRPC_STATUS_UNKNOWN;
}

const char *rpc_status_name(grpc_status_code status) {
    switch (status) {
    case GRPC_STATUS_OK:
        return "OK";
    case GRPC_STATUS_CANCELLED:
        return "CANCELLED";
    case GRPC_STATUS_UNKNOWN:
        return "UNKNOWN";
    case GRPC_STATUS_INVALID_ARGUMENT:
        return "INVALID_ARGUMENT";
    case GRPC_STATUS_DEADLINE_EXCEEDED:
        return "DEADLINE_EXCEEDED";
    case GRPC_STATUS_NOT_FOUND:
        return "NOT_FOUND";
    case GRPC_STATUS_ALREADY_EXISTS:
        return "ALREADY_EXISTS";
    case GRPC_STATUS_PERMISSION_DENIED:
        return "PERMISSION_DENIED";
    case GRPC_STATUS_RESOURCE_EXHAUSTED:
        return "RESOURCE_EXHAUSTED";
    case GRPC_STATUS_FAILED_PRECONDITION:
        return "FAILED_PRECONDITION";
    case GRPC_STATUS_ABORTED:
        return "ABORTED";
    case GRPC_STATUS_OUT_OF_RANGE:
        return "OUT_OF_RANGE";
    case GRPC_STATUS_UNIMPLEMENTED:
        return "UNIMPLEMENTED";
    case GRPC_STATUS_INTERNAL:
        return "INTERNAL";
    case GRPC_STATUS_UNAVAILABLE:
        return "UNAVAILABLE";
    case GRPC_STATUS_DATA_LOSS:
        return "DATA_LOSS";
    case GRPC_STATUS_UNAUTHENTICATED:
        return "UNAUTHENTICATED";
    case GRPC_STATUS__DO_NOT_USE:
        break;
    }
    return "UNKNOWN";
}
