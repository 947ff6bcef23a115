/* ctl_call: one unary call of `frugal ctl`, packed, sent and unpacked, its failure
 * printed (ctl.h). Every verb file uses it; it uses none of them. */
#include "ctl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "wire_names.h"

int ctl_call(rpc_client_t *client, const char *method, const ProtobufCMessage *req,
             const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp) {
    return ctl_call_metadata(client, method, NULL, 0, req, resp_desc, resp);
}

int ctl_call_metadata(rpc_client_t *client, const char *method, const grpc_metadata *md,
                      size_t md_count, const ProtobufCMessage *req,
                      const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp) {
    size_t len = protobuf_c_message_get_packed_size(req);
    uint8_t *body = cli_xcalloc(len, 1);
    protobuf_c_message_pack(req, body);

    uint8_t *reply = NULL;
    size_t reply_len = 0;
    grpc_status_code status = GRPC_STATUS_UNKNOWN;
    char *details = NULL;
    int rc = rpc_client_call_metadata(client, method, md, md_count, body, len, &reply, &reply_len,
                                      &status, &details);
    free(body);
    if (rc != 0) {
        fprintf(stderr, "error: %s: local failure calling %s\n", frugal_err_name(rc), method);
        return 1;
    }
    if (status != GRPC_STATUS_OK) {
        fprintf(stderr, "%s: %s\n", rpc_status_name(status), details);
        free(details);
        free(reply);
        return 1;
    }
    free(details);
    *resp = protobuf_c_message_unpack(resp_desc, NULL, reply_len, reply);
    free(reply);
    if (*resp == NULL) {
        fprintf(stderr, "error: the reply of %s is not a valid %s\n", method, resp_desc->name);
        return 1;
    }
    return 0;
}
