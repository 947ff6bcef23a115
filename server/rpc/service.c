/* The codec step of every call (service.h): unpack, call, pack, free. */
#include "service.h"

#include <string.h>

#include "codec.h"

/* Answers are mostly small (a group, a size, an empty message): blocks of this size
 * keep a call to one or two allocations; bigger arrays get blocks of their own. */
#define SERVICE_MEM_BLOCK 4096

void *service_alloc(service_mem_t *m, size_t count, size_t size) {
    void *p = arena_calloc(&m->arena, count, size);
    if (p == NULL)
        m->out_of_memory = true;
    return p;
}

void *service_message(service_mem_t *m, const ProtobufCMessageDescriptor *desc) {
    ProtobufCMessage *msg = arena_alloc(&m->arena, desc->sizeof_message);
    if (msg == NULL) {
        m->out_of_memory = true;
        return NULL;
    }
    protobuf_c_message_init(desc, msg);
    return msg;
}

char *service_strdup(service_mem_t *m, const char *s) {
    char *copy = arena_strdup(&m->arena, s != NULL ? s : "");
    if (copy != NULL)
        return copy;
    static char empty[1];
    m->out_of_memory = true;
    return empty;
}

ProtobufCBinaryData service_bytes(service_mem_t *m, const uint8_t *data, size_t len) {
    ProtobufCBinaryData b = {0, NULL};
    if (len == 0)
        return b;
    b.data = arena_alloc(&m->arena, len);
    if (b.data == NULL) {
        m->out_of_memory = true;
        return b;
    }
    memcpy(b.data, data, len);
    b.len = len;
    return b;
}

/* A typed method: the request decoded as m->request, the response an initialised
 * m->response in the call's memory, packed when the handler succeeds. */
static int service__call_typed(const service_method_t *m, service_ctx_t *ctx,
                               grpc_byte_buffer *request, grpc_byte_buffer **response,
                               frugal_err_t *err) {
    ProtobufCMessage *req;
    int rc = codec_unpack(m->request, request, &req, err);
    if (rc != 0)
        return rc;
    service_mem_t mem = {{NULL, SERVICE_MEM_BLOCK}, false};
    ProtobufCMessage *resp = service_message(&mem, m->response);
    if (resp == NULL) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        goto fail_response;
    }
    rc = m->handler(ctx, req, resp, &mem, err);
    if (rc == 0 && mem.out_of_memory)
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    if (rc == 0)
        rc = codec_reply(resp, response, err);
fail_response:
    arena_free(&mem.arena);
    protobuf_c_message_free_unpacked(req, NULL);
    return rc;
}

int service_method_call(const service_method_t *m, service_ctx_t *ctx, grpc_byte_buffer *request,
                        gpr_timespec deadline, grpc_byte_buffer **response, frugal_err_t *err) {
    *response = NULL;
    if (m->raw != NULL)
        return m->raw(ctx, request, deadline, response, err);
    return service__call_typed(m, ctx, request, response, err);
}
