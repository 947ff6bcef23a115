/* The builtin machine catalog: public GCE N1 machine types (n1-standard, n1-highmem,
 * n1-highcpu, 1-96 vCPU) with on-demand and preemptible hourly prices in USD, compiled
 * in from tests/data/gce-n1.yaml (see catalog.c). Read-only, thread-safe. */
#ifndef FRUGAL_CATALOG_H
#define FRUGAL_CATALOG_H

#include <stddef.h>
#include <stdint.h>

typedef struct catalog_machine {
    const char *name;
    int cpu;                  /* vCPUs */
    double memory_gb;         /* GB as GCE publishes it; 1 GB = 2^30 bytes */
    double price;             /* on-demand, per hour */
    double preemptible_price; /* spot, per hour */
} catalog_machine_t;

typedef struct catalog_gpu {
    const char *name; /* e.g. nvidia-tesla-t4 */
    double price;     /* per GPU per hour, added to the machine price */
    double preemptible_price;
} catalog_gpu_t;

extern const catalog_machine_t catalog_machines[];
extern const size_t catalog_machines_count;
extern const catalog_gpu_t catalog_gpus[];
extern const size_t catalog_gpus_count;

/* Linear prices of the catalog ("price of resources on a perfectly fitted machine"). */
#define CATALOG_LINEAR_CPU 0.033174
#define CATALOG_LINEAR_MEMORY_GB 0.004446
#define CATALOG_LINEAR_GPU 0.7

/* Lookup by exact name; NULL when absent. */
const catalog_machine_t *catalog_find_machine(const char *name);
const catalog_gpu_t *catalog_find_gpu(const char *name);

/* Memory of a catalog machine in bytes (memory_gb * 2^30, rounded). */
int64_t catalog_machine_memory_bytes(const catalog_machine_t *m);

#endif
