/* One unary gRPC call from a client: the etcd client's and `frugal ctl`'s (and the
 * benchmarks'), so the batch of six operations, the wait and the clean-up are written
 * once. */
#ifndef FRUGAL_UNARY_CALL_H
#define FRUGAL_UNARY_CALL_H

#include <grpc/grpc.h>

#include "errors.h"

/* Call method on ch with the message req (the caller keeps it) and the request metadata
 * md[0..md_count) (md may be NULL when md_count is 0), and wait for the whole answer,
 * which deadline bounds. On 0: *status, *details (malloc'ed, "" when the server
 * sent none) and *resp (the message received, NULL when none; the caller destroys it).
 * FRUGAL_EINTERNAL when the call could not be made, FRUGAL_ENOMEM: nothing returned. */
int unary_call(grpc_channel *ch, const char *method, gpr_timespec deadline, const grpc_metadata *md,
               size_t md_count, grpc_byte_buffer *req, grpc_byte_buffer **resp,
               grpc_status_code *status, char **details);

#endif
