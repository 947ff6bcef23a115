/* gRPC status codes on frugal's side of the wire: the status each FRUGAL_E* code answers
 * with (the table in errors.h names it), and the canonical name of any status. */
#ifndef FRUGAL_STATUS_H
#define FRUGAL_STATUS_H

#include <grpc/status.h>

/* The gRPC status a FRUGAL_E* code maps to; GRPC_STATUS_OK for 0, GRPC_STATUS_UNKNOWN for
 * a code outside the table. */
grpc_status_code frugal_err_status(int code);

/* Name of a status code ("NOT_FOUND"). */
const char *rpc_status_name(grpc_status_code status);

#endif
