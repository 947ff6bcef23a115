/* Unit tests of the scheduling predicates (server/core/fit.c): resources, nodeSelector,
 * required node affinity (every operator, ORed terms, matchFields), taints against
 * tolerations (wildcards, Exists, effects, PreferNoSchedule ignored), and the reason
 * of the first failing predicate. Pods and nodes are read from JSON as kubectl prints
 * them (kube_json.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fit.h"
#include "kube_json.h"

static const char node_json[] =
    "{\"kind\": \"Node\", \"metadata\": {\"name\": \"n\", \"labels\": {"
    "\"team\": \"web\", \"tier\": \"3\", \"topology.kubernetes.io/zone\": \"us-central1-a\"}},"
    " \"spec\": {\"taints\": ["
    "  {\"key\": \"dedicated\", \"value\": \"web\", \"effect\": \"NoSchedule\"},"
    "  {\"key\": \"soft\", \"value\": \"x\", \"effect\": \"PreferNoSchedule\"}]},"
    " \"status\": {\"allocatable\": {\"cpu\": \"2\", \"memory\": \"4Gi\", \"pods\": \"110\","
    "  \"ephemeral-storage\": \"100Gi\", \"example.com/fpga\": \"2\"}}}";

static k8s_node_t *node;
static kube_node_list_t nodes;
static const resources_t allocatable = {2000, 4LL << 30, 1};

static int setup(void **state) {
    (void)state;
    kube_json_error_t err;
    if (kube_json_parse_nodes(node_json, strlen(node_json), &nodes, &err) != 0 || nodes.count != 1)
        return -1;
    node = nodes.items[0];
    return 0;
}

static int teardown(void **state) {
    (void)state;
    kube_node_list_clear(&nodes);
    return 0;
}

/* Whether a pod whose spec holds spec_json (the inside of "spec": {...}, after
 * containers) fits the node; the reason in why. */
static bool fits(const char *spec_json, const resources_t *request, char *why, size_t size) {
    char text[4096];
    snprintf(text, sizeof(text),
             "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}, \"spec\": {\"containers\": "
             "[{\"name\": \"c\"}]%s%s}}",
             spec_json[0] != '\0' ? ", " : "", spec_json);
    kube_pod_list_t pods;
    kube_json_error_t err;
    if (kube_json_parse_pods(text, strlen(text), &pods, &err) != 0)
        fail_msg("pod JSON: %s", err.message);
    static const resources_t none = {0, 0, 0};
    why[0] = '\0';
    bool ok = fit_pod(pods.items[0]->spec, request != NULL ? request : &none, node, &allocatable,
                      why, size);
    kube_pod_list_clear(&pods);
    return ok;
}

#define TOLERATE_WEB                                                                               \
    "\"tolerations\": [{\"key\": \"dedicated\", \"operator\": \"Equal\", \"value\": \"web\", "     \
    "\"effect\": \"NoSchedule\"}]"

static void test_resources(void **state) {
    (void)state;
    char why[128];
    resources_t r = {2000, 4LL << 30, 1};
    assert_true(fit_resources(&r, &allocatable, why, sizeof(why)));
    r.cpu_milli = 2500;
    assert_false(fit_resources(&r, &allocatable, why, sizeof(why)));
    assert_string_equal(why, "cpu 2500m > 2");
    r = (resources_t){100, 5LL << 30, 0};
    assert_false(fit_resources(&r, &allocatable, why, sizeof(why)));
    assert_string_equal(why, "memory 5Gi > 4Gi");
    r = (resources_t){100, 0, 2};
    assert_false(fit_resources(&r, &allocatable, why, sizeof(why)));
    assert_string_equal(why, "gpu 2 > 1");
    /* No room for a reason: only the answer. */
    assert_false(fit_resources(&r, &allocatable, NULL, 0));
}

static void test_node_selector(void **state) {
    (void)state;
    char why[128];
    assert_true(
        fits(TOLERATE_WEB ", \"nodeSelector\": {\"team\": \"web\"}", NULL, why, sizeof(why)));
    assert_false(
        fits(TOLERATE_WEB ", \"nodeSelector\": {\"team\": \"db\"}", NULL, why, sizeof(why)));
    assert_string_equal(why, "node selector team=db");
    assert_false(
        fits(TOLERATE_WEB ", \"nodeSelector\": {\"gpu\": \"yes\"}", NULL, why, sizeof(why)));
    assert_string_equal(why, "node selector gpu=yes");
}

static bool affinity(const char *terms, char *why, size_t size) {
    char spec[2048];
    snprintf(spec, sizeof(spec),
             TOLERATE_WEB ", \"affinity\": {\"nodeAffinity\": "
                          "{\"requiredDuringSchedulingIgnoredDuringExecution\": "
                          "{\"nodeSelectorTerms\": [%s]}}}",
             terms);
    return fits(spec, NULL, why, size);
}

#define EXPR(key, op, values)                                                                      \
    "{\"matchExpressions\": [{\"key\": \"" key "\", \"operator\": \"" op                           \
    "\", \"values\": [" values "]}]}"

