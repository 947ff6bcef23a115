/* protobuf-c unpacking that skips unknown fields of every wire type.
 *
 * protobuf-c rejects a message holding a *group* (wire types 3 and 4, proto2's old form
 * of a nested message) in a field it does not know, where the wire contract asks that
 * unknown fields be skipped. No cluster-autoscaler sends one (its protos are proto3),
 * so groups are dropped only when a message first fails to unpack: the usual path costs
 * nothing. */
#ifndef FRUGAL_PB_UNPACK_H
#define FRUGAL_PB_UNPACK_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/* Nesting deeper than this (of groups or of known message fields) does not parse. */
#define PB_UNPACK_MAX_DEPTH 64

/* data[0..len) as a message of type desc, or NULL when it is not one even without its
 * groups. Free with protobuf_c_message_free_unpacked. */
ProtobufCMessage *pb_unpack(const ProtobufCMessageDescriptor *desc, size_t len,
                            const uint8_t *data);

/* A copy of data[0..len) without its groups, at any depth of desc's known message fields,
 * in *out (malloc'ed, *out_len bytes). 0 and *out NULL when it has none; -1 when the bytes
 * do not parse or memory runs out. */
int pb_strip_groups(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                    uint8_t **out, size_t *out_len);

/* The first string field, at any depth of desc's known message fields, whose value in
 * data[0..len) holds a NUL byte; NULL when none does or the bytes do not parse. A string
 * unpacks as a C string, so such a value would be read only up to its NUL (a group id
 * "a\0b" as "a"), where the sender meant another. *owner: the message type it is in. */
const ProtobufCFieldDescriptor *pb_string_with_nul(const ProtobufCMessageDescriptor *desc,
                                                   const uint8_t *data, size_t len,
                                                   const ProtobufCMessageDescriptor **owner);

#endif
