/* Unit tests of server/store/codec.c: messages round-trip through gRPC byte buffers made
 * of one slice, many slices and empty slices; empty buffers decode to the empty message;
 * garbage is FRUGAL_EINVAL naming the message type and its size; the caller keeps the
 * buffer it passes in, and a buffer made from bytes holds its own copy; a string holding
 * a NUL byte is FRUGAL_EINVAL naming its field. Runs clean
 * under ASan and valgrind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer.h>
#include <grpc/grpc.h>
#include <grpc/slice.h>

#include "codec.h"
#include "google/protobuf/timestamp.pb-c.h"
#include "k8s.h"

typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__ObjectMeta__LabelsEntry label_entry_t;

#define NODE_DESC (&k8s__io__api__core__v1__node__descriptor)

/* A node with a name of name_len 'n's and two labels, serialized (malloc'ed). */
static uint8_t *node_bytes(size_t name_len, size_t *len) {
    char *name = malloc(name_len + 1);
    assert_non_null(name);
    memset(name, 'n', name_len);
    name[name_len] = '\0';
    k8s_node_t node = K8S__IO__API__CORE__V1__NODE__INIT;
    k8s_object_meta_t meta = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__INIT;
    label_entry_t l1 = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__LABELS_ENTRY__INIT;
    label_entry_t l2 = l1;
    l1.key = "team";
    l1.value = "web";
    l2.key = "topology.kubernetes.io/zone";
    l2.value = "us-central1-a";
    label_entry_t *labels[] = {&l1, &l2};
    meta.name = name;
    meta.labels = labels;
    meta.n_labels = 2;
    node.metadata = &meta;
    *len = k8s__io__api__core__v1__node__get_packed_size(&node);
    uint8_t *out = malloc(*len);
    assert_non_null(out);
    assert_int_equal(k8s__io__api__core__v1__node__pack(&node, out), *len);
    free(name);
    return out;
}

/* The node decoded from buf must be the one node_bytes(name_len) made. */
static void assert_node(grpc_byte_buffer *buf, size_t name_len) {
    ProtobufCMessage *msg = NULL;
    frugal_err_t err;
    frugal_err_clear(&err);
    assert_int_equal(codec_unpack(NODE_DESC, buf, &msg, &err), 0);
    assert_int_equal(err.code, 0);
    k8s_node_t *node = (k8s_node_t *)msg;
    assert_non_null(node->metadata);
    assert_int_equal(strlen(node->metadata->name), name_len);
    assert_int_equal(strspn(node->metadata->name, "n"), name_len);
    assert_int_equal(node->metadata->n_labels, 2);
    assert_string_equal(node->metadata->labels[0]->key, "team");
    assert_string_equal(node->metadata->labels[1]->value, "us-central1-a");
    codec_free(msg);
}

/* codec_read_all(buf) must give exactly bytes[0..len). */
static void assert_bytes(grpc_byte_buffer *buf, const uint8_t *bytes, size_t len) {
    uint8_t *data = NULL;
    size_t data_len = 0;
    assert_int_equal(codec_read_all(buf, &data, &data_len, NULL), 0);
    assert_int_equal(data_len, len);
    assert_memory_equal(data, bytes, len);
    free(data);
}

/* A byte buffer of data[0..len) cut into pieces of piece bytes (the last may be
 * shorter), with an empty slice before each piece when with_empty. */
static grpc_byte_buffer *sliced(const uint8_t *data, size_t len, size_t piece, int with_empty) {
    size_t n = (len + piece - 1) / piece * (with_empty ? 2 : 1) + 1;
    grpc_slice *slices = calloc(n, sizeof(*slices));
    assert_non_null(slices);
    size_t k = 0;
    for (size_t off = 0; off < len; off += piece) {
        if (with_empty)
            slices[k++] = grpc_empty_slice();
        size_t m = len - off < piece ? len - off : piece;
        slices[k++] = grpc_slice_from_copied_buffer((const char *)data + off, m);
    }
    grpc_byte_buffer *buf = grpc_raw_byte_buffer_create(slices, k);
    for (size_t i = 0; i < k; i++)
        grpc_slice_unref(slices[i]);
    free(slices);
    return buf;
}

