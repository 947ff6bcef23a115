/* Unit tests of the streaming BestOptionsRequest decoder and the response builder
 * (server/rpc/expander_decode.c), plus the service's ranking glue without gRPC
 * (server/rpc/svc_expander.c: expander__answer through its test-only header, the
 * handler through the service's method table). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "demand.h"
#include "expander.pb-c.h"
#include "k8s.h"
#include "node_info.h"
#include "ranking.h"
#include "svc_expander_testing.h"

typedef K8s__Io__Api__Core__V1__ResourceRequirements__RequestsEntry requests_entry_t;
typedef K8s__Io__Api__Core__V1__NodeStatus__CapacityEntry capacity_entry_t;
typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__ObjectMeta__LabelsEntry label_entry_t;
typedef Grpcplugin__BestOptionsRequest request_t;
typedef Grpcplugin__Option option_t;

/* --- fixtures --- */

/* A serialized v1.Pod with one container requesting cpu and memory (and GPUs). */
static ProtobufCBinaryData pod_make(const char *name, const char *cpu, const char *memory,
                                    const char *gpu) {
    k8s_pod_t pod = K8S__IO__API__CORE__V1__POD__INIT;
    k8s_object_meta_t meta = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__INIT;
    k8s_pod_spec_t spec = K8S__IO__API__CORE__V1__POD_SPEC__INIT;
    k8s_container_t c = K8S__IO__API__CORE__V1__CONTAINER__INIT;
    k8s_resource_requirements_t rr = K8S__IO__API__CORE__V1__RESOURCE_REQUIREMENTS__INIT;
    requests_entry_t e[3];
    requests_entry_t *ep[3];
    k8s_quantity_t q[3];
    const char *names[3] = {"cpu", "memory", "nvidia.com/gpu"};
    const char *values[3] = {cpu, memory, gpu};
    size_t n = 0;
    for (size_t i = 0; i < 3; i++) {
        if (!values[i])
            continue;
        requests_entry_t init = K8S__IO__API__CORE__V1__RESOURCE_REQUIREMENTS__REQUESTS_ENTRY__INIT;
        k8s_quantity_t qi = K8S__IO__APIMACHINERY__PKG__API__RESOURCE__QUANTITY__INIT;
        qi.string = (char *)values[i];
        q[n] = qi;
        e[n] = init;
        e[n].key = (char *)names[i];
        e[n].value = &q[n];
        ep[n] = &e[n];
        n++;
    }
    rr.n_requests = n;
    rr.requests = ep;
    c.name = "main";
    c.resources = &rr;
    k8s_container_t *cp = &c;
    spec.n_containers = 1;
    spec.containers = &cp;
    meta.name = (char *)name;
    meta.namespace_ = "default";
    pod.metadata = &meta;
    pod.spec = &spec;
    ProtobufCBinaryData out;
    out.len = k8s__io__api__core__v1__pod__get_packed_size(&pod);
    out.data = malloc(out.len);
    assert_non_null(out.data);
    k8s__io__api__core__v1__pod__pack(&pod, out.data);
    return out;
}

/* A serialized template v1.Node. */
static ProtobufCBinaryData node_make(const char *type, const char *zone, const char *cpu) {
    k8s_node_t node = K8S__IO__API__CORE__V1__NODE__INIT;
    k8s_object_meta_t meta = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__INIT;
    k8s_node_status_t status = K8S__IO__API__CORE__V1__NODE_STATUS__INIT;
    label_entry_t l[2] = {
        K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__LABELS_ENTRY__INIT,
        K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__LABELS_ENTRY__INIT};
    label_entry_t *lp[2] = {&l[0], &l[1]};
    l[0].key = K8S_LABEL_INSTANCE_TYPE;
    l[0].value = (char *)type;
    l[1].key = K8S_LABEL_ZONE;
    l[1].value = (char *)zone;
    meta.n_labels = 2;
    meta.labels = lp;
    capacity_entry_t c = K8S__IO__API__CORE__V1__NODE_STATUS__CAPACITY_ENTRY__INIT;
    k8s_quantity_t q = K8S__IO__APIMACHINERY__PKG__API__RESOURCE__QUANTITY__INIT;
    q.string = (char *)cpu;
    c.key = "cpu";
    c.value = &q;
    capacity_entry_t *cp = &c;
    status.n_capacity = 1;
    status.capacity = &cp;
    node.metadata = &meta;
    node.status = &status;
    ProtobufCBinaryData out;
    out.len = k8s__io__api__core__v1__node__get_packed_size(&node);
    out.data = malloc(out.len);
    assert_non_null(out.data);
    k8s__io__api__core__v1__node__pack(&node, out.data);
    return out;
}

/* A request of n_opts options over n_pods pods (distinct contents: n_distinct),
 * generation legacy (fields 4/2) or current (5/3), nodes for the first n_nodes groups. */
typedef struct fixture {
    uint8_t *bytes;
    size_t len;
} fixture_t;

