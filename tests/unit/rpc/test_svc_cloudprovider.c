/* The CloudProvider handlers called directly (no network): each RPC's answer in both
 * wire generations, and each refusal's status with nothing changed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <grpc/grpc.h>

#include "cluster.h"
#include "codec.h"
#include "externalgrpc.pb-c.h"
#include "k8s.h"
#include "provider.h"
#include "service.h"
#include "svc_harness.h"
#include "wire_names.h"

static const char config_text[] = "node_groups:\n"
                                  "  - id: pool-a\n"
                                  "    machine_type: n1-standard-2\n"
                                  "    zone: us-central1-a\n"
                                  "    min_size: 1\n"
                                  "    max_size: 5\n"
                                  "    labels: {team: web}\n"
                                  "    taints: [{key: dedicated, value: web, effect: NoSchedule}]\n"
                                  "    options: {max_node_provision: 7m}\n"
                                  "  - id: spot-8\n"
                                  "    machine_type: n1-standard-8\n"
                                  "    spot: true\n"
                                  "    max_size: 3\n"
                                  "  - id: main\n"
                                  "    machine_type: n1-standard-2\n"
                                  "    size: 2\n"
                                  "    managed: false\n";

typedef svc_fx_t fx_t;

static int fx_setup(void **state) {
    *state = svc_fx_open(config_text);
    return 0;
}

static int call(fx_t *f, const char *method, const ProtobufCMessage *req,
                const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp,
                frugal_err_t *err) {
    return svc_call(f, &service_cloudprovider, method, req, resp_desc, resp, err);
}

static int32_t target_size(fx_t *f, const char *id) {
    EG(NodeGroupTargetSizeRequest) req = EG_INIT(NODE_GROUP_TARGET_SIZE_REQUEST);
    req.id = (char *)id;
    EG(NodeGroupTargetSizeResponse) * resp;
    frugal_err_t err;
    assert_int_equal(call(f, "NodeGroupTargetSize", &req.base,
                          EG_DESC(node_group_target_size_response), (ProtobufCMessage **)&resp,
                          &err),
                     0);
    int32_t n = resp->targetsize;
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return n;
}

static int increase(fx_t *f, const char *id, int32_t delta, frugal_err_t *err) {
    EG(NodeGroupIncreaseSizeRequest) req = EG_INIT(NODE_GROUP_INCREASE_SIZE_REQUEST);
    req.id = (char *)id;
    req.delta = delta;
    return call(f, "NodeGroupIncreaseSize", &req.base, NULL, NULL, err);
}

static void test_node_groups_lists_managed_only(void **state) {
    fx_t *f = *state;
    EG(NodeGroupsRequest) req = EG_INIT(NODE_GROUPS_REQUEST);
    EG(NodeGroupsResponse) * resp;
    frugal_err_t err;
    assert_int_equal(call(f, "NodeGroups", &req.base, EG_DESC(node_groups_response),
                          (ProtobufCMessage **)&resp, &err),
                     0);
    assert_int_equal(resp->n_nodegroups, 2);
    assert_string_equal(resp->nodegroups[0]->id, "pool-a");
    assert_int_equal(resp->nodegroups[0]->minsize, 1);
    assert_int_equal(resp->nodegroups[0]->maxsize, 5);
    assert_string_equal(resp->nodegroups[1]->id, "spot-8");
    protobuf_c_message_free_unpacked(&resp->base, NULL);
}

static void test_increase_and_refusals(void **state) {
    fx_t *f = *state;
    frugal_err_t err;
    assert_int_equal(target_size(f, "pool-a"), 1);
    assert_int_equal(increase(f, "pool-a", 2, &err), 0);
    assert_int_equal(target_size(f, "pool-a"), 3);

    assert_int_equal(frugal_err_status(increase(f, "pool-a", 3, &err)),
                     GRPC_STATUS_FAILED_PRECONDITION);
    assert_non_null(strstr(err.msg, "max_size 5"));
    assert_int_equal(frugal_err_status(increase(f, "pool-a", 0, &err)),
                     GRPC_STATUS_INVALID_ARGUMENT);
    assert_int_equal(frugal_err_status(increase(f, "nope", 1, &err)), GRPC_STATUS_NOT_FOUND);
    assert_int_equal(frugal_err_status(increase(f, "main", 1, &err)),
                     GRPC_STATUS_FAILED_PRECONDITION);
    assert_int_equal(target_size(f, "pool-a"), 3);
    assert_int_equal(target_size(f, "main"), 2);

    EG(NodeGroupDecreaseTargetSizeRequest) dec = EG_INIT(NODE_GROUP_DECREASE_TARGET_SIZE_REQUEST);
    dec.id = "pool-a";
    dec.delta = 1;
    assert_int_equal(
        frugal_err_status(call(f, "NodeGroupDecreaseTargetSize", &dec.base, NULL, NULL, &err)),
        GRPC_STATUS_INVALID_ARGUMENT);
    assert_int_equal(target_size(f, "pool-a"), 3);
}

static void test_nodes_and_delete(void **state) {
    fx_t *f = *state;
    frugal_err_t err;
    assert_int_equal(increase(f, "pool-a", 2, &err), 0);
    EG(NodeGroupNodesRequest) req = EG_INIT(NODE_GROUP_NODES_REQUEST);
    req.id = "pool-a";
    EG(NodeGroupNodesResponse) * resp;
    assert_int_equal(call(f, "NodeGroupNodes", &req.base, EG_DESC(node_group_nodes_response),
                          (ProtobufCMessage **)&resp, &err),
                     0);
    assert_int_equal(resp->n_instances, 3);
    assert_string_equal(resp->instances[0]->id, "frugal://pool-a/pool-a-1");
    assert_true(resp->instances[0]->status->instancestate == 1 ||
                resp->instances[0]->status->instancestate == 2);

    EG(ExternalGrpcNode) node = EG_INIT(EXTERNAL_GRPC_NODE);
    EG(ExternalGrpcNode) * nodes[] = {&node};
    EG(NodeGroupDeleteNodesRequest) del = EG_INIT(NODE_GROUP_DELETE_NODES_REQUEST);
    del.id = "pool-a";
    del.n_nodes = 1;
    del.nodes = nodes;
    node.providerid = "frugal://spot-8/spot-8-1";
    assert_int_equal(
        frugal_err_status(call(f, "NodeGroupDeleteNodes", &del.base, NULL, NULL, &err)),
        GRPC_STATUS_INVALID_ARGUMENT);
    node.providerid = resp->instances[2]->id;
    assert_int_equal(call(f, "NodeGroupDeleteNodes", &del.base, NULL, NULL, &err), 0);
    assert_int_equal(target_size(f, "pool-a"), 2);
    protobuf_c_message_free_unpacked(&resp->base, NULL);

    /* NodeGroupForNode: by provider id; an unknown node is id "" and OK. */
    EG(NodeGroupForNodeRequest) ngfn = EG_INIT(NODE_GROUP_FOR_NODE_REQUEST);
    EG(NodeGroupForNodeResponse) * owner;
    node.providerid = "frugal://pool-a/pool-a-1";
    ngfn.node = &node;
    assert_int_equal(call(f, "NodeGroupForNode", &ngfn.base, EG_DESC(node_group_for_node_response),
                          (ProtobufCMessage **)&owner, &err),
                     0);
    assert_string_equal(owner->nodegroup->id, "pool-a");
    protobuf_c_message_free_unpacked(&owner->base, NULL);
    node.providerid = "aws:///us-east-1a/i-123";
    assert_int_equal(call(f, "NodeGroupForNode", &ngfn.base, EG_DESC(node_group_for_node_response),
                          (ProtobufCMessage **)&owner, &err),
                     0);
    assert_true(owner->nodegroup == NULL || owner->nodegroup->id[0] == '\0');
    protobuf_c_message_free_unpacked(&owner->base, NULL);
}