static void test_round_trip_one_slice(void **state) {
    (void)state;
    size_t len;
    uint8_t *bytes = node_bytes(10, &len);
    grpc_byte_buffer *buf = codec_from_bytes(bytes, len);
    assert_non_null(buf);
    assert_int_equal(grpc_byte_buffer_length(buf), len);
    assert_node(buf, 10);

    /* codec_pack of the decoded message gives the same bytes back. */
    ProtobufCMessage *msg = NULL;
    assert_int_equal(codec_unpack(NODE_DESC, buf, &msg, NULL), 0);
    grpc_byte_buffer *packed = codec_pack(msg);
    assert_non_null(packed);
    assert_bytes(packed, bytes, len);
    grpc_byte_buffer_destroy(packed);
    codec_free(msg);
    grpc_byte_buffer_destroy(buf);
    free(bytes);
}

/* A message spread over many slices (as gRPC delivers a large one) reads in order, for
 * slices of 1 byte, of a few bytes, with empty slices between, and a 1 MiB message. */
static void test_round_trip_many_slices(void **state) {
    (void)state;
    static const size_t pieces[] = {1, 3, 7, 64, 4096};
    size_t name_lens[] = {0, 100, 1 << 20};
    for (size_t n = 0; n < sizeof(name_lens) / sizeof(*name_lens); n++) {
        size_t len;
        uint8_t *bytes = node_bytes(name_lens[n], &len);
        for (size_t p = 0; p < sizeof(pieces) / sizeof(*pieces); p++) {
            if (name_lens[n] > 1000 && pieces[p] < 64)
                continue; /* a million one-byte slices only slows the test down */
            for (int with_empty = 0; with_empty <= 1; with_empty++) {
                grpc_byte_buffer *buf = sliced(bytes, len, pieces[p], with_empty);
                assert_int_equal(grpc_byte_buffer_length(buf), len);
                assert_bytes(buf, bytes, len);
                assert_node(buf, name_lens[n]);
                grpc_byte_buffer_destroy(buf);
            }
        }
        free(bytes);
    }
}

/* No bytes at all: codec_read_all gives NULL and 0, codec_unpack the empty message;
 * an empty message packs to an empty buffer. */
static void test_empty(void **state) {
    (void)state;
    grpc_byte_buffer *bufs[] = {
        codec_from_bytes((const uint8_t *)"", 0),
        grpc_raw_byte_buffer_create(NULL, 0),
        sliced((const uint8_t *)"", 0, 1, 0),
    };
    for (size_t i = 0; i < sizeof(bufs) / sizeof(*bufs); i++) {
        assert_non_null(bufs[i]);
        uint8_t *data = (uint8_t *)"x";
        size_t len = 42;
        assert_int_equal(codec_read_all(bufs[i], &data, &len, NULL), 0);
        assert_null(data);
        assert_int_equal(len, 0);
        ProtobufCMessage *msg = NULL;
        assert_int_equal(codec_unpack(NODE_DESC, bufs[i], &msg, NULL), 0);
        assert_non_null(msg);
        assert_ptr_equal(msg->descriptor, NODE_DESC);
        assert_null(((k8s_node_t *)msg)->metadata);
        grpc_byte_buffer *packed = codec_pack(msg);
        assert_non_null(packed);
        assert_int_equal(grpc_byte_buffer_length(packed), 0);
        grpc_byte_buffer_destroy(packed);
        codec_free(msg);
        grpc_byte_buffer_destroy(bufs[i]);
    }
}

/* Bytes that are not a Node: FRUGAL_EINVAL naming the type and the size, *out untouched,
 * whether the garbage comes in one slice or several. */