static fixture_t request_make(size_t n_opts, size_t n_pods, size_t n_distinct, bool legacy,
                              size_t n_nodes) {
    ProtobufCBinaryData *distinct = calloc(n_distinct, sizeof(*distinct));
    for (size_t i = 0; i < n_distinct; i++) {
        char name[32], cpu[16];
        snprintf(name, sizeof(name), "pod-%zu", i);
        snprintf(cpu, sizeof(cpu), "%zum", 100 * (i + 1));
        distinct[i] = pod_make(name, cpu, "64Mi", NULL);
    }
    ProtobufCBinaryData *pods = calloc(n_pods ? n_pods : 1, sizeof(*pods));
    for (size_t i = 0; i < n_pods; i++)
        pods[i] = distinct[i % n_distinct];
    option_t *opts = calloc(n_opts, sizeof(*opts));
    option_t **optp = calloc(n_opts, sizeof(*optp));
    char(*ids)[32] = calloc(n_opts, sizeof(*ids));
    char(*dbg)[32] = calloc(n_opts, sizeof(*dbg));
    for (size_t i = 0; i < n_opts; i++) {
        option_t o = GRPCPLUGIN__OPTION__INIT;
        snprintf(ids[i], sizeof(ids[i]), "group-%zu", i);
        snprintf(dbg[i], sizeof(dbg[i]), "debug-%zu", i);
        o.nodegroupid = ids[i];
        o.nodecount = (int32_t)i + 1;
        o.debug = dbg[i];
        if (legacy) {
            o.n_pod = n_pods;
            o.pod = pods;
        } else {
            o.n_podbytes = n_pods;
            o.podbytes = pods;
        }
        opts[i] = o;
        optp[i] = &opts[i];
    }
    Grpcplugin__BestOptionsRequest__NodeMapEntry *nm = calloc(n_nodes + 1, sizeof(*nm));
    Grpcplugin__BestOptionsRequest__NodeMapEntry **nmp = calloc(n_nodes + 1, sizeof(*nmp));
    Grpcplugin__BestOptionsRequest__NodeBytesMapEntry *nb = calloc(n_nodes + 1, sizeof(*nb));
    Grpcplugin__BestOptionsRequest__NodeBytesMapEntry **nbp = calloc(n_nodes + 1, sizeof(*nbp));
    ProtobufCBinaryData *nodes = calloc(n_nodes + 1, sizeof(*nodes));
    for (size_t i = 0; i < n_nodes; i++) {
        nodes[i] = node_make(i % 2 ? "n1-standard-8" : "n1-standard-2", "us-central1-a",
                             i % 2 ? "8" : "2");
        Grpcplugin__BestOptionsRequest__NodeMapEntry e =
            GRPCPLUGIN__BEST_OPTIONS_REQUEST__NODE_MAP_ENTRY__INIT;
        Grpcplugin__BestOptionsRequest__NodeBytesMapEntry f =
            GRPCPLUGIN__BEST_OPTIONS_REQUEST__NODE_BYTES_MAP_ENTRY__INIT;
        e.key = ids[i];
        e.value = nodes[i];
        f.key = ids[i];
        f.value = nodes[i];
        nm[i] = e;
        nb[i] = f;
        nmp[i] = &nm[i];
        nbp[i] = &nb[i];
    }
    request_t req = GRPCPLUGIN__BEST_OPTIONS_REQUEST__INIT;
    req.n_options = n_opts;
    req.options = optp;
    if (legacy) {
        req.n_nodemap = n_nodes;
        req.nodemap = nmp;
    } else {
        req.n_nodebytesmap = n_nodes;
        req.nodebytesmap = nbp;
    }
    fixture_t f;
    f.len = grpcplugin__best_options_request__get_packed_size(&req);
    f.bytes = malloc(f.len ? f.len : 1);
    grpcplugin__best_options_request__pack(&req, f.bytes);
    for (size_t i = 0; i < n_distinct; i++)
        free(distinct[i].data);
    for (size_t i = 0; i < n_nodes; i++)
        free(nodes[i].data);
    free(distinct);
    free(pods);
    free(opts);
    free(optp);
    free(ids);
    free(dbg);
    free(nm);
    free(nmp);
    free(nb);
    free(nbp);
    free(nodes);
    return f;
}

/* Decode bytes as one segment; release with decode_free (the segment must outlive
 * the request, so it is allocated with it). */
static expander_request_t *decode_one(const uint8_t *bytes, size_t len) {
    expander_segment_t *seg = malloc(sizeof(*seg));
    assert_non_null(seg);
    *seg = (expander_segment_t){bytes, len};
    expander_request_t *req = NULL;
    frugal_err_t err = {0};
    int rc = expander_decode(seg, 1, &req, &err);
    if (rc != 0)
        fprintf(stderr, "decode: %s\n", err.msg);
    assert_int_equal(rc, 0);
    return req;
}

/* The answer selecting sel[0..n) with their debug strings (or NULL), flattened into one
 * block; *total, when not NULL, the size the answer computed for itself. */
static uint8_t *flattened(const expander_request_t *req, const size_t *sel, size_t n,
                          const char *const *debugs, size_t *len, size_t *total) {
    expander_response_t resp;
    frugal_err_t err = {0};
    assert_int_equal(expander_response_build(req, sel, n, debugs, &resp, &err), 0);
    if (total != NULL)
        *total = resp.total_bytes;
    uint8_t *out;
    assert_int_equal(expander_response_flatten(req, &resp, &out, len, &err), 0);
    expander_response_free(&resp);
    return out;
}

static void decode_free(expander_request_t *req) {
    free((void *)req->segs);
    expander_request_free(req);
}

/* --- decoding --- */

