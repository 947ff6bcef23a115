/* Unit tests of server/core/kube_json.c: kubectl's JSON (and YAML) pod and node lists into
 * the generated structs, fed on to pod_effective_request and propose_pod_from_k8s;
 * quantities as strings or numbers; empty objects, arrays and nulls; compact JSON;
 * duplicate keys (the last wins);
 * errors with line, column and path; no leaks on any path (run under ASan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube_json.h"
#include "pod.h"
#include "propose.h"

#define MI 1048576LL
#define GI 1073741824LL

/* A pod list shaped like `kubectl get pods -A -o json`, with the noise kubectl prints. */
static const char kubectl_pods[] =
    "{\n"
    "    \"apiVersion\": \"v1\",\n"
    "    \"items\": [\n"
    "        {\n"
    "            \"apiVersion\": \"v1\",\n"
    "            \"kind\": \"Pod\",\n"
    "            \"metadata\": {\n"
    "                \"creationTimestamp\": \"2024-05-01T10:00:00Z\",\n"
    "                \"generateName\": \"web-7d4b9c-\",\n"
    "                \"labels\": {\"app\": \"web\", \"pod-template-hash\": \"7d4b9c\"},\n"
    "                \"name\": \"web-7d4b9c-x2x\",\n"
    "                \"namespace\": \"shop\",\n"
    "                \"ownerReferences\": [{\"apiVersion\": \"apps/v1\", \"blockOwnerDeletion\": "
    "true,\n"
    "                    \"controller\": true, \"kind\": \"ReplicaSet\", \"name\": \"web-7d4b9c\", "
    "\"uid\": \"u1\"}],\n"
    "                \"managedFields\": [{\"fieldsV1\": {\"f:spec\": {\"f:containers\": "
    "{\"k:{\\\"name\\\":\\\"web\\\"}\": {\".\": {}}}}},\n"
    "                    \"manager\": \"kube-controller-manager\", \"operation\": \"Update\"}],\n"
    "                \"resourceVersion\": \"123\",\n"
    "                \"uid\": \"a-b-c\"\n"
    "            },\n"
    "            \"spec\": {\n"
    "                \"affinity\": {\"nodeAffinity\": "
    "{\"requiredDuringSchedulingIgnoredDuringExecution\": {\n"
    "                    \"nodeSelectorTerms\": [{\"matchExpressions\": [\n"
    "                        {\"key\": \"topology.kubernetes.io/zone\", \"operator\": \"In\", "
    "\"values\": [\"us-central1-a\"]}]}]}}},\n"
    "                \"containers\": [\n"
    "                    {\"image\": \"nginx:1.25\", \"name\": \"web\", \"ports\": "
    "[{\"containerPort\": 80, \"protocol\": \"TCP\"}],\n"
    "                     \"resources\": {\"limits\": {\"cpu\": \"1\", \"memory\": \"1Gi\"}, "
    "\"requests\": {\"cpu\": \"500m\", \"memory\": \"512Mi\"}},\n"
    "                     \"volumeMounts\": []},\n"
    "                    {\"name\": \"logger\", \"resources\": {\"limits\": {\"cpu\": 0.25, "
    "\"memory\": 268435456}}}\n"
    "                ],\n"
    "                \"initContainers\": [\n"
    "                    {\"name\": \"proxy\", \"restartPolicy\": \"Always\", \"resources\": "
    "{\"requests\": {\"cpu\": \"100m\"}}},\n"
    "                    {\"name\": \"migrate\", \"resources\": {\"requests\": {\"cpu\": \"2\", "
    "\"memory\": \"64Mi\"}}}\n"
    "                ],\n"
    "                \"nodeSelector\": {\"team\": \"shop\"},\n"
    "                \"overhead\": {\"cpu\": \"10m\"},\n"
    "                \"priority\": 1000,\n"
    "                \"securityContext\": {},\n"
    "                \"tolerations\": [\n"
    "                    {\"effect\": \"NoSchedule\", \"key\": \"dedicated\", \"operator\": "
    "\"Equal\", \"value\": \"shop\"},\n"
    "                    {\"effect\": \"NoExecute\", \"key\": \"node.kubernetes.io/not-ready\", "
    "\"operator\": \"Exists\",\n"
    "                     \"tolerationSeconds\": 300}\n"
    "                ]\n"
    "            },\n"
    "            \"status\": {\"conditions\": [{\"status\": \"False\", \"type\": "
    "\"PodScheduled\"}], \"phase\": \"Pending\",\n"
    "                \"qosClass\": \"Burstable\"}\n"
    "        },\n"
    "        {\n"
    "            \"apiVersion\": \"v1\", \"kind\": \"Pod\",\n"
    "            \"metadata\": {\"name\": \"db-0\", \"namespace\": \"shop\", \"labels\": null},\n"
    "            \"spec\": {\"containers\": [{\"name\": \"db\", \"resources\": {}}], \"nodeName\": "
    "\"node-1\"},\n"
    "            \"status\": {\"phase\": \"Running\"}\n"
    "        }\n"
    "    ],\n"
    "    \"kind\": \"List\",\n"
    "    \"metadata\": {\"resourceVersion\": \"\"}\n"
    "}\n";