static void test_template_both_generations(void **state) {
    fx_t *f = *state;
    frugal_err_t err;
    EG(NodeGroupTemplateNodeInfoRequest) req = EG_INIT(NODE_GROUP_TEMPLATE_NODE_INFO_REQUEST);
    req.id = "pool-a";
    EG(NodeGroupTemplateNodeInfoResponse) * resp;
    assert_int_equal(call(f, "NodeGroupTemplateNodeInfo", &req.base,
                          EG_DESC(node_group_template_node_info_response),
                          (ProtobufCMessage **)&resp, &err),
                     0);
    assert_true(resp->nodebytes.len > 0);
    assert_int_equal(resp->nodeinfo.len, resp->nodebytes.len);
    assert_memory_equal(resp->nodeinfo.data, resp->nodebytes.data, resp->nodebytes.len);
    k8s_node_t *node =
        k8s__io__api__core__v1__node__unpack(NULL, resp->nodebytes.len, resp->nodebytes.data);
    assert_non_null(node);
    assert_string_equal(node->metadata->name, "template-pool-a");
    assert_int_equal(node->spec->n_taints, 1);
    assert_string_equal(node->spec->taints[0]->key, "dedicated");
    k8s__io__api__core__v1__node__free_unpacked(node, NULL);
    protobuf_c_message_free_unpacked(&resp->base, NULL);

    req.id = "main"; /* unmanaged groups are not offered to CA */
    assert_int_equal(
        frugal_err_status(call(f, "NodeGroupTemplateNodeInfo", &req.base, NULL, NULL, &err)),
        GRPC_STATUS_NOT_FOUND);
}

