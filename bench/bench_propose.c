/* ProposeNodeGroups benchmark: 500 pending pods with 20 distinct node
 * selectors (some with a custom toleration) over 30 allowed machine types (the 22 of
 * the builtin catalog plus 8 configured ones); reports the latency (min/p50/p99/max) of
 * the ProposeNodeGroups handler and the size of its answer. Target: p99 under 100 ms.
 *
 * usage: bench_propose [--calls N] [--pods N]             in process: the real handler
 *                                                         (decode, propose, encode) on
 *                                                         a cluster built from the config
 *        bench_propose --print-config PORT                the config a server needs
 *        bench_propose --addr HOST:PORT [--calls N]        over gRPC to `frugal serve`
 *                                                         started with that config */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <grpc/grpc.h>

#include "clock.h"
#include "cluster.h"
#include "codec.h"
#include "config.h"
#include "frugal.pb-c.h"
#include "k8s.h"
#include "log.h"
#include "provider.h"
#include "rpc_client.h"
#include "service.h"
#include "wire_names.h"

#define BENCH_SELECTORS 20
#define BENCH_METHOD WIRE_AP_PROPOSE_NODE_GROUPS

static void print_config(FILE *f, const char *port) {
    fprintf(f,
            "listen:\n"
            "  - address: 127.0.0.1:%s\n"
            "machine_types:\n",
            port);
    /* Eight custom types on top of the 22 builtin ones: 30 allowed machine types. */
    for (int i = 0; i < 8; i++)
        fprintf(f, "  - {name: custom-%d, cpu: %d, memory: %dGi}\n", i, 2 + 2 * i, 4 + 6 * i);
    fprintf(f, "node_groups:\n"
               "  - {id: main, machine_type: n1-standard-4, zone: us-central1-a, size: 10, "
               "managed: false}\n"
               "autoprovisioning:\n"
               "  enabled: true\n"
               "  zones: [us-central1-a, us-central1-b]\n");
}

typedef K8s__Io__Api__Core__V1__ResourceRequirements__RequestsEntry req_entry_t;
typedef K8s__Io__Api__Core__V1__PodSpec__NodeSelectorEntry sel_entry_t;

/* Pod i: selector i % 20 (team = j % 7, disk = j % 3, j >= 14 also a pool label; every
 * fifth selector's pods tolerate dedicated=batch), requests from 250m/512Mi up. */
