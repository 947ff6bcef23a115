/* One unary gRPC call from a client (unary_call.h). */
#include "unary_call.h"

#include <stdlib.h>
#include <string.h>

#include <grpc/support/time.h>

int unary_call(grpc_channel *ch, const char *method, gpr_timespec deadline, const grpc_metadata *md,
               size_t md_count, grpc_byte_buffer *req, grpc_byte_buffer **resp,
               grpc_status_code *status, char **details) {
    *resp = NULL;
    *details = NULL;
    int rc = 0;
    grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
    grpc_slice m = grpc_slice_from_copied_string(method);
    grpc_call *call =
        grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq, m, NULL, deadline, NULL);
    grpc_slice_unref(m);
    if (call == NULL) {
        rc = FRUGAL_EINTERNAL;
        goto fail_call;
    }
    grpc_metadata_array im, tm;
    grpc_metadata_array_init(&im);
    grpc_metadata_array_init(&tm);
    grpc_byte_buffer *got = NULL;
    grpc_status_code st = GRPC_STATUS_UNKNOWN;
    grpc_slice sd = grpc_empty_slice();
    /* gRPC takes the slices out of the buffer it sends: a copy (of references) keeps the
     * caller's req whole, so the etcd client can send it again to the next endpoint. */
    grpc_byte_buffer *sent = grpc_byte_buffer_copy(req);
    grpc_op ops[6];
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[0].data.send_initial_metadata.count = md_count;
    ops[0].data.send_initial_metadata.metadata = (grpc_metadata *)md;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = sent;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &im;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &got;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &tm;
    ops[5].data.recv_status_on_client.status = &st;
    ops[5].data.recv_status_on_client.status_details = &sd;
    void *tag = &ops[0];
    /* The deadline bounds the call, so the pluck returns once it has passed. */
    if (grpc_call_start_batch(call, ops, 6, tag, NULL) != GRPC_CALL_OK ||
        grpc_completion_queue_pluck(cq, tag, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
            GRPC_OP_COMPLETE) {
        rc = FRUGAL_EINTERNAL;
    } else {
        size_t n = GRPC_SLICE_LENGTH(sd);
        if ((*details = malloc(n + 1)) == NULL) {
            rc = FRUGAL_ENOMEM;
        } else {
            memcpy(*details, GRPC_SLICE_START_PTR(sd), n);
            (*details)[n] = '\0';
            *status = st;
            *resp = got;
            got = NULL;
        }
    }
    if (got != NULL)
        grpc_byte_buffer_destroy(got);
    grpc_byte_buffer_destroy(sent);
    grpc_slice_unref(sd);
    grpc_metadata_array_destroy(&im);
    grpc_metadata_array_destroy(&tm);
    grpc_call_unref(call);
fail_call:
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN) {
    }
    grpc_completion_queue_destroy(cq);
    return rc;
}