/* NodeGroupGetOptions of req, which must succeed. */
static EG(NodeGroupAutoscalingOptionsResponse) *
    options_ok(fx_t *f, EG(NodeGroupAutoscalingOptionsRequest) * req) {
    frugal_err_t err;
    EG(NodeGroupAutoscalingOptionsResponse) *resp = NULL;
    assert_int_equal(call(f, "NodeGroupGetOptions", &req->base,
                          EG_DESC(node_group_autoscaling_options_response),
                          (ProtobufCMessage **)&resp, &err),
                     0);
    return resp;
}

static void test_options_fill_both_generations(void **state) {
    fx_t *f = *state;
    Google__Protobuf__Duration unneeded = GOOGLE__PROTOBUF__DURATION__INIT;
    unneeded.seconds = 300;
    EG(NodeGroupAutoscalingOptions) defaults = EG_INIT(NODE_GROUP_AUTOSCALING_OPTIONS);
    defaults.scaledownutilizationthreshold = 0.4;
    defaults.scaledownunneededduration = &unneeded;
    EG(NodeGroupAutoscalingOptionsRequest) req = EG_INIT(NODE_GROUP_AUTOSCALING_OPTIONS_REQUEST);
    req.id = "pool-a";
    req.defaults = &defaults;
    EG(NodeGroupAutoscalingOptionsResponse) * resp;
    resp = options_ok(f, &req);
    const EG(NodeGroupAutoscalingOptions) *o = resp->nodegroupautoscalingoptions;
    assert_true(o->scaledownutilizationthreshold == 0.4);
    assert_int_equal(o->scaledownunneededduration->seconds, 300);
    assert_int_equal(o->scaledownunneededtime->duration, 300LL * 1000000000);
    /* The group's override wins; the caller sent nothing for unready: CA's default. */
    assert_int_equal(o->maxnodeprovisionduration->seconds, 420);
    assert_int_equal(o->maxnodeprovisiontime->duration, 420LL * 1000000000);
    assert_int_equal(o->scaledownunreadyduration->seconds, 1200);
    assert_int_equal(o->scaledownunreadytime->duration, 1200LL * 1000000000);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
}

/* A group without overrides: UNIMPLEMENTED, so CA >= 1.35 applies all of its own defaults
 * (MaxNodeStartupTime included, which the protocol cannot carry). */
static void test_options_unimplemented_without_overrides(void **state) {
    fx_t *f = *state;
    frugal_err_t err;
    EG(NodeGroupAutoscalingOptionsRequest) req = EG_INIT(NODE_GROUP_AUTOSCALING_OPTIONS_REQUEST);
    req.id = "spot-8";
    assert_int_equal(frugal_err_status(call(f, "NodeGroupGetOptions", &req.base, NULL, NULL, &err)),
                     GRPC_STATUS_UNIMPLEMENTED);
    assert_non_null(strstr(err.msg, "spot-8"));
    req.id = "nosuch";
    assert_int_equal(frugal_err_status(call(f, "NodeGroupGetOptions", &req.base, NULL, NULL, &err)),
                     GRPC_STATUS_NOT_FOUND);
}

/* CA 1.25-1.28 take UNIMPLEMENTED for a failure (no scale-down for the group), 1.27 and
 * 1.28 read a group's max node provision time as 0, and they send only the two legacy
 * scale-down times: they get an answer without options, overrides or not, which every
 * CA reads as "apply your defaults". From 1.29 on (a provision time in either
 * generation) the answer is UNIMPLEMENTED again. */
