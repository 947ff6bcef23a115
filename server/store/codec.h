/* The one pair of helpers that converts gRPC byte buffers to and from protobuf-c
 * messages. Always destroys its reader and unrefs its slices. */
#ifndef FRUGAL_CODEC_H
#define FRUGAL_CODEC_H

#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>

#include "errors.h"

/* Unpack buf as a message of type desc. *out must be released with
 * protobuf_c_message_free_unpacked(*out, NULL). FRUGAL_EINVAL naming the message type
 * when the bytes are not a valid message, or naming the field when a string holds a NUL
 * byte (it would be read only up to it). */
int codec_unpack(const ProtobufCMessageDescriptor *desc, grpc_byte_buffer *buf,
                 ProtobufCMessage **out, frugal_err_t *err);

/* Serialize msg into a new byte buffer (caller owns it); NULL only when out of memory. */
grpc_byte_buffer *codec_pack(const ProtobufCMessage *msg);

/* A handler's answer: serialize msg into *response. 0, or FRUGAL_ENOMEM. */
int codec_reply(const ProtobufCMessage *msg, grpc_byte_buffer **response, frugal_err_t *err);

/* Release a message from codec_unpack; NULL is ignored. */
void codec_free(void *msg);

/* Copy all of buf into one malloc'ed block (*len bytes; *data is NULL when empty). */
int codec_read_all(grpc_byte_buffer *buf, uint8_t **data, size_t *len, frugal_err_t *err);

/* A byte buffer holding a copy of data[0..len). */
grpc_byte_buffer *codec_from_bytes(const uint8_t *data, size_t len);

#endif