static void parse_pods_ok(const char *text, kube_pod_list_t *list) {
    kube_json_error_t err;
    memset(&err, 0, sizeof(err));
    int rc = kube_json_parse_pods(text, strlen(text), list, &err);
    if (rc != 0)
        fail_msg("unexpected error %d:%d: %s", err.line, err.column, err.message);
}

/* Expect FRUGAL_EINVAL at line:col with a message containing want. */
static void parse_pods_fails(const char *text, int line, int column, const char *want) {
    kube_pod_list_t list = {NULL, 0};
    kube_json_error_t err;
    memset(&err, 0, sizeof(err));
    assert_int_equal(kube_json_parse_pods(text, strlen(text), &list, &err), FRUGAL_EINVAL);
    assert_null(list.items);
    assert_int_equal(list.count, 0);
    if (strstr(err.message, want) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", err.message, want);
    if (line > 0) {
        assert_int_equal(err.line, line);
        assert_int_equal(err.column, column);
    }
}

static void test_kubectl_pod_list(void **state) {
    (void)state;
    kube_pod_list_t list;
    parse_pods_ok(kubectl_pods, &list);
    assert_int_equal(list.count, 2);

    const k8s_pod_t *pod = list.items[0];
    assert_string_equal(pod->metadata->name, "web-7d4b9c-x2x");
    assert_string_equal(pod->metadata->namespace_, "shop");
    assert_string_equal(pod->metadata->generatename, "web-7d4b9c-");
    assert_int_equal(pod_created_ms(pod), 1714557600000LL); /* 2024-05-01T10:00:00Z */
    assert_int_equal(pod->metadata->n_labels, 2);
    assert_string_equal(pod->metadata->labels[0]->key, "app");
    assert_string_equal(pod->metadata->labels[0]->value, "web");
    assert_string_equal(kube_pod_controller_kind(pod), "ReplicaSet");
    assert_true(kube_pod_is_pending(pod));

    const k8s_pod_spec_t *spec = pod->spec;
    assert_int_equal(spec->n_containers, 2);
    assert_int_equal(spec->n_initcontainers, 2);
    assert_string_equal(spec->initcontainers[0]->restartpolicy, "Always");
    assert_null(spec->initcontainers[1]->restartpolicy);
    assert_true(spec->has_priority);
    assert_int_equal(spec->priority, 1000);
    assert_int_equal(spec->n_tolerations, 2);
    assert_true(spec->tolerations[1]->has_tolerationseconds);
    assert_int_equal(spec->tolerations[1]->tolerationseconds, 300);
    assert_false(spec->tolerations[0]->has_tolerationseconds);
    assert_int_equal(spec->n_overhead, 1);
    const K8s__Io__Api__Core__V1__NodeSelectorRequirement *e =
        spec->affinity->nodeaffinity->requiredduringschedulingignoredduringexecution
            ->nodeselectorterms[0]
            ->matchexpressions[0];
    assert_string_equal(e->operator_, "In");
    assert_int_equal(e->n_values, 1);
    assert_string_equal(e->values[0], "us-central1-a");
    /* Numbers are quantities too. */
    assert_string_equal(spec->containers[1]->resources->limits[0]->value->string, "0.25");

    /* Containers 500m + 250m (limits as requests) + sidecar 100m = 850m; the ordinary
     * init container runs with the sidecar: 2100m wins; plus 10m overhead. Memory:
     * 512Mi + 256Mi = 768Mi against 64Mi. */
    resources_t r;
    frugal_err_t ferr;
    assert_int_equal(pod_effective_request(pod, &r, &ferr), 0);
    assert_int_equal(r.cpu_milli, 2110);
    assert_int_equal(r.memory_bytes, 768 * MI);
    assert_int_equal(r.gpu, 0);

    propose_pod_t p;
    assert_int_equal(propose_pod_from_k8s(pod, &p, &ferr), 0);
    assert_string_equal(p.name, "shop/web-7d4b9c-x2x");
    assert_int_equal(p.selector.count, 2);
    assert_string_equal(p.selector.items[0].key, "team");
    assert_string_equal(p.selector.items[1].key, "topology.kubernetes.io/zone");
    assert_int_equal(p.taints.count, 1);
    assert_string_equal(p.taints.items[0].key, "dedicated");
    propose_pod_clear(&p);

    const k8s_pod_t *db = list.items[1];
    assert_int_equal(db->metadata->n_labels, 0);
    assert_string_equal(db->spec->nodename, "node-1");
    assert_false(kube_pod_is_pending(db));
    assert_null(kube_pod_controller_kind(db));
    assert_non_null(db->spec->containers[0]->resources);
    assert_int_equal(db->spec->containers[0]->resources->n_requests, 0);

    /* What was built is a well-formed message: it packs and unpacks to the same. */
    size_t len = k8s__io__api__core__v1__pod__get_packed_size(pod);
    uint8_t *buf = malloc(len);
    assert_non_null(buf);
    k8s__io__api__core__v1__pod__pack(pod, buf);
    resources_t r2;
    assert_int_equal(pod_decode_request(buf, len, &r2, &ferr), 0);
    assert_memory_equal(&r, &r2, sizeof(r));
    free(buf);
    kube_pod_list_clear(&list);
    assert_null(list.items);
}

static void test_compact_json_and_numbers(void **state) {
    (void)state;
    kube_pod_list_t list;
    parse_pods_ok(
        "{\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"name\":\"a\"},\"spec\":{\"containers\":"
        "[{\"resources\":{\"requests\":{\"cpu\":2,\"memory\":1073741824,\"nvidia.com/gpu\":1}}}],"
        "\"pod-level-unknown\":[[],{}]},\"status\":{\"phase\":\"Pending\"}}]}",
        &list);
    assert_int_equal(list.count, 1);
    resources_t r;
    assert_int_equal(pod_effective_request(list.items[0], &r, NULL), 0);
    assert_int_equal(r.cpu_milli, 2000);
    assert_int_equal(r.memory_bytes, GI);
    assert_int_equal(r.gpu, 1);
    kube_pod_list_clear(&list);
}

static void test_duplicate_keys_last_wins(void **state) {
    (void)state;
    kube_pod_list_t list;
    parse_pods_ok(
        "{\"items\": [{\"metadata\": {\"name\": \"first\", \"name\": \"last\"},"
        " \"spec\": {\"tolerations\": [{\"key\": \"a\"}], \"tolerations\": [{\"key\": \"b\"}]}}]}",
        &list);
    assert_string_equal(list.items[0]->metadata->name, "last");
    assert_int_equal(list.items[0]->spec->n_tolerations, 1);
    assert_string_equal(list.items[0]->spec->tolerations[0]->key, "b");
    kube_pod_list_clear(&list);
}

static void test_empty_and_null(void **state) {
    (void)state;
    kube_pod_list_t list;
    parse_pods_ok("{\"apiVersion\": \"v1\", \"items\": [], \"kind\": \"List\"}", &list);
    assert_int_equal(list.count, 0);
    kube_pod_list_clear(&list);
    parse_pods_ok("{\"items\": null}", &list);
    assert_int_equal(list.count, 0);
    kube_pod_list_clear(&list);
    parse_pods_ok(
        "{\"items\": [{\"metadata\": {}, \"spec\": {\"containers\": [], \"nodeSelector\": {},"
        " \"affinity\": null, \"tolerations\": null}, \"status\": {}}]}",
        &list);
    assert_int_equal(list.count, 1);
    const k8s_pod_t *pod = list.items[0];
    assert_non_null(pod->metadata);
    assert_null(pod->metadata->name);
    assert_int_equal(pod->spec->n_containers, 0);
    assert_int_equal(pod->spec->n_nodeselector, 0);
    assert_null(pod->spec->affinity);
    assert_false(kube_pod_is_pending(pod));
    resources_t r;
    assert_int_equal(pod_effective_request(pod, &r, NULL), 0);
    assert_int_equal(r.cpu_milli, 0);
    kube_pod_list_clear(&list);
}

static void test_single_pod_and_yaml(void **state) {
    (void)state;
    kube_pod_list_t list;
    parse_pods_ok(
        "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"solo\"}, \"spec\": {}, \"status\": "
        "{\"phase\": \"Pending\"}}",
        &list);
    assert_int_equal(list.count, 1);
    assert_string_equal(list.items[0]->metadata->name, "solo");
    assert_true(kube_pod_is_pending(list.items[0]));
    kube_pod_list_clear(&list);

    /* Pending but gated, or being deleted: CA does not scale up for them. */
    parse_pods_ok("{\"items\": [{\"metadata\": {\"name\": \"gated\"}, \"spec\": "
                  "{\"schedulingGates\": [{\"name\": \"example.com/quota\"}]}, \"status\": "
                  "{\"phase\": \"Pending\"}}, {\"metadata\": {\"name\": \"going\", "
                  "\"deletionTimestamp\": \"2026-11-29T10:00:00Z\"}, \"spec\": {}, \"status\": "
                  "{\"phase\": \"Pending\"}}]}",
                  &list);
    assert_int_equal(list.count, 2);
    assert_false(kube_pod_is_pending(list.items[0]));
    assert_false(kube_pod_is_pending(list.items[1]));
    kube_pod_list_clear(&list);

    /* kubectl -o yaml reads the same. */
    parse_pods_ok("apiVersion: v1\n"
                  "kind: List\n"
                  "items:\n"
                  "- kind: Pod\n"
                  "  metadata: {name: y, namespace: ns}\n"
                  "  spec:\n"
                  "    containers:\n"
                  "    - name: c\n"
                  "      resources:\n"
                  "        requests: {cpu: 250m, memory: 1Gi}\n"
                  "  status: {phase: Pending}\n",
                  &list);
    assert_int_equal(list.count, 1);
    resources_t r;
    assert_int_equal(pod_effective_request(list.items[0], &r, NULL), 0);
    assert_int_equal(r.cpu_milli, 250);
    assert_int_equal(r.memory_bytes, GI);
    kube_pod_list_clear(&list);
}

static void test_errors(void **state) {
    (void)state;
    parse_pods_fails("", 1, 1, "empty document");
    parse_pods_fails("[1, 2]", 1, 1, "expected a v1 List of Pods");
    parse_pods_fails("{\"kind\": \"Deployment\"}", 1, 1, "kind Deployment");
    parse_pods_fails("{\"kind\": \"NodeList\", \"items\": []}", 1, 1,
                     "expected a v1 List of Pods (kubectl get pods -A -o json), got kind NodeList");
    parse_pods_fails("{\"apiVersion\": \"v1\", \"kind\": \"List\"}", 1, 1,
                     "got kind List without items");
    parse_pods_fails("{\"items\": {}}", 1, 11, "items: expected a sequence, got a mapping");
    parse_pods_fails(
        "{\"items\": [\n  {\"metadata\": {\"name\": \"x\"},\n   \"spec\": {\"containers\": [\n"
        "     {\"resources\": {\"requests\": {\"cpu\": \"lots\"}}}]}}]}",
        4, 41, "items[0].spec.containers[0].resources.requests.cpu: bad quantity \"lots\"");
    parse_pods_fails("{\"items\": [{\"spec\": {\"containers\": [{\"resources\": {\"limits\": "
                     "{\"memory\": \"-1Gi\"}}}]}}]}",
                     1, 73, "must not be negative");
    parse_pods_fails("{\"items\": [{\"spec\": {\"containers\": {\"name\": \"c\"}}}]}", 1, 36,
                     "items[0].spec.containers: expected a sequence, got a mapping");
    parse_pods_fails("{\"items\": [{\"spec\": {\"priority\": \"high\"}}]}", 1, 34,
                     "items[0].spec.priority: expected an integer");
    parse_pods_fails("{\"items\": [{\"spec\": {\"priority\": 99999999999}}]}", 1, 34,
                     "expected an integer");
    parse_pods_fails(
        "{\"items\": [{\"metadata\": {\"ownerReferences\": [{\"controller\": \"yes\"}]}}]}", 1, 61,
        "items[0].metadata.ownerReferences[0].controller: expected true or false");
    parse_pods_fails("{\"items\": [{\"metadata\": {\"creationTimestamp\": \"yesterday\"}}]}", 1, 47,
                     "items[0].metadata.creationTimestamp: expected an RFC 3339 time");
    parse_pods_fails("{\"items\": [{\"metadata\": {\"name\": [\"a\"]}}]}", 1, 34,
                     "items[0].metadata.name: expected a scalar, got a sequence");
    parse_pods_fails("{\"items\": [null]}", 1, 12, "items[0]: expected a mapping");
    parse_pods_fails("{\"items\": [{\"kind\": \"Node\"}]}", 1, 21,
                     "items[0].kind: Node, expected Pod");
    parse_pods_fails("{\"items\": [{\"spec\": {\"containers\": [null]}}]}", 1, 37,
                     "items[0].spec.containers[0]: null item");
    /* Syntax errors carry libyaml's position. */
    parse_pods_fails("{\n  \"items\": [\n    {\"a\": 1}\n  }", 4, 3,
                     "did not find expected ',' or ']'");
    /* A failure after much was built frees it all (ASan would tell). */
    parse_pods_fails(
        "{\"items\": [{\"metadata\": {\"name\": \"ok\", \"labels\": {\"a\": \"b\"}}, \"spec\": "
        "{\"containers\": [{\"name\": \"c\", \"resources\": {\"requests\": {\"cpu\": \"1\"}}}]}},"
        " {\"spec\": {\"tolerations\": [{\"key\": \"k\", \"tolerationSeconds\": \"x\"}]}}]}",
        0, 0, "items[1].spec.tolerations[0].tolerationSeconds");
}

static void test_nodes(void **state) {
    (void)state;
    static const char text[] = "{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [\n"
                               " {\"apiVersion\": \"v1\", \"kind\": \"Node\",\n"
                               "  \"metadata\": {\"name\": \"n1\", \"labels\": "
                               "{\"node.kubernetes.io/instance-type\": \"n1-standard-2\"}},\n"
                               "  \"spec\": {\"providerID\": \"frugal://pool-a/pool-a-1\", "
                               "\"unschedulable\": true, \"podCIDR\": \"10.0.0.0/24\",\n"
                               "           \"taints\": [{\"key\": \"dedicated\", \"value\": "
                               "\"web\", \"effect\": \"NoSchedule\"}]},\n"
                               "  \"status\": {\"capacity\": {\"cpu\": \"2\", \"memory\": "
                               "\"7864320Ki\", \"pods\": \"110\"},\n"
                               "             \"allocatable\": {\"cpu\": \"1930m\"},\n"
                               "             \"conditions\": [{\"type\": \"Ready\", \"status\": "
                               "\"True\", \"lastHeartbeatTime\": \"x\"}],\n"
                               "             \"nodeInfo\": {\"kubeletVersion\": \"v1.30.0\"}}},\n"
                               " {\"kind\": \"Node\", \"metadata\": {\"name\": \"n2\"}}]}\n";
    kube_node_list_t list;
    kube_json_error_t err;
    assert_int_equal(kube_json_parse_nodes(text, strlen(text), &list, &err), 0);
    assert_int_equal(list.count, 2);
    const k8s_node_t *n = list.items[0];
    assert_string_equal(n->metadata->name, "n1");
    assert_string_equal(n->spec->providerid, "frugal://pool-a/pool-a-1");
    assert_true(n->spec->has_unschedulable);
    assert_true(n->spec->unschedulable);
    assert_int_equal(n->spec->n_taints, 1);
    assert_string_equal(n->spec->taints[0]->effect, "NoSchedule");
    assert_int_equal(n->status->n_capacity, 3);
    assert_string_equal(n->status->capacity[1]->key, "memory");
    assert_string_equal(n->status->capacity[1]->value->string, "7864320Ki");
    assert_int_equal(n->status->n_conditions, 1);
    assert_string_equal(n->status->conditions[0]->status, "True");
    assert_null(list.items[1]->spec);
    kube_node_list_clear(&list);

    /* A pod list is not a node list. */
    assert_int_equal(kube_json_parse_nodes(kubectl_pods, strlen(kubectl_pods), &list, &err),
                     FRUGAL_EINVAL);
    assert_non_null(strstr(err.message, "items[0].kind: Pod, expected Node"));
    assert_int_equal(err.line, 6);
}

static void test_from_tree(void **state) {
    (void)state;
    static const char text[] = "{\"metadata\": {\"name\": \"t\"}, \"spec\": {\"nodeName\": 3}}";
    yaml_tree_node_t *root;
    yaml_tree_error_t yerr;
    assert_int_equal(yaml_tree_load(text, strlen(text), &root, &yerr), 0);
    k8s_pod_t *pod;
    kube_json_error_t err;
    assert_int_equal(kube_json_pod_from_tree(root, "pods[7]", &pod, &err), 0);
    assert_string_equal(pod->spec->nodename, "3");
    k8s__io__api__core__v1__pod__free_unpacked(pod, NULL);
    k8s_node_t *node;
    assert_int_equal(
        kube_json_node_from_tree(yaml_tree_mapping_get(root, "metadata"), "x", &node, &err), 0);
    assert_null(node->metadata);
    k8s__io__api__core__v1__node__free_unpacked(node, NULL);
    assert_int_equal(kube_json_pod_from_tree(
                         yaml_tree_mapping_get(yaml_tree_mapping_get(root, "metadata"), "name"),
                         "pods[7]", &pod, &err),
                     FRUGAL_EINVAL);
    assert_null(pod);
    assert_non_null(strstr(err.message, "pods[7]: expected a mapping"));
    yaml_tree_free(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kubectl_pod_list),
        cmocka_unit_test(test_compact_json_and_numbers),
        cmocka_unit_test(test_duplicate_keys_last_wins),
        cmocka_unit_test(test_empty_and_null),
        cmocka_unit_test(test_single_pod_and_yaml),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_nodes),
        cmocka_unit_test(test_from_tree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