static void test_options_for_ca_before_1_29(void **state) {
    fx_t *f = *state;
    frugal_err_t err;
    K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Duration unneeded =
        K8S__IO__APIMACHINERY__PKG__APIS__META__V1__DURATION__INIT;
    unneeded.has_duration = 1;
    unneeded.duration = 600LL * 1000000000;
    K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Duration unready = unneeded;
    EG(NodeGroupAutoscalingOptions) defaults = EG_INIT(NODE_GROUP_AUTOSCALING_OPTIONS);
    defaults.scaledownutilizationthreshold = 0.5;
    defaults.scaledownunneededtime = &unneeded;
    defaults.scaledownunreadytime = &unready;
    EG(NodeGroupAutoscalingOptionsRequest) req = EG_INIT(NODE_GROUP_AUTOSCALING_OPTIONS_REQUEST);
    req.id = "spot-8";
    req.defaults = &defaults;
    EG(NodeGroupAutoscalingOptionsResponse) * resp;
    resp = options_ok(f, &req);
    assert_null(resp->nodegroupautoscalingoptions);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    req.id = "pool-a"; /* overrides max_node_provision: still none for such a caller */
    resp = options_ok(f, &req);
    assert_null(resp->nodegroupautoscalingoptions);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    req.id = "spot-8";

    K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Duration provision = unneeded;
    defaults.maxnodeprovisiontime = &provision; /* CA 1.29-1.34 */
    assert_int_equal(frugal_err_status(call(f, "NodeGroupGetOptions", &req.base, NULL, NULL, &err)),
                     GRPC_STATUS_UNIMPLEMENTED);
    Google__Protobuf__Duration current = GOOGLE__PROTOBUF__DURATION__INIT;
    current.seconds = 900;
    defaults.maxnodeprovisiontime = NULL;
    defaults.scaledownunneededtime = defaults.scaledownunreadytime = NULL;
    defaults.maxnodeprovisionduration = &current; /* CA >= 1.35 */
    assert_int_equal(frugal_err_status(call(f, "NodeGroupGetOptions", &req.base, NULL, NULL, &err)),
                     GRPC_STATUS_UNIMPLEMENTED);
    req.id = "nosuch";
    defaults.maxnodeprovisionduration = NULL;
    defaults.scaledownunneededtime = &unneeded;
    assert_int_equal(frugal_err_status(call(f, "NodeGroupGetOptions", &req.base, NULL, NULL, &err)),
                     GRPC_STATUS_NOT_FOUND);
}

/* Defaults CA could never mean (zero, negative, overflowing) fall back to CA's own. */
static void test_options_never_zero(void **state) {
    fx_t *f = *state;
    Google__Protobuf__Duration huge = GOOGLE__PROTOBUF__DURATION__INIT;
    huge.seconds = (int64_t)1 << 55; /* x 1e9 wraps to exactly 0 in int64 */
    Google__Protobuf__Duration zero = GOOGLE__PROTOBUF__DURATION__INIT;
    K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Duration negative =
        K8S__IO__APIMACHINERY__PKG__APIS__META__V1__DURATION__INIT;
    negative.has_duration = 1;
    negative.duration = -5;
    EG(NodeGroupAutoscalingOptions) defaults = EG_INIT(NODE_GROUP_AUTOSCALING_OPTIONS);
    defaults.scaledownunneededduration = &huge;
    defaults.scaledownunreadyduration = &zero;
    defaults.scaledownunreadytime = &negative;
    EG(NodeGroupAutoscalingOptionsRequest) req = EG_INIT(NODE_GROUP_AUTOSCALING_OPTIONS_REQUEST);
    req.id = "pool-a"; /* overrides max_node_provision only */
    req.defaults = &defaults;
    EG(NodeGroupAutoscalingOptionsResponse) * resp;
    resp = options_ok(f, &req);
    const EG(NodeGroupAutoscalingOptions) *o = resp->nodegroupautoscalingoptions;
    assert_int_equal(o->scaledownunneededduration->seconds, 600);
    assert_int_equal(o->scaledownunreadyduration->seconds, 1200);
    assert_int_equal(o->maxnodeprovisionduration->seconds, 420);
    assert_int_equal(o->maxnodeprovisiontime->duration, 420LL * 1000000000);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
}

