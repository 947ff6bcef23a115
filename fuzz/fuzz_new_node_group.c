/* libFuzzer target: NewNodeGroup requests, bytes as gRPC hands them to the handler,
 * against a cluster with autoprovisioning on and max_theoretical_groups 4. Each input
 * is split at its first 0xFF byte into up to three requests sent in turn to one fresh
 * cluster. Every call either succeeds with a response or fails with a message and a
 * status a client may get for NewNodeGroup; the cluster never lists more theoretical
 * groups from NewNodeGroup than the limit. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer.h>
#include <grpc/grpc.h>
#include <grpc/slice.h>

#include "fuzz.h"
#include "cluster.h"
#include "cluster_nap.h"
#include "config.h"
#include "log.h"
#include "provider.h"
#include "service.h"
#include "wire_names.h"

static const char CONFIG[] = "node_groups:\n"
                             "  - {id: pool-a, machine_type: n1-standard-2, max_size: 5}\n"
                             "autoprovisioning:\n"
                             "  enabled: true\n"
                             "  machine_types: [n1-standard-1, n1-standard-4]\n"
                             "  zones: [us-central1-a]\n"
                             "  max_theoretical_groups: 4\n";

static frugal_config_t *cfg;
static const service_method_t *method;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    char *errors = NULL;
    if (config_load_string("fuzz.yaml", CONFIG, strlen(CONFIG), &cfg, &errors) != 0)
        __builtin_trap();
    for (size_t i = 0; i < service_autoprovisioning.methods_count; i++) {
        if (strcmp(service_autoprovisioning.methods[i].path, WIRE_AP_NEW_NODE_GROUP) == 0)
            method = &service_autoprovisioning.methods[i];
    }
    if (method == NULL)
        __builtin_trap();
    log_set_level(LOG_LEVEL_ERROR);
    return 0;
}

static void call(service_ctx_t *ctx, const uint8_t *data, size_t size) {
    grpc_slice slice = grpc_slice_from_copied_buffer((const char *)data, size);
    grpc_byte_buffer *req = grpc_raw_byte_buffer_create(&slice, 1);
    grpc_slice_unref(slice);
    grpc_byte_buffer *resp = NULL;
    frugal_err_t err;
    frugal_err_clear(&err);
    int rc =
        service_method_call(method, ctx, req, gpr_inf_future(GPR_CLOCK_MONOTONIC), &resp, &err);
    grpc_byte_buffer_destroy(req);
    if (rc == 0) {
        if (resp == NULL)
            __builtin_trap();
        grpc_byte_buffer_destroy(resp);
        return;
    }
    if (resp != NULL || err.msg[0] == '\0')
        __builtin_trap();
    grpc_status_code st = frugal_err_status(rc);
    if (st != GRPC_STATUS_INVALID_ARGUMENT && st != GRPC_STATUS_RESOURCE_EXHAUSTED &&
        st != GRPC_STATUS_ALREADY_EXISTS && st != GRPC_STATUS_FAILED_PRECONDITION &&
        st != GRPC_STATUS_NOT_FOUND)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    provider_t *provider = NULL;
    cluster_t *cluster = NULL;
    frugal_err_t err;
    frugal_err_clear(&err);
    if (provider_create(cfg, &provider, &err) != 0 ||
        cluster_open(cfg, provider, NULL, &cluster, &err) != 0)
        __builtin_trap();
    service_ctx_t ctx = {.cfg = cfg, .cluster = cluster};
    size_t start = 0;
    for (int i = 0; i < 3 && start <= size; i++) {
        const uint8_t *sep = memchr(data + start, 0xFF, size - start);
        size_t end = sep != NULL ? (size_t)(sep - data) : size;
        call(&ctx, data + start, end - start);
        start = end + 1;
    }
    /* Repeating the first request changes nothing it has not already changed. */
    const uint8_t *sep = memchr(data, 0xFF, size);
    call(&ctx, data, sep != NULL ? (size_t)(sep - data) : size);
    cluster_read_lock(cluster);
    if (cluster_nap_theoretical_groups(cluster) > cfg->autoprovisioning.max_theoretical_groups)
        __builtin_trap();
    cluster_read_unlock(cluster);
    cluster_close(cluster);
    provider_destroy(provider);
    return 0;
}
