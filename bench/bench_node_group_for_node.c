/* NodeGroupForNode benchmark: the call cluster-autoscaler makes for every node of the
 * cluster on every loop, sent to a running `frugal serve` over real gRPC by several
 * threads at once; reports calls per second and latency (p50/p99).
 *
 * usage: bench_node_group_for_node ADDR [--calls N] [--threads T] [--provider-id ID]
 *
 * Each thread makes N calls one after the other on one shared channel, asking for the
 * node ID (default frugal://web-a/web-a-1, a node of the demo config's web-a once it
 * has one; an unknown node is answered too, with no group). The figure is the whole
 * server path: gRPC plumbing, metrics, the cluster's read lock and the lookup. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "externalgrpc.pb-c.h"
#include "rpc_client.h"
#include "wire_names.h"

typedef struct bench_thread {
    rpc_client_t *client;
    const uint8_t *req;
    size_t req_len;
    int calls;
    double *lat_ms;
    int failures;
    pthread_t thread;
} bench_thread_t;

static void *bench_run(void *arg) {
    bench_thread_t *t = arg;
    for (int i = 0; i < t->calls; i++) {
        uint8_t *resp = NULL;
        size_t resp_len = 0;
        grpc_status_code status;
        char *details = NULL;
        double t0 = clock_mono_ms_exact();
        int rc = rpc_client_call(t->client, WIRE_CP_NODE_GROUP_FOR_NODE, t->req, t->req_len, &resp,
                                 &resp_len, &status, &details);
        t->lat_ms[i] = clock_mono_ms_exact() - t0;
        if (rc != 0 || status != GRPC_STATUS_OK)
            t->failures++;
        free(resp);
        free(details);
    }
    return NULL;
}

static int bench_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_node_group_for_node ADDR [--calls N] [--threads T] "
                        "[--provider-id ID]\n");
        return 2;
    }
    int calls = 20000, threads = 4;
    const char *id = "frugal://web-a/web-a-1";
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--calls") == 0)
            calls = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--threads") == 0)
            threads = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--provider-id") == 0)
            id = argv[i + 1];
    }
    if (calls < 1 || threads < 1 || threads > 64) {
        fprintf(stderr, "bench: bad --calls or --threads\n");
        return 2;
    }
    Clusterautoscaler__Cloudprovider__V1__Externalgrpc__ExternalGrpcNode node =
        CLUSTERAUTOSCALER__CLOUDPROVIDER__V1__EXTERNALGRPC__EXTERNAL_GRPC_NODE__INIT;
    node.providerid = (char *)id;
    node.name = (char *)"bench-node";
    Clusterautoscaler__Cloudprovider__V1__Externalgrpc__NodeGroupForNodeRequest req =
        CLUSTERAUTOSCALER__CLOUDPROVIDER__V1__EXTERNALGRPC__NODE_GROUP_FOR_NODE_REQUEST__INIT;
    req.node = &node;
    size_t len =
        clusterautoscaler__cloudprovider__v1__externalgrpc__node_group_for_node_request__get_packed_size(
            &req);
    uint8_t *buf = malloc(len ? len : 1);
    clusterautoscaler__cloudprovider__v1__externalgrpc__node_group_for_node_request__pack(&req,
                                                                                          buf);

    rpc_client_options_t opts = {.address = argv[1]};
    rpc_client_t *client = NULL;
    frugal_err_t err = {0};
    if (rpc_client_open(&opts, &client, &err) != 0) {
        fprintf(stderr, "bench: %s\n", err.msg);
        return 1;
    }
    bench_thread_t *t = calloc((size_t)threads, sizeof(*t));
    double *all = calloc((size_t)threads * (size_t)calls, sizeof(*all));
    /* warm up the channel before timing */
    bench_thread_t warm = {client, buf, len, 200, all, 0, 0};
    bench_run(&warm);
    double t0 = clock_mono_ms_exact();
    for (int i = 0; i < threads; i++) {
        t[i] = (bench_thread_t){client, buf, len, calls, all + (size_t)i * (size_t)calls, 0, 0};
        pthread_create(&t[i].thread, NULL, bench_run, &t[i]);
    }
    int failures = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i].thread, NULL);
        failures += t[i].failures;
    }
    double elapsed = clock_mono_ms_exact() - t0;
    size_t n = (size_t)threads * (size_t)calls;
    qsort(all, n, sizeof(*all), bench_cmp);
    printf("NodeGroupForNode: %d threads x %d calls: %.0f calls/s, p50 %.3f ms, p99 %.3f ms, "
           "failures %d\n",
           threads, calls, (double)n / (elapsed / 1e3), all[n / 2], all[(n * 99) / 100], failures);
    free(all);
    free(t);
    free(buf);
    rpc_client_close(client);
    return failures ? 1 : 0;
}
