/* Pod decoding as BestOptions does it, in process (docs/benchmarks.md): pod_decode_summary
 * (unpack, effective request, lifetime, creation time, identity) over serialized v1.Pods
 * of three shapes, the best of several rounds. BestOptions decodes each distinct pod of
 * a request once, so this times the decoder without the transfer that dominates
 * bench_best_options.
 *   bench_pod_decode [--calls N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "kube_json.h"
#include "pod.h"

#define ROUNDS 7

/* A ReplicaSet's pod of one container; one with a sidecar, an init container and
 * limits; a Job's pod asking for a GPU and ephemeral storage. */
static const char *const shapes[][2] = {
    {"one container",
     "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"web-7d9f-x2\", \"namespace\": \"shop\", "
     "\"uid\": \"1b2c3d4e-0000-4000-8000-123456789abc\", \"creationTimestamp\": "
     "\"2026-11-30T01:00:00Z\", \"ownerReferences\": [{\"apiVersion\": \"apps/v1\", \"kind\": "
     "\"ReplicaSet\", \"name\": \"web-7d9f\", \"uid\": \"u1\", \"controller\": true}]}, \"spec\": "
     "{\"containers\": [{\"name\": \"app\", \"resources\": {\"requests\": {\"cpu\": \"500m\", "
     "\"memory\": \"512Mi\"}}}]}}"},
    {"sidecar, init, limits",
     "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"api-5c8b-q9\", \"namespace\": \"shop\", "
     "\"uid\": \"2b2c3d4e-0000-4000-8000-123456789abc\", \"creationTimestamp\": "
     "\"2026-11-30T01:00:01Z\", \"ownerReferences\": [{\"apiVersion\": \"apps/v1\", \"kind\": "
     "\"ReplicaSet\", \"name\": \"api-5c8b\", \"uid\": \"u2\", \"controller\": true}]}, \"spec\": "
     "{\"containers\": [{\"name\": \"app\", \"resources\": {\"requests\": {\"cpu\": \"1\", "
     "\"memory\": \"2Gi\"}, \"limits\": {\"cpu\": \"2\", \"memory\": \"2Gi\"}}}], "
     "\"initContainers\": [{\"name\": \"proxy\", \"restartPolicy\": \"Always\", \"resources\": "
     "{\"requests\": {\"cpu\": \"100m\", \"memory\": \"64Mi\"}}}, {\"name\": \"migrate\", "
     "\"resources\": {\"requests\": {\"cpu\": \"250m\", \"memory\": \"256Mi\"}}}]}}"},
    {"Job with a GPU",
     "{\"kind\": \"Pod\", \"metadata\": {\"name\": \"train-8x7\", \"namespace\": \"ml\", "
     "\"uid\": \"3b2c3d4e-0000-4000-8000-123456789abc\", \"creationTimestamp\": "
     "\"2026-11-30T01:00:02Z\", \"ownerReferences\": [{\"apiVersion\": \"batch/v1\", \"kind\": "
     "\"Job\", \"name\": \"train\", \"uid\": \"u3\", \"controller\": true}]}, \"spec\": "
     "{\"containers\": [{\"name\": \"trainer\", \"resources\": {\"requests\": {\"cpu\": \"4\", "
     "\"memory\": \"16Gi\", \"nvidia.com/gpu\": \"1\", \"ephemeral-storage\": \"20Gi\"}, "
     "\"limits\": {\"nvidia.com/gpu\": \"1\"}}}]}}"},
};

int main(int argc, char **argv) {
    int calls = 200000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            calls = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--calls N]\n", argv[0]);
            return 2;
        }
    }
    printf("%-24s %6s %8s %14s\n", "pod", "bytes", "calls", "best_us/pod");
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        kube_pod_list_t pods;
        kube_json_error_t jerr;
        if (kube_json_parse_pods(shapes[s][1], strlen(shapes[s][1]), &pods, &jerr) != 0) {
            fprintf(stderr, "%s: %s\n", shapes[s][0], jerr.message);
            return 1;
        }
        size_t len = k8s__io__api__core__v1__pod__get_packed_size(pods.items[0]);
        uint8_t *buf = malloc(len);
        if (buf == NULL)
            return 1;
        k8s__io__api__core__v1__pod__pack(pods.items[0], buf);
        kube_pod_list_clear(&pods);
        double best = -1.0;
        int64_t sink = 0; /* keeps the decoding from being optimised away */
        for (int round = 0; round < ROUNDS; round++) {
            double t0 = clock_mono_ms_exact();
            for (int i = 0; i < calls; i++) {
                pod_summary_t sum;
                if (pod_decode_summary(buf, len, &sum, NULL) != 0) {
                    fprintf(stderr, "%s: does not decode\n", shapes[s][0]);
                    return 1;
                }
                sink += sum.request.cpu_milli;
            }
            double us = (clock_mono_ms_exact() - t0) * 1000.0 / calls;
            if (best < 0 || us < best)
                best = us;
        }
        printf("%-24s %6zu %8d %14.3f%s\n", shapes[s][0], len, calls, best, sink == 42 ? " " : "");
        free(buf);
    }
    return 0;
}