static void test_garbage(void **state) {
    (void)state;
    static const struct {
        const uint8_t *data;
        size_t len;
    } cases[] = {
        /* metadata (field 1, bytes) claiming 127 bytes that are not there */
        {(const uint8_t *)"\x0a\x7f\x0a\x01n", 5},
        /* a varint that never ends */
        {(const uint8_t *)"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 12},
        /* wire type 7 does not exist */
        {(const uint8_t *)"\x0f", 1},
        /* field number 0 */
        {(const uint8_t *)"\x02\x00", 2},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        /* in one slice, then a slice per byte */
        for (size_t piece = cases[i].len; piece >= 1; piece = piece > 1 ? 1 : 0) {
            grpc_byte_buffer *buf = sliced(cases[i].data, cases[i].len, piece, 0);
            ProtobufCMessage *sentinel = (ProtobufCMessage *)&cases[i];
            ProtobufCMessage *msg = sentinel;
            frugal_err_t err;
            frugal_err_clear(&err);
            assert_int_equal(codec_unpack(NODE_DESC, buf, &msg, &err), FRUGAL_EINVAL);
            assert_ptr_equal(msg, sentinel);
            assert_int_equal(err.code, FRUGAL_EINVAL);
            char expect[200];
            snprintf(expect, sizeof(expect), "malformed %s message (%zu bytes)", NODE_DESC->name,
                     cases[i].len);
            assert_string_equal(err.msg, expect);
            grpc_byte_buffer_destroy(buf);
        }
    }
}

/* The caller keeps its buffer: it decodes again after a codec_unpack, a failed decode
 * leaves it readable, and it is destroyed once by its owner (a double free would show under ASan
 * and valgrind). codec_from_bytes copies: changing the source afterwards changes nothing. */
static void test_ownership(void **state) {
    (void)state;
    size_t len;
    uint8_t *bytes = node_bytes(5, &len);
    grpc_byte_buffer *buf = codec_from_bytes(bytes, len);
    memset(bytes, 0xff, len);
    free(bytes);
    assert_node(buf, 5);
    assert_node(buf, 5);
    grpc_byte_buffer_destroy(buf);

    /* A failed decode leaves the buffer whole too. */
    static const uint8_t garbage[] = {0x0a, 0x7f, 0x0a};
    grpc_byte_buffer *bad = codec_from_bytes(garbage, sizeof(garbage));
    ProtobufCMessage *msg = NULL;
    assert_int_equal(codec_unpack(NODE_DESC, bad, &msg, NULL), FRUGAL_EINVAL);
    assert_null(msg);
    assert_bytes(bad, garbage, sizeof(garbage));
    grpc_byte_buffer_destroy(bad);

    /* codec_reply hands a new buffer to the caller; the message stays the caller's. */
    k8s_quantity_t q = K8S__IO__APIMACHINERY__PKG__API__RESOURCE__QUANTITY__INIT;
    q.string = "1500m";
    grpc_byte_buffer *response = NULL;
    assert_int_equal(codec_reply(&q.base, &response, NULL), 0);
    assert_non_null(response);
    assert_int_equal(codec_unpack(&k8s__io__apimachinery__pkg__api__resource__quantity__descriptor,
                                  response, &msg, NULL),
                     0);
    assert_string_equal(((k8s_quantity_t *)msg)->string, "1500m");
    assert_string_equal(q.string, "1500m");
    codec_free(msg);
    grpc_byte_buffer_destroy(response);
    codec_free(NULL);
}

static int group_setup(void **state) {
    (void)state;
    grpc_init();
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    grpc_shutdown_blocking();
    return 0;
}

static void test_string_with_nul(void **state) {
    (void)state;
    size_t len;
    uint8_t *bytes = node_bytes(3, &len);
    size_t at = 0;
    while (at + 3 <= len && memcmp(bytes + at, "web", 3) != 0)
        at++;
    assert_true(at + 3 <= len);
    bytes[at + 1] = 0; /* the label team=w\0b */
    grpc_byte_buffer *buf = codec_from_bytes(bytes, len);
    free(bytes);
    ProtobufCMessage *sentinel = (ProtobufCMessage *)&len, *msg = sentinel;
    frugal_err_t err;
    frugal_err_clear(&err);
    assert_int_equal(codec_unpack(NODE_DESC, buf, &msg, &err), FRUGAL_EINVAL);
    assert_ptr_equal(msg, sentinel);
    assert_string_equal(err.msg, "k8s.io.api.core.v1.Node: field value of "
                                 "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta.LabelsEntry "
                                 "holds a NUL byte");
    grpc_byte_buffer_destroy(buf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_one_slice),
        cmocka_unit_test(test_round_trip_many_slices),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_ownership),
        cmocka_unit_test(test_string_with_nul),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
