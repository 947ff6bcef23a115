/* State backend benchmark: IncreaseSize latency (each call is one commit: a state-file
 * write or an etcd transaction) and NodeGroupForNode throughput (served from memory, or
 * from the cache the etcd Watch keeps) against a running `frugal serve`.
 *
 * usage: bench_state ADDR GROUP [--calls N] [--seconds S] [--threads T]
 *
 * GROUP must be managed with room for N more nodes and boot_seconds large enough that
 * its instances stay creating: each IncreaseSize +1 is followed by a
 * DecreaseTargetSize -1 (not timed) so the size stays put. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "externalgrpc.pb-c.h"
#include "rpc_client.h"
#include "wire_names.h"

static int bench_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One call; exits on any failure (a benchmark of errors measures nothing). */
static void bench_call(rpc_client_t *c, const char *method, const ProtobufCMessage *m) {
    uint8_t buf[512];
    size_t len = protobuf_c_message_pack(m, buf);
    uint8_t *resp = NULL;
    size_t rlen = 0;
    grpc_status_code st;
    char *details = NULL;
    if (rpc_client_call(c, method, buf, len, &resp, &rlen, &st, &details) != 0 ||
        st != GRPC_STATUS_OK) {
        fprintf(stderr, "bench_state: %s failed: %d %s\n", method, (int)st, details ? details : "");
        exit(1);
    }
    free(resp);
    free(details);
}

typedef struct qps_arg {
    rpc_client_t *client;
    const char *provider_id;
    double until;
    long calls;
} qps_arg_t;

static void *bench_qps(void *p) {
    qps_arg_t *a = p;
    Clusterautoscaler__Cloudprovider__V1__Externalgrpc__ExternalGrpcNode node =
        CLUSTERAUTOSCALER__CLOUDPROVIDER__V1__EXTERNALGRPC__EXTERNAL_GRPC_NODE__INIT;
    node.providerid = (char *)a->provider_id;
    Clusterautoscaler__Cloudprovider__V1__Externalgrpc__NodeGroupForNodeRequest req =
        CLUSTERAUTOSCALER__CLOUDPROVIDER__V1__EXTERNALGRPC__NODE_GROUP_FOR_NODE_REQUEST__INIT;
    req.node = &node;
    while (clock_mono_ms_exact() < a->until) {
        bench_call(a->client, WIRE_CP_NODE_GROUP_FOR_NODE, &req.base);
        a->calls++;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bench_state ADDR GROUP [--calls N] [--seconds S] [--threads T]\n");
        return 2;
    }
    const char *addr = argv[1], *group = argv[2];
    int calls = 300, threads = 2;
    double seconds = 5;
    for (int i = 3; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--calls") == 0)
            calls = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--seconds") == 0)
            seconds = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--threads") == 0)
            threads = atoi(argv[i + 1]);
    }
    if (calls < 1 || threads < 1 || threads > 64 || seconds <= 0) {
        fprintf(stderr, "bench_state: bad arguments\n");
        return 2;
    }
    rpc_client_options_t opts = {.address = addr, .timeout_ms = 10000};
    rpc_client_t *client = NULL;
    frugal_err_t err = {0};
    if (rpc_client_open(&opts, &client, &err) != 0) {
        fprintf(stderr, "bench_state: %s\n", err.msg);
        return 1;
    }
    Clusterautoscaler__Cloudprovider__V1__Externalgrpc__NodeGroupIncreaseSizeRequest inc =
        CLUSTERAUTOSCALER__CLOUDPROVIDER__V1__EXTERNALGRPC__NODE_GROUP_INCREASE_SIZE_REQUEST__INIT;
    inc.delta = 1;
    inc.id = (char *)group;
    Clusterautoscaler__Cloudprovider__V1__Externalgrpc__NodeGroupDecreaseTargetSizeRequest dec =
        CLUSTERAUTOSCALER__CLOUDPROVIDER__V1__EXTERNALGRPC__NODE_GROUP_DECREASE_TARGET_SIZE_REQUEST__INIT;
    dec.delta = -1;
    dec.id = (char *)group;
    double *lat = calloc((size_t)calls, sizeof(*lat));
    if (lat == NULL)
        return 1;
    for (int i = 0; i < calls; i++) {
        double t0 = clock_mono_ms_exact();
        bench_call(client, WIRE_CP_INCREASE_SIZE, &inc.base);
        lat[i] = clock_mono_ms_exact() - t0;
        bench_call(client, WIRE_CP_DECREASE_TARGET_SIZE, &dec.base);
    }
    qsort(lat, (size_t)calls, sizeof(*lat), bench_cmp);
    printf("IncreaseSize: %d calls, p50 %.2f ms, p99 %.2f ms\n", calls, lat[calls / 2],
           lat[(calls * 99) / 100 < calls ? (calls * 99) / 100 : calls - 1]);
    free(lat);

    /* The provider id of the group's first instance: the lookup CA makes for every node. */
    char pid[256];
    snprintf(pid, sizeof(pid), "frugal://%s/%s-1", group, group);
    qps_arg_t *args = calloc((size_t)threads, sizeof(*args));
    pthread_t *tids = calloc((size_t)threads, sizeof(*tids));
    if (args == NULL || tids == NULL)
        return 1;
    double until = clock_mono_ms_exact() + seconds * 1000;
    for (int t = 0; t < threads; t++) {
        args[t] = (qps_arg_t){.client = client, .provider_id = pid, .until = until};
        pthread_create(&tids[t], NULL, bench_qps, &args[t]);
    }
    long total = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(tids[t], NULL);
        total += args[t].calls;
    }
    printf("NodeGroupForNode: %d threads, %.0f calls/s\n", threads, (double)total / seconds);
    free(args);
    free(tids);
    rpc_client_close(client);
    return 0;
}