static void test_node_affinity(void **state) {
    (void)state;
    char why[128];
    assert_true(affinity(EXPR("team", "In", "\"db\", \"web\""), why, sizeof(why)));
    assert_false(affinity(EXPR("team", "In", "\"db\""), why, sizeof(why)));
    assert_string_equal(why, "required node affinity");
    assert_true(affinity(EXPR("team", "NotIn", "\"db\""), why, sizeof(why)));
    assert_false(affinity(EXPR("team", "NotIn", "\"web\""), why, sizeof(why)));
    assert_true(affinity(EXPR("absent", "NotIn", "\"web\""), why, sizeof(why)));
    assert_true(affinity(EXPR("team", "Exists", ""), why, sizeof(why)));
    assert_false(affinity(EXPR("absent", "Exists", ""), why, sizeof(why)));
    assert_true(affinity(EXPR("absent", "DoesNotExist", ""), why, sizeof(why)));
    assert_false(affinity(EXPR("team", "DoesNotExist", ""), why, sizeof(why)));
    assert_true(affinity(EXPR("tier", "Gt", "\"2\""), why, sizeof(why)));
    assert_false(affinity(EXPR("tier", "Gt", "\"3\""), why, sizeof(why)));
    assert_true(affinity(EXPR("tier", "Lt", "\"4\""), why, sizeof(why)));
    assert_false(affinity(EXPR("team", "Lt", "\"4\""), why, sizeof(why))); /* not a number */
    assert_false(affinity(EXPR("team", "Sideways", "\"web\""), why, sizeof(why)));
    /* Terms are ORed; a term naming fields never holds for a node to be created. */
    assert_true(affinity(EXPR("team", "In", "\"db\"") ", " EXPR("team", "In", "\"web\""), why,
                         sizeof(why)));
    assert_false(affinity("{\"matchFields\": [{\"key\": \"metadata.name\", \"operator\": \"In\", "
                          "\"values\": [\"n\"]}]}",
                          why, sizeof(why)));
}

static void test_taints(void **state) {
    (void)state;
    char why[128];
    /* PreferNoSchedule never keeps a pod off; NoSchedule does. */
    assert_false(fits("", NULL, why, sizeof(why)));
    assert_string_equal(why, "taint dedicated=web:NoSchedule");
    assert_true(fits(TOLERATE_WEB, NULL, why, sizeof(why)));
    assert_false(fits("\"tolerations\": [{\"key\": \"dedicated\", \"value\": \"db\"}]", NULL, why,
                      sizeof(why)));
    assert_true(fits("\"tolerations\": [{\"key\": \"dedicated\", \"operator\": \"Exists\"}]", NULL,
                     why, sizeof(why)));
    assert_false(fits("\"tolerations\": [{\"key\": \"dedicated\", \"operator\": \"Exists\", "
                      "\"effect\": \"NoExecute\"}]",
                      NULL, why, sizeof(why)));
    assert_true(fits("\"tolerations\": [{\"operator\": \"Exists\"}]", NULL, why, sizeof(why)));
    assert_false(fits("\"tolerations\": [{\"value\": \"web\"}]", NULL, why, sizeof(why)));
}

/* Whether a pod of the given containers (and whatever else spec_json holds) passes
 * fit_named_resources on the node; the reason in why. */
static bool named_fits(const char *containers, const char *spec_json, char *why, size_t size) {
    char text[4096];
    snprintf(text, sizeof(text),
             "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}, \"spec\": {\"containers\": "
             "[%s]%s%s}}",
             containers, spec_json[0] != '\0' ? ", " : "", spec_json);
    kube_pod_list_t pods;
    kube_json_error_t err;
    if (kube_json_parse_pods(text, strlen(text), &pods, &err) != 0)
        fail_msg("pod JSON: %s", err.message);
    why[0] = '\0';
    bool ok = fit_named_resources(pods.items[0]->spec, node, why, size);
    kube_pod_list_clear(&pods);
    return ok;
}

#define REQ(name, q) "{\"name\": \"c\", \"resources\": {\"requests\": {\"" name "\": \"" q "\"}}}"
#define SIDECAR(q)                                                                                 \
    "{\"name\": \"s\", \"restartPolicy\": \"Always\", \"resources\": {\"requests\": "              \
    "{\"example.com/fpga\": \"" q "\"}}}"
#define LIM(name, q) "{\"name\": \"c\", \"resources\": {\"limits\": {\"" name "\": \"" q "\"}}}"

/* Resources beyond cpu, memory and GPUs: what the node lists, 0 for what it does not,
 * combined over containers, init containers, sidecars and overhead as the scheduler does. */