static void check_generation(bool legacy) {
    fixture_t f = request_make(3, 4, 4, legacy, 2);
    expander_request_t *req = decode_one(f.bytes, f.len);
    assert_int_equal(req->options_count, 3);
    assert_int_equal(req->total_bytes, f.len);
    for (size_t i = 0; i < 3; i++) {
        const expander_option_t *o = &req->options[i];
        char id[16], dbg[16];
        snprintf(id, sizeof(id), "group-%zu", i);
        snprintf(dbg, sizeof(dbg), "debug-%zu", i);
        assert_string_equal(o->group_id, id);
        assert_string_equal(o->debug, dbg);
        assert_int_equal(o->node_count, (int)i + 1);
        assert_int_equal(o->pod_field, legacy ? EXPANDER_OPTION_POD : EXPANDER_OPTION_POD_BYTES);
        assert_int_equal(o->pods_count, 4);
        assert_int_equal(o->bad_pod, -1);
        for (size_t k = 0; k < 4; k++) {
            const expander_pod_t *p = &req->pods[req->pod_refs[o->pods_first + k]];
            assert_int_equal(p->rc, 0);
            assert_int_equal(p->pod.request.cpu_milli, 100 * (int64_t)(k + 1));
            assert_int_equal(p->pod.request.memory_bytes, 64 << 20);
            assert_int_equal(p->pod.created_ms, -1); /* no creationTimestamp */
        }
    }
    assert_int_equal(req->pods_count, 4);
    assert_int_equal(req->pods_decoded, 4);
    assert_int_equal(req->nodes_count, 2);
    const expander_node_t *n0 = expander_request_find_node(req, "group-0");
    const expander_node_t *n1 = expander_request_find_node(req, "group-1");
    assert_non_null(n0);
    assert_non_null(n1);
    assert_null(expander_request_find_node(req, "group-2"));
    assert_int_equal(n0->field,
                     legacy ? EXPANDER_REQUEST_NODE_MAP : EXPANDER_REQUEST_NODE_BYTES_MAP);
    node_info_t ni;
    frugal_err_t err = {0};
    assert_int_equal(node_info_decode(n1->data, n1->len, &ni, &err), 0);
    assert_string_equal(ni.instance_type, "n1-standard-8");
    assert_int_equal(ni.capacity.cpu_milli, 8000);
    node_info_free(&ni);
    decode_free(req);
    free(f.bytes);
}

static void test_current_fields(void **state) {
    (void)state;
    check_generation(false);
}

static void test_legacy_fields(void **state) {
    (void)state;
    check_generation(true);
}

static void test_prefer_current(void **state) {
    (void)state;
    ProtobufCBinaryData legacy_pods[2] = {pod_make("old-a", "1", "1Gi", NULL),
                                          pod_make("old-b", "2", "1Gi", NULL)};
    ProtobufCBinaryData current_pods[1] = {pod_make("new", "300m", "1Gi", NULL)};
    option_t o = GRPCPLUGIN__OPTION__INIT, *op = &o;
    o.nodegroupid = "g";
    o.nodecount = 1;
    o.n_pod = 2;
    o.pod = legacy_pods;
    o.n_podbytes = 1;
    o.podbytes = current_pods;
    ProtobufCBinaryData node_old = node_make("n1-standard-2", "z", "2");
    ProtobufCBinaryData node_new = node_make("n1-standard-8", "z", "8");
    ProtobufCBinaryData node_only_legacy = node_make("n1-standard-4", "z", "4");
    Grpcplugin__BestOptionsRequest__NodeMapEntry m1 =
        GRPCPLUGIN__BEST_OPTIONS_REQUEST__NODE_MAP_ENTRY__INIT;
    Grpcplugin__BestOptionsRequest__NodeMapEntry m2 =
        GRPCPLUGIN__BEST_OPTIONS_REQUEST__NODE_MAP_ENTRY__INIT;
    Grpcplugin__BestOptionsRequest__NodeBytesMapEntry b1 =
        GRPCPLUGIN__BEST_OPTIONS_REQUEST__NODE_BYTES_MAP_ENTRY__INIT;
    m1.key = "g";
    m1.value = node_old;
    m2.key = "h";
    m2.value = node_only_legacy;
    b1.key = "g";
    b1.value = node_new;
    Grpcplugin__BestOptionsRequest__NodeMapEntry *mp[2] = {&m1, &m2};
    Grpcplugin__BestOptionsRequest__NodeBytesMapEntry *bp[1] = {&b1};
    request_t r = GRPCPLUGIN__BEST_OPTIONS_REQUEST__INIT;
    r.n_options = 1;
    r.options = &op;
    r.n_nodemap = 2;
    r.nodemap = mp;
    r.n_nodebytesmap = 1;
    r.nodebytesmap = bp;
    size_t len = grpcplugin__best_options_request__get_packed_size(&r);
    uint8_t *bytes = malloc(len);
    grpcplugin__best_options_request__pack(&r, bytes);

    expander_request_t *req = decode_one(bytes, len);
    assert_int_equal(req->options[0].pod_field, EXPANDER_OPTION_POD_BYTES);
    assert_int_equal(req->options[0].pods_count, 1);
    assert_int_equal(req->pods[req->pod_refs[0]].pod.request.cpu_milli, 300);
    /* Pods of the field not used are not decoded at all. */
    assert_int_equal(req->pods_decoded, 1);
    const expander_node_t *g = expander_request_find_node(req, "g");
    assert_int_equal(g->field, EXPANDER_REQUEST_NODE_BYTES_MAP);
    assert_int_equal(g->len, node_new.len);
    assert_memory_equal(g->data, node_new.data, node_new.len);
    const expander_node_t *h = expander_request_find_node(req, "h");
    assert_non_null(h);
    assert_int_equal(h->field, EXPANDER_REQUEST_NODE_MAP);
    assert_memory_equal(h->data, node_only_legacy.data, node_only_legacy.len);

    /* The echo keeps both pod fields, as received. */
    size_t sel = 0, out_len;
    uint8_t *out = flattened(req, &sel, 1, NULL, &out_len, NULL);
    Grpcplugin__BestOptionsResponse *br =
        grpcplugin__best_options_response__unpack(NULL, out_len, out);
    assert_non_null(br);
    assert_int_equal(br->n_options, 1);
    assert_int_equal(br->options[0]->n_pod, 2);
    assert_int_equal(br->options[0]->n_podbytes, 1);
    grpcplugin__best_options_response__free_unpacked(br, NULL);
    free(out);

    decode_free(req);
    free(bytes);
    free(legacy_pods[0].data);
    free(legacy_pods[1].data);
    free(current_pods[0].data);
    free(node_old.data);
    free(node_new.data);
    free(node_only_legacy.data);
}