static double node_price(fx_t *f, EG(ExternalGrpcNode) * node, bool legacy, int64_t hours,
                         int *rc) {
    Google__Protobuf__Timestamp start = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
    Google__Protobuf__Timestamp end = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
    K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Time lstart =
        K8S__IO__APIMACHINERY__PKG__APIS__META__V1__TIME__INIT;
    K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Time lend =
        K8S__IO__APIMACHINERY__PKG__APIS__META__V1__TIME__INIT;
    EG(PricingNodePriceRequest) req = EG_INIT(PRICING_NODE_PRICE_REQUEST);
    req.node = node;
    start.seconds = lstart.seconds = 1700000000;
    end.seconds = lend.seconds = 1700000000 + hours * 3600;
    lstart.has_seconds = lend.has_seconds = 1;
    if (legacy) {
        req.starttime = &lstart;
        req.endtime = &lend;
    } else {
        req.starttimestamp = &start;
        req.endtimestamp = &end;
    }
    EG(PricingNodePriceResponse) * resp;
    frugal_err_t err;
    *rc = call(f, "PricingNodePrice", &req.base, EG_DESC(pricing_node_price_response),
               (ProtobufCMessage **)&resp, &err);
    if (*rc != 0)
        return -1;
    double price = resp->price;
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return price;
}

static void test_node_price_resolution(void **state) {
    fx_t *f = *state;
    int rc;
    EG(ExternalGrpcNode) node = EG_INIT(EXTERNAL_GRPC_NODE);
    /* A CA template node: no provider id, only its name. */
    node.name = "template-node-for-pool-a-5812";
    assert_float_equal(node_price(f, &node, false, 2, &rc), 0.19, 1e-9);
    assert_float_equal(node_price(f, &node, true, 2, &rc), 0.19, 1e-9);
    /* spot: the preemptible price; "spot-8" must not be mistaken for a prefix match. */
    node.name = "template-node-for-spot-8-77";
    assert_float_equal(node_price(f, &node, false, 1, &rc), 0.08, 1e-9);
    /* Inverted period. */
    assert_float_equal(node_price(f, &node, false, -1, &rc), -1, 0);
    assert_int_equal(frugal_err_status(rc), GRPC_STATUS_INVALID_ARGUMENT);
    /* Extreme timestamps do not overflow: a huge but valid period. */
    {
        Google__Protobuf__Timestamp start = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
        Google__Protobuf__Timestamp end = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
        start.seconds = INT64_MIN;
        end.seconds = INT64_MAX;
        EG(PricingNodePriceRequest) req = EG_INIT(PRICING_NODE_PRICE_REQUEST);
        req.node = &node;
        req.starttimestamp = &start;
        req.endtimestamp = &end;
        EG(PricingNodePriceResponse) * resp;
        frugal_err_t err;
        assert_int_equal(call(f, "PricingNodePrice", &req.base,
                              EG_DESC(pricing_node_price_response), (ProtobufCMessage **)&resp,
                              &err),
                         0);
        assert_true(resp->price > 0);
        protobuf_c_message_free_unpacked(&resp->base, NULL);
    }
    /* Unknown everything: NOT_FOUND. */
    node.name = "some-node";
    node_price(f, &node, false, 1, &rc);
    assert_int_equal(frugal_err_status(rc), GRPC_STATUS_NOT_FOUND);
}

static void test_garbage_is_invalid_argument(void **state) {
    fx_t *f = *state;
    svc_expect_garbage_refused(f, &service_cloudprovider);
    assert_int_equal(target_size(f, "pool-a"), 1);
}

int main(void) {
    grpc_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_node_groups_lists_managed_only, fx_setup,
                                        svc_fx_teardown),
        cmocka_unit_test_setup_teardown(test_increase_and_refusals, fx_setup, svc_fx_teardown),
        cmocka_unit_test_setup_teardown(test_nodes_and_delete, fx_setup, svc_fx_teardown),
        cmocka_unit_test_setup_teardown(test_template_both_generations, fx_setup, svc_fx_teardown),
        cmocka_unit_test_setup_teardown(test_options_fill_both_generations, fx_setup,
                                        svc_fx_teardown),
        cmocka_unit_test_setup_teardown(test_options_never_zero, fx_setup, svc_fx_teardown),
        cmocka_unit_test_setup_teardown(test_options_for_ca_before_1_29, fx_setup, svc_fx_teardown),
        cmocka_unit_test_setup_teardown(test_options_unimplemented_without_overrides, fx_setup,
                                        svc_fx_teardown),
        cmocka_unit_test_setup_teardown(test_node_price_resolution, fx_setup, svc_fx_teardown),
        cmocka_unit_test_setup_teardown(test_garbage_is_invalid_argument, fx_setup,
                                        svc_fx_teardown),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    grpc_shutdown();
    return failed;
}
