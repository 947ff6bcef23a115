/* The builtin catalog, transcribed from tests/data/gce-n1.yaml (GCE N1, us-central1,
 * on-demand and preemptible USD per hour). tests/unit/core/test_catalog.c cross-checks
 * this table against that YAML file. */
#include "catalog.h"

#include <math.h>
#include <string.h>

const catalog_machine_t catalog_machines[] = {
    {"n1-standard-1", 1, 3.75, 0.0475, 0.01},  {"n1-standard-2", 2, 7.5, 0.095, 0.02},
    {"n1-standard-4", 4, 15, 0.19, 0.04},      {"n1-standard-8", 8, 30, 0.38, 0.08},
    {"n1-standard-16", 16, 60, 0.76, 0.16},    {"n1-standard-32", 32, 120, 1.52, 0.32},
    {"n1-standard-64", 64, 240, 3.04, 0.64},   {"n1-standard-96", 96, 360, 4.56, 0.96},
    {"n1-highmem-2", 2, 13, 0.1184, 0.025},    {"n1-highmem-4", 4, 26, 0.2368, 0.05},
    {"n1-highmem-8", 8, 52, 0.4736, 0.1},      {"n1-highmem-16", 16, 104, 0.9472, 0.2},
    {"n1-highmem-32", 32, 208, 1.8944, 0.4},   {"n1-highmem-64", 64, 416, 3.7888, 0.8},
    {"n1-highmem-96", 96, 624, 5.6832, 1.2},   {"n1-highcpu-2", 2, 1.8, 0.0709, 0.015},
    {"n1-highcpu-4", 4, 3.6, 0.1418, 0.03},    {"n1-highcpu-8", 8, 7.2, 0.2836, 0.06},
    {"n1-highcpu-16", 16, 14.4, 0.5672, 0.12}, {"n1-highcpu-32", 32, 28.8, 1.1344, 0.24},
    {"n1-highcpu-64", 64, 57.6, 2.2688, 0.48}, {"n1-highcpu-96", 96, 86.4, 3.402, 0.72},
};
const size_t catalog_machines_count = sizeof(catalog_machines) / sizeof(catalog_machines[0]);

const catalog_gpu_t catalog_gpus[] = {
    {"nvidia-tesla-t4", 0.35, 0.11},    {"nvidia-tesla-p4", 0.60, 0.216},
    {"nvidia-tesla-v100", 2.48, 0.74},  {"nvidia-tesla-p100", 1.46, 0.43},
    {"nvidia-tesla-k80", 0.45, 0.0375},
};
const size_t catalog_gpus_count = sizeof(catalog_gpus) / sizeof(catalog_gpus[0]);

const catalog_machine_t *catalog_find_machine(const char *name) {
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < catalog_machines_count; i++)
        if (strcmp(catalog_machines[i].name, name) == 0)
            return &catalog_machines[i];
    return NULL;
}

const catalog_gpu_t *catalog_find_gpu(const char *name) {
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < catalog_gpus_count; i++)
        if (strcmp(catalog_gpus[i].name, name) == 0)
            return &catalog_gpus[i];
    return NULL;
}

int64_t catalog_machine_memory_bytes(const catalog_machine_t *m) {
    return (int64_t)llround(m->memory_gb * 1073741824.0);
}