static void test_duplicates_decoded_once(void **state) {
    (void)state;
    fixture_t f = request_make(20, 50, 10, false, 20);
    expander_request_t *req = decode_one(f.bytes, f.len);
    assert_int_equal(req->options_count, 20);
    assert_int_equal(req->pod_refs_count, 20 * 50);
    assert_int_equal(req->pods_count, 10);
    assert_int_equal(req->pods_decoded, 10);
    for (size_t i = 0; i < req->pod_refs_count; i++)
        assert_int_equal(req->pod_refs[i], (i % 50) % 10);
    decode_free(req);
    free(f.bytes);

    /* Many distinct pods of equal size: the hash table grows and stays exact. */
    f = request_make(3, 3000, 3000, true, 0);
    req = decode_one(f.bytes, f.len);
    assert_int_equal(req->pods_count, 3000);
    assert_int_equal(req->pods_decoded, 3000);
    for (size_t i = 0; i < req->pod_refs_count; i++)
        assert_int_equal(req->pod_refs[i], i % 3000);
    decode_free(req);
    free(f.bytes);
}

/* Pods in another order in each option (and one option with fewer pods): the guess by
 * position misses and the hash finds them, still decoded once. */
static void test_duplicates_any_order(void **state) {
    (void)state;
    ProtobufCBinaryData p[3] = {pod_make("a", "100m", NULL, NULL),
                                pod_make("b", "200m", NULL, NULL),
                                pod_make("c", "300m", NULL, NULL)};
    ProtobufCBinaryData order[3][3] = {{p[0], p[1], p[2]}, {p[2], p[0], p[1]}, {p[1], p[1], p[0]}};
    option_t o[3], *op[3];
    for (size_t i = 0; i < 3; i++) {
        option_t init = GRPCPLUGIN__OPTION__INIT;
        o[i] = init;
        o[i].nodegroupid = "g";
        o[i].n_podbytes = i == 2 ? 2 : 3;
        o[i].podbytes = order[i];
        op[i] = &o[i];
    }
    request_t r = GRPCPLUGIN__BEST_OPTIONS_REQUEST__INIT;
    r.n_options = 3;
    r.options = op;
    size_t len = grpcplugin__best_options_request__get_packed_size(&r);
    uint8_t *bytes = malloc(len);
    grpcplugin__best_options_request__pack(&r, bytes);
    expander_request_t *req = decode_one(bytes, len);
    assert_int_equal(req->pods_count, 3);
    assert_int_equal(req->pods_decoded, 3);
    static const uint32_t want[8] = {0, 1, 2, 2, 0, 1, 1, 1};
    assert_int_equal(req->pod_refs_count, 8);
    for (size_t i = 0; i < 8; i++)
        assert_int_equal(req->pod_refs[i], want[i]);
    assert_int_equal(req->pods[2].pod.request.cpu_milli, 300);
    decode_free(req);
    free(bytes);
    for (size_t i = 0; i < 3; i++)
        free(p[i].data);
}

/* Everything observable of a decoded request, as text, to compare decodings. */
static char *request_describe(const expander_request_t *req) {
    size_t cap = 1 << 16, len = 0;
    char *s = malloc(cap);
    len += (size_t)snprintf(s + len, cap - len, "total=%llu options=%zu pods=%zu decoded=%zu\n",
                            (unsigned long long)req->total_bytes, req->options_count,
                            req->pods_count, req->pods_decoded);
    for (size_t i = 0; i < req->options_count; i++) {
        const expander_option_t *o = &req->options[i];
        len += (size_t)snprintf(s + len, cap - len, "opt %s %d %s f%u bad%d:", o->group_id,
                                o->node_count, o->debug, o->pod_field, o->bad_pod);
        for (size_t k = 0; k < o->pods_count; k++) {
            const expander_pod_t *p = &req->pods[req->pod_refs[o->pods_first + k]];
            len += (size_t)snprintf(s + len, cap - len, " %u/%lld/%zu",
                                    req->pod_refs[o->pods_first + k],
                                    (long long)p->pod.request.cpu_milli, p->len);
        }
        for (size_t k = 0; k < o->keep_count; k++)
            len += (size_t)snprintf(s + len, cap - len, " keep%llu+%llu",
                                    (unsigned long long)req->keep[o->keep_first + k].start,
                                    (unsigned long long)req->keep[o->keep_first + k].len);
        len += (size_t)snprintf(s + len, cap - len, "\n");
    }
    for (size_t i = 0; i < req->nodes_count; i++) {
        const expander_node_t *n = &req->nodes[i];
        uint64_t sum = 0;
        for (size_t k = 0; k < n->len; k++)
            sum = sum * 31 + n->data[k];
        len += (size_t)snprintf(s + len, cap - len, "node %s f%u %zu %llu\n", n->key, n->field,
                                n->len, (unsigned long long)sum);
    }
    assert_true(len < cap);
    return s;
}

static uint8_t *response_of(const expander_request_t *req, size_t *len) {
    size_t sel[2] = {1, 0};
    const char *debugs[2] = {"changed", NULL};
    return flattened(req, sel, 2, debugs, len, NULL);
}

static void check_segments(const expander_segment_t *segs, size_t n, const char *want,
                           const uint8_t *want_resp, size_t want_resp_len) {
    expander_request_t *req = NULL;
    frugal_err_t err = {0};
    assert_int_equal(expander_decode(segs, n, &req, &err), 0);
    char *got = request_describe(req);
    assert_string_equal(got, want);
    size_t len;
    uint8_t *resp = response_of(req, &len);
    assert_int_equal(len, want_resp_len);
    assert_memory_equal(resp, want_resp, len);
    free(resp);
    free(got);
    expander_request_free(req);
}

