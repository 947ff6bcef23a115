/* Unpacking that skips groups: see pb_unpack.h. */
#include "pb_unpack.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2, PB_SGROUP = 3, PB_EGROUP = 4, PB_I32 = 5 };

typedef struct pb_in {
    const uint8_t *p, *end;
} pb_in_t;

static int pb__varint(pb_in_t *in, uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (in->p >= in->end)
            return -1;
        uint8_t b = *in->p++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 0;
    }
    return -1;
}

static int pb__skip(pb_in_t *in, uint64_t n) {
    if (n > (uint64_t)(in->end - in->p))
        return -1;
    in->p += n;
    return 0;
}

static size_t pb__varint_put(uint8_t *o, uint64_t v) {
    size_t n = 0;
    do {
        o[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

static int pb__skip_group(pb_in_t *in, uint64_t field, int depth);

/* Skip the value of the field whose tag in has just read. */
static int pb__skip_value(pb_in_t *in, uint64_t tag, int depth) {
    uint64_t v;
    switch (tag & 7) {
    case PB_VARINT:
        return pb__varint(in, &v);
    case PB_I64:
        return pb__skip(in, 8);
    case PB_LEN:
        return pb__varint(in, &v) != 0 ? -1 : pb__skip(in, v);
    case PB_SGROUP:
        return pb__skip_group(in, tag >> 3, depth + 1);
    case PB_I32:
        return pb__skip(in, 4);
    default:
        return -1; /* an end of group that no start opened */
    }
}

/* Skip the rest of the group of field `field` whose start tag in has just read. */
static int pb__skip_group(pb_in_t *in, uint64_t field, int depth) {
    if (depth > PB_UNPACK_MAX_DEPTH)
        return -1;
    for (;;) {
        uint64_t tag;
        if (pb__varint(in, &tag) != 0)
            return -1;
        if ((tag & 7) == PB_EGROUP)
            return (tag >> 3) == field ? 0 : -1;
        if (pb__skip_value(in, tag, depth) != 0)
            return -1;
    }
}

/* Copy in's fields to o (room for them plus 10 bytes a level below), without groups,
 * recursing into desc's known message fields; *n the bytes written. A sub-message is
 * written 10 bytes ahead, then moved behind its length once that is known. */
static int pb__strip(const ProtobufCMessageDescriptor *desc, pb_in_t *in, uint8_t *o, size_t *n,
                     bool *found, int depth) {
    if (depth > PB_UNPACK_MAX_DEPTH)
        return -1;
    *n = 0;
    while (in->p < in->end) {
        const uint8_t *start = in->p;
        uint64_t tag, v;
        if (pb__varint(in, &tag) != 0)
            return -1;
        size_t tag_bytes = (size_t)(in->p - start);
        const ProtobufCFieldDescriptor *f =
            desc != NULL && (tag >> 3) <= UINT32_MAX
                ? protobuf_c_message_descriptor_get_field(desc, (unsigned)(tag >> 3))
                : NULL;
        if ((tag & 7) == PB_LEN && f != NULL && f->type == PROTOBUF_C_TYPE_MESSAGE) {
            if (pb__varint(in, &v) != 0 || v > (uint64_t)(in->end - in->p))
                return -1;
            pb_in_t sub = {in->p, in->p + v};
            uint8_t *ahead = o + *n + tag_bytes + 10;
            size_t sub_n = 0;
            if (pb__strip(f->descriptor, &sub, ahead, &sub_n, found, depth + 1) != 0)
                return -1;
            memcpy(o + *n, start, tag_bytes);
            size_t len_bytes = pb__varint_put(o + *n + tag_bytes, sub_n);
            memmove(o + *n + tag_bytes + len_bytes, ahead, sub_n);
            *n += tag_bytes + len_bytes + sub_n;
            in->p += v;
            continue;
        }
        if (pb__skip_value(in, tag, depth) != 0)
            return -1;
        if ((tag & 7) == PB_SGROUP) {
            *found = true;
            continue;
        }
        memcpy(o + *n, start, (size_t)(in->p - start));
        *n += (size_t)(in->p - start);
    }
    return 0;
}

int pb_strip_groups(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                    uint8_t **out, size_t *out_len) {
    *out = NULL;
    *out_len = 0;
    uint8_t *o = malloc(len + 10 * (PB_UNPACK_MAX_DEPTH + 2));
    if (o == NULL)
        return -1;
    pb_in_t in = {data, data + len};
    bool found = false;
    size_t n = 0;
    int rc = pb__strip(desc, &in, o, &n, &found, 0);
    if (rc != 0 || !found) {
        free(o);
        return rc;
    }
    *out = o;
    *out_len = n;
    return 0;
}

ProtobufCMessage *pb_unpack(const ProtobufCMessageDescriptor *desc, size_t len,
                            const uint8_t *data) {
    static const uint8_t empty[1];
    ProtobufCMessage *msg = protobuf_c_message_unpack(desc, NULL, len, data ? data : empty);
    if (msg != NULL || data == NULL)
        return msg;
    uint8_t *clean = NULL;
    size_t clean_len = 0;
    if (pb_strip_groups(desc, data, len, &clean, &clean_len) == 0 && clean != NULL) {
        msg = protobuf_c_message_unpack(desc, NULL, clean_len, clean);
        free(clean);
    }
    return msg;
}

static const ProtobufCFieldDescriptor *pb__nul(const ProtobufCMessageDescriptor *desc, pb_in_t *in,
                                               int depth,
                                               const ProtobufCMessageDescriptor **owner) {
    if (depth > PB_UNPACK_MAX_DEPTH)
        return NULL;
    while (in->p < in->end) {
        uint64_t tag, v;
        if (pb__varint(in, &tag) != 0)
            return NULL;
        const ProtobufCFieldDescriptor *f =
            (tag >> 3) <= UINT32_MAX
                ? protobuf_c_message_descriptor_get_field(desc, (unsigned)(tag >> 3))
                : NULL;
        if ((tag & 7) != PB_LEN || f == NULL) {
            if (pb__skip_value(in, tag, depth) != 0)
                return NULL;
            continue;
        }
        if (pb__varint(in, &v) != 0 || v > (uint64_t)(in->end - in->p))
            return NULL;
        pb_in_t sub = {in->p, in->p + v};
        in->p += v;
        if (f->type == PROTOBUF_C_TYPE_STRING && memchr(sub.p, 0, (size_t)v) != NULL) {
            *owner = desc;
            return f;
        }
        if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
            const ProtobufCFieldDescriptor *found = pb__nul(f->descriptor, &sub, depth + 1, owner);
            if (found != NULL)
                return found;
        }
    }
    return NULL;
}

const ProtobufCFieldDescriptor *pb_string_with_nul(const ProtobufCMessageDescriptor *desc,
                                                   const uint8_t *data, size_t len,
                                                   const ProtobufCMessageDescriptor **owner) {
    if (data == NULL) /* an empty message: NULL + 0 is no pointer arithmetic C allows */
        return NULL;
    pb_in_t in = {data, data + len};
    return pb__nul(desc, &in, 0, owner);
}
