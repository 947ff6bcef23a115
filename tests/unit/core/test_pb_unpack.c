/* Unit tests of server/core/pb_unpack.c: a v1.Pod holding unknown groups (at its top level
 * and deep in a known sub-message) decodes as without them; a group that does not end, ends
 * under another number or nests too deep does not decode; bytes without groups are left
 * to protobuf-c; a NUL byte in a string field is found at any depth, and only there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pb_unpack.h"
#include "pod.h"

/* One length-delimited field with a one-byte tag and a short body, appended at o. */
static size_t field(uint8_t *o, uint8_t tag, const uint8_t *body, size_t n) {
    assert_true(n < 128);
    o[0] = tag;
    o[1] = (uint8_t)n;
    memcpy(o + 2, body, n);
    return n + 2;
}

/* Field 99 as a group holding a varint, then the group's end: 9b 06 08 05 9c 06. */
static const uint8_t group[] = {0x9b, 0x06, 0x08, 0x05, 0x9c, 0x06};

/* A pod "p" with one container requesting 500m cpu; with_group adds an unknown group to
 * its metadata, to the cpu Quantity and to the pod itself. */
static size_t pod_bytes(uint8_t *o, bool with_group) {
    uint8_t q[32], entry[48], rr[64], c[80], spec[96], meta[16];
    size_t nq = field(q, 0x0a, (const uint8_t *)"500m", 4);
    if (with_group) {
        memcpy(q + nq, group, sizeof(group));
        nq += sizeof(group);
    }
    size_t ne = field(entry, 0x0a, (const uint8_t *)"cpu", 3);
    ne += field(entry + ne, 0x12, q, nq);
    size_t nr = field(rr, 0x12, entry, ne);
    size_t nc = field(c, 0x0a, (const uint8_t *)"c", 1);
    nc += field(c + nc, 0x42, rr, nr);
    size_t ns = field(spec, 0x12, c, nc);
    size_t nm = field(meta, 0x0a, (const uint8_t *)"p", 1);
    if (with_group) {
        memcpy(meta + nm, group, sizeof(group));
        nm += sizeof(group);
    }
    size_t n = field(o, 0x0a, meta, nm);
    if (with_group) {
        memcpy(o + n, group, sizeof(group));
        n += sizeof(group);
    }
    n += field(o + n, 0x12, spec, ns);
    return n;
}

static void test_groups_are_skipped(void **state) {
    (void)state;
    uint8_t plain[256], grouped[256];
    size_t np = pod_bytes(plain, false), ng = pod_bytes(grouped, true);
    resources_t r = {0};
    assert_int_equal(pod_decode_request(plain, np, &r, NULL), 0);
    assert_int_equal(r.cpu_milli, 500);

    /* protobuf-c alone refuses the groups; pb_unpack reads the same pod. */
    assert_null(
        protobuf_c_message_unpack(&k8s__io__api__core__v1__pod__descriptor, NULL, ng, grouped));
    memset(&r, 0, sizeof(r));
    assert_int_equal(pod_decode_request(grouped, ng, &r, NULL), 0);
    assert_int_equal(r.cpu_milli, 500);
    k8s_pod_t *pod = (k8s_pod_t *)pb_unpack(&k8s__io__api__core__v1__pod__descriptor, ng, grouped);
    assert_non_null(pod);
    assert_string_equal(pod->metadata->name, "p");
    protobuf_c_message_free_unpacked(&pod->base, NULL);

    /* Stripped, the bytes are those of the pod without groups. */
    uint8_t *out = NULL;
    size_t out_len = 0;
    assert_int_equal(
        pb_strip_groups(&k8s__io__api__core__v1__pod__descriptor, grouped, ng, &out, &out_len), 0);
    assert_non_null(out);
    assert_int_equal(out_len, np);
    assert_memory_equal(out, plain, np);
    free(out);

    /* Without groups there is nothing to strip. */
    assert_int_equal(
        pb_strip_groups(&k8s__io__api__core__v1__pod__descriptor, plain, np, &out, &out_len), 0);
    assert_null(out);
}

static void test_bad_groups(void **state) {
    (void)state;
    uint8_t buf[1024];
    size_t n = pod_bytes(buf, false);
    resources_t r;
    /* A group that never ends. */
    buf[n] = 0x9b, buf[n + 1] = 0x06, buf[n + 2] = 0x08, buf[n + 3] = 0x05;
    assert_int_equal(pod_decode_request(buf, n + 4, &r, NULL), FRUGAL_EINVAL);
    /* Ended under another number. */
    buf[n + 4] = 0xa4, buf[n + 5] = 0x06;
    assert_int_equal(pod_decode_request(buf, n + 6, &r, NULL), FRUGAL_EINVAL);
    /* An end with no start. */
    buf[n] = 0x9c, buf[n + 1] = 0x06;
    assert_int_equal(pod_decode_request(buf, n + 2, &r, NULL), FRUGAL_EINVAL);

    /* Groups nested within the limit are skipped; deeper is refused, without a crash. */
    for (size_t depth = 10; depth <= 2 * PB_UNPACK_MAX_DEPTH;
         depth += 2 * PB_UNPACK_MAX_DEPTH - 10) {
        size_t m = n;
        for (size_t i = 0; i < depth; i++)
            buf[m++] = 0x9b, buf[m++] = 0x06;
        for (size_t i = 0; i < depth; i++)
            buf[m++] = 0x9c, buf[m++] = 0x06;
        assert_true(m <= sizeof(buf));
        int rc = pod_decode_request(buf, m, &r, NULL);
        assert_int_equal(rc, depth <= PB_UNPACK_MAX_DEPTH ? 0 : FRUGAL_EINVAL);
    }
}

static void test_string_with_nul(void **state) {
    (void)state;
    const ProtobufCMessageDescriptor *desc = &k8s__io__api__core__v1__pod__descriptor,
                                     *owner = NULL;
    uint8_t buf[256];
    size_t n = pod_bytes(buf, true);
    assert_null(pb_string_with_nul(desc, buf, n, &owner));

    /* The pod's name "p" (its byte sits after two tags and two lengths). */
    assert_int_equal(buf[4], 'p');
    buf[4] = 0;
    const ProtobufCFieldDescriptor *f = pb_string_with_nul(desc, buf, n, &owner);
    assert_non_null(f);
    assert_string_equal(f->name, "name");
    assert_string_equal(owner->name, "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta");
    buf[4] = 'p';

    /* Deep down: the cpu Quantity's "500m", in a map entry of a container. */
    uint8_t *q = memchr(buf, '5', n);
    assert_non_null(q);
    *q = 0;
    f = pb_string_with_nul(desc, buf, n, &owner);
    assert_non_null(f);
    assert_string_equal(owner->name, "k8s.io.apimachinery.pkg.api.resource.Quantity");
    *q = '5';

    /* A field the type does not know, or bytes that do not parse, hold no string. */
    uint8_t unknown[] = {0xa2, 0x06, 0x02, 'a', 0};
    assert_null(pb_string_with_nul(desc, unknown, sizeof(unknown), &owner));
    uint8_t cut[] = {0x0a, 0x05, 0x0a, 0x01};
    assert_null(pb_string_with_nul(desc, cut, sizeof(cut), &owner));
    assert_null(pb_string_with_nul(desc, NULL, 0, &owner));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_groups_are_skipped),
        cmocka_unit_test(test_bad_groups),
        cmocka_unit_test(test_string_with_nul),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
