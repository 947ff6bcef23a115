/* libFuzzer target: ProposeNodeGroups' pure path on arbitrary pods. The input is a
 * sequence of pods, each a 2-byte little-endian length and that many bytes of
 * serialized v1.Pod; each is decoded with propose_pod_decode, and the decoded ones run
 * through propose_node_groups against a fixed config (3 machine types, 2 zones, a GPU
 * type). Checks: decoding fails only with FRUGAL_EINVAL and a message; every proposal
 * serves at least one pod, every pod index is in bounds and appears at most once per
 * machine type, node counts are positive, and scores are ascending. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "config.h"
#include "propose.h"

#define FUZZ_MAX_PODS 64

static const char fuzz_config_text[] =
    "machine_types:\n"
    "  - {name: gpu-8, cpu: 8, memory: 30Gi, gpu: 1, gpu_type: nvidia-tesla-t4}\n"
    "autoprovisioning:\n"
    "  enabled: true\n"
    "  machine_types: [n1-standard-1, n1-highmem-4, gpu-8]\n"
    "  zones: [us-central1-a, us-central1-b]\n";

static frugal_config_t *fuzz_config(void) {
    static frugal_config_t *cfg;
    if (cfg == NULL) {
        char *errors = NULL;
        if (config_load_string("fuzz.yaml", fuzz_config_text, strlen(fuzz_config_text), &cfg,
                               &errors) != 0) {
            fprintf(stderr, "fuzz_propose: config: %s", errors != NULL ? errors : "?\n");
            abort();
        }
    }
    return cfg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    frugal_config_t *cfg = fuzz_config();
    propose_pod_t pods[FUZZ_MAX_PODS];
    size_t n = 0;
    while (size >= 2 && n < FUZZ_MAX_PODS) {
        size_t len = (size_t)data[0] | (size_t)data[1] << 8;
        data += 2;
        size -= 2;
        if (len > size)
            len = size;
        frugal_err_t err;
        memset(&err, 0, sizeof(err));
        int rc = propose_pod_decode(data, len, &pods[n], &err);
        if (rc == 0)
            n++;
        else if (rc != FRUGAL_EINVAL || err.msg[0] == '\0')
            __builtin_trap();
        data += len;
        size -= len;
    }

    propose_params_t params = {cfg, 5, NULL, NULL};
    propose_result_t res;
    if (propose_node_groups(&params, pods, n, &res, NULL) == 0) {
        unsigned char *seen = calloc(n + 1, 1);
        for (size_t i = 0; i < res.count; i++) {
            const propose_proposal_t *p = &res.proposals[i];
            if (p->pods_count == 0 || p->node_count < 1 || p->group_id == NULL)
                __builtin_trap();
            if (i > 0 && res.proposals[i - 1].figures.scored && p->figures.scored &&
                res.proposals[i - 1].figures.score > p->figures.score * (1 + 1e-9))
                __builtin_trap();
            for (size_t j = 0; j < p->pods_count; j++)
                if (p->pods[j] >= n)
                    __builtin_trap();
        }
        /* A pod is served at most once per machine type. */
        for (size_t t = 0; t < cfg->autoprovisioning.machine_types_count; t++) {
            memset(seen, 0, n + 1);
            for (size_t i = 0; i < res.count; i++) {
                const propose_proposal_t *p = &res.proposals[i];
                if (strcmp(p->machine_type->name, cfg->autoprovisioning.machine_types[t]) != 0)
                    continue;
                for (size_t j = 0; j < p->pods_count; j++) {
                    if (seen[p->pods[j]])
                        __builtin_trap();
                    seen[p->pods[j]] = 1;
                }
            }
        }
        for (size_t i = 0; i < res.unschedulable_count; i++)
            if (res.unschedulable[i] >= n)
                __builtin_trap();
        free(seen);
        propose_result_clear(&res);
    }
    for (size_t i = 0; i < n; i++)
        propose_pod_clear(&pods[i]);
    return 0;
}
