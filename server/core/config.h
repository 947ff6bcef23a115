/* frugal's configuration (README.md, "Configuration"): one YAML file parsed with
 * libyaml into plain structs, every default applied, every error reported as
 * `FILE:LINE:COL: key: reason`. A loaded config is immutable and shared read-only by
 * every thread. */
#ifndef FRUGAL_CONFIG_H
#define FRUGAL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errors.h"
#include "labels.h"
#include "quantity.h"

/* A machine type of the effective catalog: builtin entries (pricing.catalog: builtin)
 * merged with, and overridden by, the config's machine_types. */
typedef struct machine_type {
    char *name;
    int64_t cpu_milli;
    int64_t memory_bytes;
    int32_t gpu;       /* GPUs per machine, 0 when none */
    char *gpu_type;    /* e.g. "nvidia-tesla-t4", NULL when none */
    double price;      /* per hour; < 0 when not given: linear from pricing */
    double spot_price; /* per hour; < 0 when not given (catalog preemptible price) */
} machine_type_t;

typedef struct listener_config {
    char *address;  /* host:port or unix:PATH */
    char *tls_cert; /* NULL: plaintext */
    char *tls_key;
    char *tls_client_ca; /* NULL: no client certificate required */
} listener_config_t;

/* Per-group overrides of CA's autoscaling options; has_* false means "echo CA's default". */
typedef struct group_options {
    bool has_scale_down_utilization_threshold;
    double scale_down_utilization_threshold;
    bool has_scale_down_gpu_utilization_threshold;
    double scale_down_gpu_utilization_threshold;
    bool has_scale_down_unneeded;
    int64_t scale_down_unneeded_ns;
    bool has_scale_down_unready;
    int64_t scale_down_unready_ns;
    bool has_max_node_provision;
    int64_t max_node_provision_ns;
    bool has_zero_or_max_node_scaling;
    bool zero_or_max_node_scaling;
    bool has_ignore_daemonsets_utilization;
    bool ignore_daemonsets_utilization;
} group_options_t;

/* What a node group's nodes look like: shared by configured and autoprovisioned groups,
 * and all a template node is built from. */
typedef struct group_spec {
    char *id;
    char *machine_type; /* name in the effective catalog */
    char *zone;         /* NULL when not set */
    bool spot;          /* priced at the spot price */
    double spot_price;  /* per hour; < 0 when not given */
    kv_list_t labels;
    taint_list_t taints;
    kv_list_t extra_resources; /* resource name -> quantity string (NAP NewNodeGroup) */
} group_spec_t;

typedef struct node_group_config {
    group_spec_t spec;
    int32_t min_size;
    int32_t max_size;
    int32_t size; /* initial size; -1 when not given (start at min_size) */
    bool managed; /* false: counted toward cluster size and limits, never scaled */
    group_options_t options;
} node_group_config_t;

typedef struct pricing_config {
    double cpu;           /* per core per hour */
    double memory_gib;    /* per GiB per hour */
    double gpu;           /* per GPU per hour */
    bool builtin_catalog; /* catalog: builtin (true) | none (false) */
} pricing_config_t;

typedef struct autoprov_config {
    bool enabled;
    char *prefix;         /* default "nap" */
    char **machine_types; /* allowed types; default: the whole effective catalog */
    size_t machine_types_count;
    char **zones; /* default: the distinct zones of the node groups (may be none) */
    size_t zones_count;
    kv_list_t *label_sets; /* default: one empty set */
    size_t label_sets_count;
    int64_t min_cpu_milli; /* cluster-wide limits; max default: INT64_MAX (unlimited) */
    int64_t max_cpu_milli;
    int64_t min_memory_bytes;
    int64_t max_memory_bytes;
    int32_t max_node_groups;        /* default 50 */
    int32_t max_theoretical_groups; /* groups NewNodeGroup may add, unused; default 200 */
    int64_t empty_group_ttl_ms;     /* default 10 min */
} autoprov_config_t;

typedef struct preferred_node {
    int32_t max_nodes; /* upper bound of cluster size, inclusive; -1 = no bound */
    int64_t cpu_milli;
} preferred_node_t;

typedef struct ranking_config {
    resources_t damper;                /* default cpu 500m, memory 500Mi */
    preferred_node_t *preferred_nodes; /* ascending max_nodes, last one unbounded */
    size_t preferred_nodes_count;
    double suppress_scale;    /* default 15 */
    double gpu_unfitness;     /* default 1000 */
    double not_exist_penalty; /* default 2.0 */
} ranking_config_t;

/* What one client may make the server hold (docs/limits.md). */
typedef struct limits_config {
    int64_t memory_bytes;           /* transport budget; default 2 x max_message_bytes + 64Mi */
    int64_t receive_timeout_ms;     /* for the body of a call without deadline; default 30s */
    int64_t idle_timeout_ms;        /* a connection without calls is closed; default 5m */
    int32_t max_concurrent_streams; /* per connection; default 100 */
    int32_t max_calls_per_worker;   /* calls in flight per worker thread; default 256 */
    int64_t max_header_bytes;       /* request metadata; default 16Ki */
} limits_config_t;

typedef struct frugal_config {
    char *path; /* the file it was loaded from */
    listener_config_t *listeners;
    size_t listeners_count; /* default: one plaintext listener 127.0.0.1:8086 */
    bool allow_insecure;
    int64_t max_message_bytes; /* default 536870912 */
    char *state_file;          /* NULL: in-memory only */
    char *provider_kind;       /* "simulated" (default) */
    int64_t boot_seconds;      /* simulated: creating -> running after this; default 0 */
    char *exec_command;        /* exec: the hook program (absolute path); required with exec */
    int64_t exec_timeout_ms;   /* exec: per hook invocation; default 10m */
    int32_t exec_parallelism;  /* exec: hook invocations at once; default 4 */
    pricing_config_t pricing;
    machine_type_t *machine_types;
    size_t machine_types_count;
    node_group_config_t *node_groups;
    size_t node_groups_count;
    autoprov_config_t autoprovisioning;
    ranking_config_t ranking;
    limits_config_t limits;
} frugal_config_t;

/* Load and validate the file at path. On success *out owns a complete config with
 * every default applied. On failure returns FRUGAL_EINVAL (or FRUGAL_EIO when the file
 * cannot be read), *out is NULL and *errors holds one `FILE:LINE:COL: message` line per
 * problem found (malloc'ed, newline-terminated; the caller frees it). */
int config_load(const char *path, frugal_config_t **out, char **errors);

/* Same as config_load, for YAML text already in memory; name is used in messages. */
int config_load_string(const char *name, const char *text, size_t len, frugal_config_t **out,
                       char **errors);

void config_free(frugal_config_t *cfg);

/* The machine type called name in the effective catalog, NULL when absent. */
const machine_type_t *config_find_machine_type(const frugal_config_t *cfg, const char *name);

/* The configured node group called id, NULL when absent. */
const node_group_config_t *config_find_node_group(const frugal_config_t *cfg, const char *id);

/* Print the one-screen summary of `frugal check` to f. */
#include <stdio.h>
void config_print_summary(const frugal_config_t *cfg, FILE *f);

#endif