static void test_named_resources(void **state) {
    (void)state;
    char why[128];
    assert_true(named_fits(REQ("example.com/fpga", "2"), "", why, sizeof(why)));
    assert_false(named_fits(REQ("example.com/fpga", "2") "," REQ("example.com/fpga", "1"), "", why,
                            sizeof(why)));
    assert_string_equal(why, "example.com/fpga 3 > 2");
    /* a limit alone is the request */
    assert_false(named_fits(LIM("example.com/fpga", "3"), "", why, sizeof(why)));
    assert_string_equal(why, "example.com/fpga 3 > 2");
    /* a resource the node does not list */
    assert_false(named_fits(REQ("acme.io/dongle", "1"), "", why, sizeof(why)));
    assert_string_equal(why, "acme.io/dongle 1 > 0");
    assert_true(named_fits(REQ("acme.io/dongle", "0"), "", why, sizeof(why)));
    assert_true(named_fits(REQ("ephemeral-storage", "100Gi"), "", why, sizeof(why)));
    assert_false(named_fits(REQ("ephemeral-storage", "101Gi"), "", why, sizeof(why)));
    assert_string_equal(why, "ephemeral-storage 101Gi > 100Gi");
    /* an ordinary init container runs alone: the larger of it and the containers */
    assert_true(named_fits(REQ("example.com/fpga", "1"),
                           "\"initContainers\": [" REQ("example.com/fpga", "2") "]", why,
                           sizeof(why)));
    assert_false(named_fits(REQ("example.com/fpga", "1"),
                            "\"initContainers\": [" REQ("example.com/fpga", "3") "]", why,
                            sizeof(why)));
    assert_string_equal(why, "example.com/fpga 3 > 2");
    /* ... with the sidecars declared before it, not those after */
    assert_false(
        named_fits(REQ("example.com/fpga", "0"),
                   "\"initContainers\": [" SIDECAR("1") "," REQ("example.com/fpga", "2") "]", why,
                   sizeof(why)));
    assert_string_equal(why, "example.com/fpga 3 > 2");
    assert_true(
        named_fits(REQ("example.com/fpga", "0"),
                   "\"initContainers\": [" REQ("example.com/fpga", "2") "," SIDECAR("1") "]", why,
                   sizeof(why)));
    /* a sidecar runs beside the containers: summed */
    assert_false(named_fits(REQ("example.com/fpga", "2"),
                            "\"initContainers\": [{\"name\": \"s\", \"restartPolicy\": \"Always\", "
                            "\"resources\": {\"requests\": {\"example.com/fpga\": \"1\"}}}]",
                            why, sizeof(why)));
    assert_string_equal(why, "example.com/fpga 3 > 2");
    assert_false(named_fits(REQ("example.com/fpga", "2"),
                            "\"overhead\": {\"example.com/fpga\": \"1\"}", why, sizeof(why)));
    assert_string_equal(why, "example.com/fpga 3 > 2");
    /* cpu, memory and GPUs are fit_resources' */
    assert_true(named_fits(REQ("cpu", "64") "," REQ("nvidia.com/gpu", "8"), "", why, sizeof(why)));
    assert_false(named_fits(REQ("example.com/fpga", "x"), "", why, sizeof(why)));
    assert_string_equal(why, "example.com/fpga: invalid quantity");
    /* pod-level resources count for hugepages: the node lists none */
    assert_false(named_fits(REQ("cpu", "1"),
                            "\"resources\": {\"requests\": {\"hugepages-2Mi\": \"4Mi\"}}", why,
                            sizeof(why)));
    assert_string_equal(why, "hugepages-2Mi 4Mi > 0");
    assert_true(fit_named_resources(NULL, node, why, sizeof(why)));
    /* fit_pod checks them after cpu, memory and GPUs */
    static const resources_t big = {3000, 0, 0};
    kube_pod_list_t pods;
    kube_json_error_t err;
    const char *json = "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\"}, \"spec\": "
                       "{\"containers\": [" REQ("acme.io/dongle", "1") "]}}";
    assert_int_equal(kube_json_parse_pods(json, strlen(json), &pods, &err), 0);
    assert_false(fit_pod(pods.items[0]->spec, &big, node, &allocatable, why, sizeof(why)));
    assert_string_equal(why, "cpu 3 > 2");
    assert_false(fit_pod(pods.items[0]->spec, &allocatable, node, &allocatable, why, sizeof(why)));
    assert_string_equal(why, "acme.io/dongle 1 > 0");
    kube_pod_list_clear(&pods);
}

static void test_first_failure_gives_the_reason(void **state) {
    (void)state;
    char why[128];
    resources_t big = {3000, 0, 0};
    /* Resources first, then the selector, the affinity, the taints. */
    assert_false(fits("\"nodeSelector\": {\"team\": \"db\"}", &big, why, sizeof(why)));
    assert_string_equal(why, "cpu 3 > 2");
    assert_false(fits("\"nodeSelector\": {\"team\": \"db\"}", NULL, why, sizeof(why)));
    assert_string_equal(why, "node selector team=db");
    assert_true(fit_taints(NULL, NULL, why, sizeof(why)));
    assert_true(fit_node_selector(NULL, node, why, sizeof(why)));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resources),
        cmocka_unit_test(test_node_selector),
        cmocka_unit_test(test_node_affinity),
        cmocka_unit_test(test_taints),
        cmocka_unit_test(test_named_resources),
        cmocka_unit_test(test_first_failure_gives_the_reason),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