static void test_slice_boundaries(void **state) {
    (void)state;
    for (int legacy = 0; legacy < 2; legacy++) {
        fixture_t f = request_make(2, 3, 2, legacy, 2);
        expander_request_t *ref = decode_one(f.bytes, f.len);
        char *want = request_describe(ref);
        size_t want_len;
        uint8_t *want_resp = response_of(ref, &want_len);
        decode_free(ref);

        /* Every cut into two segments. */
        for (size_t c = 0; c <= f.len; c++) {
            expander_segment_t segs[2] = {{f.bytes, c}, {f.bytes + c, f.len - c}};
            check_segments(segs, 2, want, want_resp, want_len);
        }
        /* Every cut into three segments, the middle one short. */
        for (size_t c = 0; c + 5 <= f.len; c++) {
            expander_segment_t segs[3] = {
                {f.bytes, c}, {f.bytes + c, 5}, {f.bytes + c + 5, f.len - c - 5}};
            check_segments(segs, 3, want, want_resp, want_len);
        }
        /* One byte per segment, with empty segments in between. */
        expander_segment_t *segs = calloc(2 * f.len + 1, sizeof(*segs));
        for (size_t i = 0; i < f.len; i++) {
            segs[2 * i] = (expander_segment_t){f.bytes + i, 0};
            segs[2 * i + 1] = (expander_segment_t){f.bytes + i, 1};
        }
        segs[2 * f.len] = (expander_segment_t){f.bytes + f.len, 0};
        check_segments(segs, 2 * f.len + 1, want, want_resp, want_len);
        free(segs);
        free(want_resp);
        free(want);
        free(f.bytes);
    }
}

static void test_invalid(void **state) {
    (void)state;
    expander_request_t *req = NULL;
    frugal_err_t err = {0};
    static const struct {
        const char *what;
        uint8_t bytes[8];
        size_t len;
    } bad[] = {
        {"truncated option", {0x0a, 0x05, 0x0a}, 3},
        {"option as varint", {0x08, 0x01}, 2},
        {"node count as bytes", {0x0a, 0x02, 0x12, 0x00}, 4},
        {"truncated varint", {0x0a, 0x02, 0x10, 0x80}, 4},
        {"field zero", {0x00, 0x01}, 2},
        {"option as a group", {0x0b}, 1},
        {"unknown group without its end", {0x5b, 0x08, 0x01}, 3},
        {"end of a group never started", {0x5c}, 1},
        {"group ended under another number", {0x5b, 0x64}, 2},
        {"pod as varint", {0x0a, 0x02, 0x28, 0x01}, 4},
        {"node entry key as varint", {0x1a, 0x02, 0x08, 0x01}, 4},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        expander_segment_t seg = {bad[i].bytes, bad[i].len};
        int rc = expander_decode(&seg, 1, &req, &err);
        if (rc != FRUGAL_EINVAL)
            fail_msg("%s: got %d", bad[i].what, rc);
        assert_null(req);
        assert_non_null(strstr(err.msg, "BestOptionsRequest"));
    }

    /* Every prefix of a valid request is either valid or rejected, never misread. */
    fixture_t f = request_make(2, 3, 3, false, 2);
    for (size_t c = 0; c < f.len; c++) {
        expander_segment_t seg = {f.bytes, c};
        int rc = expander_decode(&seg, 1, &req, &err);
        assert_true(rc == 0 || rc == FRUGAL_EINVAL);
        expander_request_free(req);
        req = NULL;
    }
    free(f.bytes);

    /* The empty request is valid and has no option. */
    expander_segment_t none = {NULL, 0};
    assert_int_equal(expander_decode(&none, 0, &req, &err), 0);
    assert_int_equal(req->options_count, 0);
    expander_request_free(req);
}

static void test_unknown_fields_and_bad_pod(void **state) {
    (void)state;
    /* option { id "g" (1), count 2, unknown 7: "xyz", podBytes: 0xff (invalid pod),
     * podBytes: "" (empty pod) }, unknown top-level varint 9, node entry for "g". */
    static const uint8_t bytes[] = {
        0x48, 0x05,                               /* field 9 varint 5 */
        0x0a, 0x0f,                               /* option, 15 bytes */
        0x0a, 0x01, 'g',  0x10, 0x02,             /* id, count */
        0x3a, 0x03, 'x',  'y',  'z',              /* unknown field 7 */
        0x2a, 0x01, 0xff,                         /* podBytes: invalid */
        0x2a, 0x00,                               /* podBytes: empty pod */
        0x1a, 0x05, 0x0a, 0x01, 'g',  0x12, 0x00, /* nodeBytesMap g -> empty node */
    };
    expander_request_t *req = decode_one(bytes, sizeof(bytes));
    assert_int_equal(req->options_count, 1);
    const expander_option_t *o = &req->options[0];
    assert_string_equal(o->group_id, "g");
    assert_string_equal(o->debug, "");
    assert_int_equal(o->node_count, 2);
    assert_int_equal(o->pods_count, 2);
    assert_int_equal(o->bad_pod, 0);
    assert_int_not_equal(req->pods[req->pod_refs[0]].rc, 0);
    assert_non_null(req->pods[req->pod_refs[0]].error);
    assert_int_equal(req->pods[req->pod_refs[1]].rc, 0);
    assert_int_equal(req->pods[req->pod_refs[1]].pod.request.cpu_milli, 0);
    /* The unknown field and the pods are echoed in one range. */
    assert_int_equal(o->keep_count, 1);
    assert_int_equal(req->keep[o->keep_first].start, 9);
    assert_int_equal(req->keep[o->keep_first].len, 10);
    assert_non_null(expander_request_find_node(req, "g"));
    assert_int_equal(expander_request_find_node(req, "g")->len, 0);

    size_t sel = 0, len;
    const char *debug = "d";
    uint8_t *out = flattened(req, &sel, 1, &debug, &len, NULL);
    /* The pods once more under the legacy number, after what came. */
    static const uint8_t want[] = {
        0x0a, 0x17, 0x0a, 0x01, 'g',  0x10, 0x02, 0x1a, 0x01, 'd',  0x3a, 0x03, 'x',
        'y',  'z',  0x2a, 0x01, 0xff, 0x2a, 0x00, 0x22, 0x01, 0xff, 0x22, 0x00,
    };
    assert_int_equal(len, sizeof(want));
    assert_memory_equal(out, want, sizeof(want));
    free(out);
    decode_free(req);

    /* Pods that came under both numbers are echoed as they came, not doubled again. */
    static const uint8_t both[] = {
        0x0a, 0x09, 0x0a, 0x01, 'g', 0x22, 0x01, 0xff, 0x2a, 0x01, 0xee,
    };
    req = decode_one(both, sizeof(both));
    assert_true(req->options[0].pods_in_both);
    out = flattened(req, &sel, 1, NULL, &len, NULL);
    assert_int_equal(len, sizeof(both));
    assert_memory_equal(out, both, sizeof(both));
    free(out);
    decode_free(req);
}

