#include "codec.h"

#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/slice.h>

#include "pb_unpack.h"

int codec_read_all(grpc_byte_buffer *buf, uint8_t **data, size_t *len, frugal_err_t *err) {
    *data = NULL;
    *len = 0;
    size_t total = grpc_byte_buffer_length(buf);
    if (total == 0)
        return 0;
    uint8_t *out = malloc(total);
    if (out == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory reading a %zu-byte message",
                              total);
    grpc_byte_buffer_reader reader;
    if (!grpc_byte_buffer_reader_init(&reader, buf)) {
        free(out);
        return frugal_err_set(err, FRUGAL_EINVAL, "cannot read the message (bad compression?)");
    }
    size_t off = 0;
    grpc_slice slice;
    while (grpc_byte_buffer_reader_next(&reader, &slice)) {
        size_t n = GRPC_SLICE_LENGTH(slice);
        if (off + n > total)
            n = total - off;
        memcpy(out + off, GRPC_SLICE_START_PTR(slice), n);
        off += n;
        grpc_slice_unref(slice);
    }
    grpc_byte_buffer_reader_destroy(&reader);
    *data = out;
    *len = off;
    return 0;
}

int codec_unpack(const ProtobufCMessageDescriptor *desc, grpc_byte_buffer *buf,
                 ProtobufCMessage **out, frugal_err_t *err) {
    uint8_t *data;
    size_t len;
    int rc = codec_read_all(buf, &data, &len, err);
    if (rc != 0)
        return rc;
    ProtobufCMessage *msg = pb_unpack(desc, len, data);
    const ProtobufCMessageDescriptor *owner = NULL;
    const ProtobufCFieldDescriptor *nul =
        msg != NULL ? pb_string_with_nul(desc, data, len, &owner) : NULL;
    free(data);
    if (msg == NULL)
        return frugal_err_set(err, FRUGAL_EINVAL, "malformed %s message (%zu bytes)", desc->name,
                              len);
    if (nul != NULL) {
        protobuf_c_message_free_unpacked(msg, NULL);
        return frugal_err_set(err, FRUGAL_EINVAL, "%s: field %s of %s holds a NUL byte", desc->name,
                              nul->name, owner->name);
    }
    *out = msg;
    return 0;
}

grpc_byte_buffer *codec_pack(const ProtobufCMessage *msg) {
    size_t len = protobuf_c_message_get_packed_size(msg);
    grpc_slice slice = grpc_slice_malloc(len);
    protobuf_c_message_pack(msg, GRPC_SLICE_START_PTR(slice));
    grpc_byte_buffer *buf = grpc_raw_byte_buffer_create(&slice, 1);
    grpc_slice_unref(slice);
    return buf;
}

grpc_byte_buffer *codec_from_bytes(const uint8_t *data, size_t len) {
    grpc_slice slice = grpc_slice_from_copied_buffer((const char *)data, len);
    grpc_byte_buffer *buf = grpc_raw_byte_buffer_create(&slice, 1);
    grpc_slice_unref(slice);
    return buf;
}

int codec_reply(const ProtobufCMessage *msg, grpc_byte_buffer **response, frugal_err_t *err) {
    *response = codec_pack(msg);
    return *response != NULL ? 0 : frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
}

void codec_free(void *msg) {
    if (msg != NULL)
        protobuf_c_message_free_unpacked(msg, NULL);
}