static ProtobufCBinaryData make_pod(size_t i) {
    size_t j = i % BENCH_SELECTORS;
    char name[64], cpu[32], mem[32], team[16], pool[16];
    snprintf(name, sizeof(name), "worker-%zu", i);
    snprintf(cpu, sizeof(cpu), "%zum", 250 * (1 + (i * 7) % 24));
    snprintf(mem, sizeof(mem), "%zuMi", 512 * (1 + (i * 11) % 48));
    snprintf(team, sizeof(team), "t%zu", j % 7);
    snprintf(pool, sizeof(pool), "p%zu", j % 2);
    static const char *const disks[] = {"ssd", "hdd", "nvme"};

    k8s_quantity_t qc = K8S__IO__APIMACHINERY__PKG__API__RESOURCE__QUANTITY__INIT;
    k8s_quantity_t qm = K8S__IO__APIMACHINERY__PKG__API__RESOURCE__QUANTITY__INIT;
    qc.string = cpu;
    qm.string = mem;
    req_entry_t rc = K8S__IO__API__CORE__V1__RESOURCE_REQUIREMENTS__REQUESTS_ENTRY__INIT;
    req_entry_t rm = K8S__IO__API__CORE__V1__RESOURCE_REQUIREMENTS__REQUESTS_ENTRY__INIT;
    rc.key = "cpu";
    rc.value = &qc;
    rm.key = "memory";
    rm.value = &qm;
    req_entry_t *reqs[2] = {&rc, &rm};
    k8s_resource_requirements_t rr = K8S__IO__API__CORE__V1__RESOURCE_REQUIREMENTS__INIT;
    rr.n_requests = 2;
    rr.requests = reqs;
    k8s_container_t ct = K8S__IO__API__CORE__V1__CONTAINER__INIT;
    ct.name = "main";
    ct.resources = &rr;
    k8s_container_t *cts[1] = {&ct};

    sel_entry_t s[3];
    sel_entry_t *sp[3];
    size_t ns = 0;
    const char *keys[3] = {"team", "disk", "pool"};
    const char *values[3] = {team, disks[j % 3], pool};
    for (size_t k = 0; k < (j >= 14 ? 3u : 2u); k++) {
        sel_entry_t e = K8S__IO__API__CORE__V1__POD_SPEC__NODE_SELECTOR_ENTRY__INIT;
        s[ns] = e;
        s[ns].key = (char *)keys[k];
        s[ns].value = (char *)values[k];
        sp[ns] = &s[ns];
        ns++;
    }
    k8s_toleration_t tol = K8S__IO__API__CORE__V1__TOLERATION__INIT;
    tol.key = "dedicated";
    tol.operator_ = "Equal";
    tol.value = "batch";
    tol.effect = "NoSchedule";
    k8s_toleration_t *tols[1] = {&tol};

    k8s_pod_spec_t spec = K8S__IO__API__CORE__V1__POD_SPEC__INIT;
    spec.n_containers = 1;
    spec.containers = cts;
    spec.n_nodeselector = ns;
    spec.nodeselector = sp;
    if (j % 5 == 0) {
        spec.n_tolerations = 1;
        spec.tolerations = tols;
    }
    k8s_object_meta_t meta = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__INIT;
    meta.name = name;
    meta.namespace_ = "bench";
    k8s_pod_t pod = K8S__IO__API__CORE__V1__POD__INIT;
    pod.metadata = &meta;
    pod.spec = &spec;
    ProtobufCBinaryData out;
    out.len = k8s__io__api__core__v1__pod__get_packed_size(&pod);
    out.data = malloc(out.len);
    if (out.data == NULL) {
        fprintf(stderr, "bench: out of memory\n");
        exit(1);
    }
    k8s__io__api__core__v1__pod__pack(&pod, out.data);
    return out;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The ProposeNodeGroups method of the service table. */
static const service_method_t *find_method(void) {
    for (size_t i = 0; i < service_autoprovisioning.methods_count; i++)
        if (strcmp(service_autoprovisioning.methods[i].path, BENCH_METHOD) == 0)
            return &service_autoprovisioning.methods[i];
    return NULL;
}

int main(int argc, char **argv) {
    int calls = 50;
    size_t npods = 500;
    const char *addr = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--print-config") == 0 && i + 1 < argc) {
            print_config(stdout, argv[i + 1]);
            return 0;
        } else if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc) {
            calls = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--pods") == 0 && i + 1 < argc) {
            npods = (size_t)atol(argv[++i]);
        } else if (strcmp(argv[i], "--addr") == 0 && i + 1 < argc) {
            addr = argv[++i];
        } else {
            fprintf(stderr,
                    "usage: %s [--calls N] [--pods N] | --print-config PORT | --addr HOST:PORT "
                    "[--calls N]\n",
                    argv[0]);
            return 2;
        }
    }
    if (calls < 1)
        calls = 1;

    Frugal__V1__ProposeNodeGroupsRequest req = FRUGAL__V1__PROPOSE_NODE_GROUPS_REQUEST__INIT;
    req.n_pods = npods;
    req.pods = calloc(npods ? npods : 1, sizeof(*req.pods));
    for (size_t i = 0; i < npods; i++)
        req.pods[i] = make_pod(i);
    size_t req_len = frugal__v1__propose_node_groups_request__get_packed_size(&req);
    uint8_t *req_buf = malloc(req_len ? req_len : 1);
    frugal__v1__propose_node_groups_request__pack(&req, req_buf);

    double *lat = calloc((size_t)calls, sizeof(*lat));
    size_t resp_len = 0, proposals = 0, unschedulable = 0;
    int rc = 0;
    frugal_err_t err = {0};

    if (addr != NULL) {
        rpc_client_options_t opts = {.address = addr, .timeout_ms = 10000};
        rpc_client_t *client = NULL;
        if (rpc_client_open(&opts, &client, &err) != 0) {
            fprintf(stderr, "%s: %s\n", addr, err.msg);
            return 1;
        }
        for (int c = 0; c < calls && rc == 0; c++) {
            uint8_t *resp = NULL;
            grpc_status_code status;
            char *details = NULL;
            double t0 = clock_mono_ms_exact();
            int r = rpc_client_call(client, BENCH_METHOD, req_buf, req_len, &resp, &resp_len,
                                    &status, &details);
            lat[c] = clock_mono_ms_exact() - t0;
            if (r != 0 || status != GRPC_STATUS_OK) {
                fprintf(stderr, "call failed: %s\n", details != NULL ? details : "local failure");
                rc = 1;
            } else if (c == 0) {
                Frugal__V1__ProposeNodeGroupsResponse *m =
                    frugal__v1__propose_node_groups_response__unpack(NULL, resp_len, resp);
                if (m != NULL) {
                    proposals = m->n_proposals;
                    unschedulable = m->n_unschedulable_pods;
                    frugal__v1__propose_node_groups_response__free_unpacked(m, NULL);
                }
            }
            free(resp);
            free(details);
        }
        rpc_client_close(client);
    } else {
        log_set_level(LOG_LEVEL_WARN);
        grpc_init();
        char *text = NULL;
        size_t text_len = 0;
        FILE *mem = open_memstream(&text, &text_len);
        print_config(mem, "8086");
        fclose(mem);
        frugal_config_t *cfg = NULL;
        char *errors = NULL;
        provider_t *provider = NULL;
        cluster_t *cluster = NULL;
        if (config_load_string("bench.yaml", text, text_len, &cfg, &errors) != 0) {
            fprintf(stderr, "config: %s", errors != NULL ? errors : "?\n");
            return 1;
        }
        free(text);
        if (provider_create(cfg, &provider, &err) != 0 ||
            cluster_open(cfg, provider, NULL, &cluster, &err) != 0) {
            fprintf(stderr, "cluster: %s\n", err.msg);
            return 1;
        }
        const service_method_t *method = find_method();
        if (method == NULL) {
            fprintf(stderr, "ProposeNodeGroups is not registered\n");
            return 1;
        }
        service_ctx_t ctx = {.cfg = cfg, .cluster = cluster};
        gpr_timespec deadline = gpr_inf_future(GPR_CLOCK_MONOTONIC);
        for (int c = 0; c < calls && rc == 0; c++) {
            grpc_byte_buffer *in = codec_from_bytes(req_buf, req_len), *out = NULL;
            double t0 = clock_mono_ms_exact();
            int r = service_method_call(method, &ctx, in, deadline, &out, &err);
            lat[c] = clock_mono_ms_exact() - t0;
            grpc_byte_buffer_destroy(in);
            if (r != 0) {
                fprintf(stderr, "handler failed: %s\n", err.msg);
                rc = 1;
                break;
            }
            uint8_t *bytes = NULL;
            codec_read_all(out, &bytes, &resp_len, &err);
            if (c == 0) {
                Frugal__V1__ProposeNodeGroupsResponse *m =
                    frugal__v1__propose_node_groups_response__unpack(NULL, resp_len, bytes);
                if (m != NULL) {
                    proposals = m->n_proposals;
                    unschedulable = m->n_unschedulable_pods;
                    frugal__v1__propose_node_groups_response__free_unpacked(m, NULL);
                }
            }
            free(bytes);
            grpc_byte_buffer_destroy(out);
        }
        cluster_close(cluster);
        provider_destroy(provider);
        config_free(cfg);
        grpc_shutdown();
    }

    if (rc == 0) {
        qsort(lat, (size_t)calls, sizeof(*lat), cmp_double);
        size_t p99 = (size_t)((calls - 1) * 0.99 + 0.5);
        printf("ProposeNodeGroups (%s): %zu pods, %d selectors, 30 machine types, request %zu B\n",
               addr != NULL ? "over gRPC" : "in process", npods, BENCH_SELECTORS, req_len);
        printf("%d calls: min %.2f ms  p50 %.2f ms  p99 %.2f ms  max %.2f ms\n", calls, lat[0],
               lat[calls / 2], lat[p99], lat[calls - 1]);
        printf("answer: %zu proposals, %zu unschedulable pods, %zu B\n", proposals, unschedulable,
               resp_len);
    }
    for (size_t i = 0; i < npods; i++)
        free(req.pods[i].data);
    free(req.pods);
    free(req_buf);
    free(lat);
    return rc;
}