/* Both generations read the answer: each option's pods under 4 and under 5, whichever
 * the request used. */
static void response_round_trip(bool legacy) {
    fixture_t f = request_make(3, 4, 2, legacy, 3);
    expander_request_t *req = decode_one(f.bytes, f.len);
    size_t sel[2] = {2, 0};
    const char *debugs[2] = {"debug-2 | frugal: x", NULL};
    size_t len, total;
    uint8_t *out = flattened(req, sel, 2, debugs, &len, NULL);
    Grpcplugin__BestOptionsResponse *br = grpcplugin__best_options_response__unpack(NULL, len, out);
    request_t *orig = grpcplugin__best_options_request__unpack(NULL, f.len, f.bytes);
    assert_non_null(br);
    assert_non_null(orig);
    assert_int_equal(br->n_options, 2);
    assert_string_equal(br->options[0]->nodegroupid, "group-2");
    assert_int_equal(br->options[0]->nodecount, 3);
    assert_string_equal(br->options[0]->debug, "debug-2 | frugal: x");
    assert_string_equal(br->options[1]->nodegroupid, "group-0");
    assert_string_equal(br->options[1]->debug, "debug-0");
    for (size_t i = 0; i < 2; i++) {
        const option_t *a = br->options[i], *b = orig->options[sel[i]];
        const ProtobufCBinaryData *sent = legacy ? b->pod : b->podbytes;
        size_t n = legacy ? b->n_pod : b->n_podbytes;
        assert_int_equal(n, 4);
        assert_int_equal(a->n_pod, n);
        assert_int_equal(a->n_podbytes, n);
        for (size_t k = 0; k < n; k++) {
            assert_int_equal(a->pod[k].len, sent[k].len);
            assert_memory_equal(a->pod[k].data, sent[k].data, sent[k].len);
            assert_int_equal(a->podbytes[k].len, sent[k].len);
            assert_memory_equal(a->podbytes[k].data, sent[k].data, sent[k].len);
        }
    }
    grpcplugin__best_options_request__free_unpacked(orig, NULL);
    grpcplugin__best_options_response__free_unpacked(br, NULL);
    free(out);
    if (legacy) {
        decode_free(req);
        free(f.bytes);
        return;
    }

    /* An empty answer is an empty message. */
    out = flattened(req, NULL, 0, NULL, &len, &total);
    assert_int_equal(total, 0);
    assert_null(out);
    assert_int_equal(len, 0);
    decode_free(req);
    free(f.bytes);

    /* A negative node count is echoed as the ten-byte varint proto3 writes. */
    static const uint8_t neg[] = {0x0a, 0x0e, 0x0a, 0x01, 'n',  0x10, 0xff, 0xff,
                                  0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    req = decode_one(neg, sizeof(neg));
    assert_int_equal(req->options[0].node_count, -1);
    size_t zero = 0;
    out = flattened(req, &zero, 1, NULL, &len, NULL);
    assert_int_equal(len, sizeof(neg));
    assert_memory_equal(out, neg, sizeof(neg));
    free(out);
    decode_free(req);
}

/* Unknown fields are skipped whatever their wire type, groups (proto2) included, and an
 * option's are echoed. */
static void test_unknown_groups(void **state) {
    (void)state;
    static const uint8_t bytes[] = {
        0x5b, 0x08, 0x01, 0x5c,                         /* group 11 {1: 1} */
        0x0a, 0x0d, 0x0a, 0x01, 'g',                    /* option g */
        0x63, 0x5b, 0x08, 0x01, 0x5c, 0x64, 0x10, 0x02, /* group 12 {group 11}, nodeCount 2 */
        0x2a, 0x00,                                     /* podBytes: empty pod */
    };
    expander_request_t *req = decode_one(bytes, sizeof(bytes));
    assert_int_equal(req->options_count, 1);
    assert_string_equal(req->options[0].group_id, "g");
    assert_int_equal(req->options[0].node_count, 2);
    assert_int_equal(req->options[0].pods_count, 1);
    size_t sel = 0, len;
    uint8_t *out = flattened(req, &sel, 1, NULL, &len, NULL);
    static const uint8_t want[] = {
        0x0a, 0x0f, 0x0a, 0x01, 'g',  0x10, 0x02, 0x63, 0x5b,
        0x08, 0x01, 0x5c, 0x64, 0x2a, 0x00, 0x22, 0x00,
    };
    assert_int_equal(len, sizeof(want));
    assert_memory_equal(out, want, sizeof(want));
    free(out);
    decode_free(req);
}

static void test_response_round_trip(void **state) {
    (void)state;
    response_round_trip(false);
    response_round_trip(true);
}

/* An answer of about `mib` MiB of pods of one generation: how its pods are echoed. */
static void large_answer(bool legacy, size_t mib, size_t want_pod, size_t want_podbytes) {
    ProtobufCBinaryData one = pod_make("pod-0", "100m", "64Mi", NULL);
    size_t n = (mib << 20) / (one.len + 3);
    free(one.data);
    fixture_t f = request_make(1, n, 2, legacy, 1);
    expander_request_t *req = decode_one(f.bytes, f.len);
    size_t sel = 0, len, total;
    uint8_t *out = flattened(req, &sel, 1, NULL, &len, &total);
    assert_int_equal(len, total);
    Grpcplugin__BestOptionsResponse *br = grpcplugin__best_options_response__unpack(NULL, len, out);
    assert_non_null(br);
    assert_int_equal(br->n_options, 1);
    assert_string_equal(br->options[0]->nodegroupid, "group-0");
    assert_int_equal(br->options[0]->nodecount, 1);
    assert_string_equal(br->options[0]->debug, "debug-0");
    assert_int_equal(br->options[0]->n_pod, want_pod ? n : 0);
    assert_int_equal(br->options[0]->n_podbytes, want_podbytes ? n : 0);
    bool may_exceed = !legacy && !want_pod && mib > 4; /* CA >= 1.35 receives 128 MiB */
    if (!may_exceed)
        assert_true(len <= EXPANDER_ANSWER_LIMIT);
    grpcplugin__best_options_response__free_unpacked(br, NULL);
    free(out);
    decode_free(req);
    free(f.bytes);
}

/* CA reads only the group ids back, and CA 1.24 to 1.27 refuse an answer over 4 MiB
 * (keeping every option): pods go under both numbers while the answer fits, else as
 * received, and a legacy answer still over 4 MiB leaves them out. */
static void test_large_answers(void **state) {
    (void)state;
    large_answer(false, 1, 1, 1); /* 2 MiB with both: fits */
    large_answer(true, 1, 1, 1);
    large_answer(false, 3, 0, 1); /* 6 MiB with both: as received */
    large_answer(true, 3, 1, 0);
    large_answer(false, 5, 0, 1); /* CA >= 1.35 receives 128 MiB */
    large_answer(true, 5, 0, 0);  /* over 4 MiB as received: no pods */
}

/* --- the service's ranking glue, without gRPC --- */

static frugal_config_t *load_config(const char *yaml) {
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    int rc = config_load_string("test.yaml", yaml, strlen(yaml), &cfg, &errors);
    if (rc != 0)
        fail_msg("config: %s", errors ? errors : "?");
    free(errors);
    return cfg;
}

/* Answer a request through expander__answer, explained or not (the `frugal-explain`
 * metadata); returns the unpacked response. */
static Grpcplugin__BestOptionsResponse *answer_with(const frugal_config_t *cfg, const request_t *r,
                                                    bool explain) {
    size_t len = grpcplugin__best_options_request__get_packed_size(r);
    uint8_t *bytes = malloc(len ? len : 1);
    grpcplugin__best_options_request__pack(r, bytes);
    expander_request_t *req = decode_one(bytes, len);
    expander_response_t resp;
    frugal_err_t err = {0};
    static demand_memory_t memory; /* zeroed: demand_init's state, as serve's */
    service_ctx_t ctx = {.cfg = cfg, .cluster = NULL, .demand = &memory, .explain = explain};
    assert_int_equal(expander__answer(&ctx, req, &resp, &err), 0);
    uint8_t *out;
    size_t out_len;
    assert_int_equal(expander_response_flatten(req, &resp, &out, &out_len, &err), 0);
    static const uint8_t empty[1];
    Grpcplugin__BestOptionsResponse *br =
        grpcplugin__best_options_response__unpack(NULL, out_len, out ? out : empty);
    assert_non_null(br);
    free(out);
    expander_response_free(&resp);
    decode_free(req);
    free(bytes);
    return br;
}

static Grpcplugin__BestOptionsResponse *answer(const frugal_config_t *cfg, const request_t *r) {
    return answer_with(cfg, r, false);
}

/* A call whose deadline has passed is answered DEADLINE_EXCEEDED, and a live one OK. */
static void test_handler_deadline(void **state) {
    (void)state;
    frugal_config_t *cfg = load_config("");
    service_ctx_t ctx = {.cfg = cfg, .cluster = NULL};
    fixture_t fx = request_make(3, 4, 2, false, 3);
    grpc_slice slice = grpc_slice_from_copied_buffer((const char *)fx.bytes, fx.len);
    grpc_byte_buffer *request = grpc_raw_byte_buffer_create(&slice, 1);
    grpc_slice_unref(slice);
    grpc_byte_buffer *response = NULL;
    frugal_err_t err = {0};
    gpr_timespec past =
        gpr_time_sub(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_seconds(1, GPR_TIMESPAN));
    assert_int_equal(
        service_method_call(&service_expander.methods[0], &ctx, request, past, &response, &err),
        FRUGAL_EDEADLINE);
    assert_null(response);
    assert_int_equal(frugal_err_status(FRUGAL_EDEADLINE), GRPC_STATUS_DEADLINE_EXCEEDED);
    gpr_timespec future = gpr_inf_future(GPR_CLOCK_MONOTONIC);
    assert_int_equal(
        service_method_call(&service_expander.methods[0], &ctx, request, future, &response, &err),
        0);
    assert_non_null(response);
    grpc_byte_buffer_destroy(response);
    grpc_byte_buffer_destroy(request);
    free(fx.bytes);
    config_free(cfg);
}

/* The design's case: n1-standard-2, -8 and -32 against a preferred 8-cpu node; the
 * 8-cpu node wins for a 0.1-cpu pod and for a 1.5-cpu pod. */
static void test_answer_design_case(void **state) {
    (void)state;
    frugal_config_t *cfg =
        load_config("ranking:\n  strategy: pricing-proposal\n  preferred_nodes:\n    - {cpu: 8}\n");
    for (int big = 0; big < 2; big++) {
        ProtobufCBinaryData pod = pod_make("p", big ? "1500m" : "100m", NULL, NULL);
        static const char *types[3] = {"n1-standard-2", "n1-standard-8", "n1-standard-32"};
        static const char *cpus[3] = {"2", "8", "32"};
        static const char *ids[3] = {"s2", "s8", "s32"};
        option_t o[3], *op[3];
        ProtobufCBinaryData nodes[3];
        Grpcplugin__BestOptionsRequest__NodeBytesMapEntry e[3], *ep[3];
        for (size_t i = 0; i < 3; i++) {
            option_t init = GRPCPLUGIN__OPTION__INIT;
            Grpcplugin__BestOptionsRequest__NodeBytesMapEntry einit =
                GRPCPLUGIN__BEST_OPTIONS_REQUEST__NODE_BYTES_MAP_ENTRY__INIT;
            o[i] = init;
            o[i].nodegroupid = (char *)ids[i];
            o[i].nodecount = 1;
            o[i].debug = "ca";
            o[i].n_podbytes = 1;
            o[i].podbytes = &pod;
            op[i] = &o[i];
            nodes[i] = node_make(types[i], "us-central1-a", cpus[i]);
            e[i] = einit;
            e[i].key = (char *)ids[i];
            e[i].value = nodes[i];
            ep[i] = &e[i];
        }
        request_t r = GRPCPLUGIN__BEST_OPTIONS_REQUEST__INIT;
        r.n_options = 3;
        r.options = op;
        r.n_nodebytesmap = 3;
        r.nodebytesmap = ep;
        Grpcplugin__BestOptionsResponse *br = answer(cfg, &r);
        assert_int_equal(br->n_options, 1);
        assert_string_equal(br->options[0]->nodegroupid, "s8");
        assert_int_equal(br->options[0]->n_podbytes, 1);
        ranking_figures_t f;
        assert_int_equal(ranking_parse_figures(br->options[0]->debug, &f), 0);
        assert_true(strncmp(br->options[0]->debug, "ca | frugal: node_price=0.380000", 32) == 0);
        assert_true(f.unfitness == 1.0);
        grpcplugin__best_options_response__free_unpacked(br, NULL);

        /* Explained: the winner as before, then the others in request order, with their
         * figures after the not-chosen separator. */
        br = answer_with(cfg, &r, true);
        assert_int_equal(br->n_options, 3);
        static const char *explained[3] = {"s8", "s2", "s32"};
        for (size_t i = 0; i < 3; i++) {
            assert_string_equal(br->options[i]->nodegroupid, explained[i]);
            assert_int_equal(br->options[i]->n_podbytes, 1);
            ranking_figures_t g;
            assert_int_equal(ranking_parse_figures(br->options[i]->debug, &g),
                             i == 0 ? 0 : FRUGAL_EINVAL);
            if (i > 0) {
                assert_int_equal(ranking_parse_figures_after(br->options[i]->debug,
                                                             RANKING_DEBUG_NOT_CHOSEN, &g),
                                 0);
                assert_true(strncmp(br->options[i]->debug, "ca | frugal, not chosen: ", 25) == 0);
                assert_true(g.unfitness == 4.0);
            }
        }
        grpcplugin__best_options_response__free_unpacked(br, NULL);

        /* Without a template for s8 and with a zero node count for s2, s32 is left. */
        r.n_nodebytesmap = 2;
        e[1] = e[2];
        o[0].nodecount = 0;
        br = answer(cfg, &r);
        assert_int_equal(br->n_options, 1);
        assert_string_equal(br->options[0]->nodegroupid, "s32");
        grpcplugin__best_options_response__free_unpacked(br, NULL);

        /* No template at all: every option, unchanged. */
        r.n_nodebytesmap = 0;
        br = answer(cfg, &r);
        assert_int_equal(br->n_options, 3);
        for (size_t i = 0; i < 3; i++) {
            assert_string_equal(br->options[i]->nodegroupid, ids[i]);
            assert_string_equal(br->options[i]->debug, "ca");
        }
        grpcplugin__best_options_response__free_unpacked(br, NULL);
        for (size_t i = 0; i < 3; i++)
            free(nodes[i].data);
        free(pod.data);
    }
    config_free(cfg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_current_fields),
        cmocka_unit_test(test_legacy_fields),
        cmocka_unit_test(test_prefer_current),
        cmocka_unit_test(test_duplicates_decoded_once),
        cmocka_unit_test(test_duplicates_any_order),
        cmocka_unit_test(test_slice_boundaries),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_unknown_fields_and_bad_pod),
        cmocka_unit_test(test_unknown_groups),
        cmocka_unit_test(test_response_round_trip),
        cmocka_unit_test(test_large_answers),
        cmocka_unit_test(test_answer_design_case),
        cmocka_unit_test(test_handler_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
