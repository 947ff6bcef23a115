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
#include "group_spec.h"
#include "labels.h"
#include "quantity.h"

/* A machine type of the effective catalog: builtin entries (pricing.catalog: builtin)
 * merged with, and overridden by, the config's machine_types. */
typedef struct machine_type {
    char *name;
    int64_t cpu_milli;
    int64_t memory_bytes;
    int32_t gpu;               /* GPUs per machine, 0 when none */
    char *gpu_type;            /* e.g. "nvidia-tesla-t4", NULL when none */
    double price;              /* per hour; < 0 when not given: linear from pricing */
    double spot_price;         /* per hour; < 0 when not given (catalog preemptible price) */
    kv_list_t provider_params; /* exec hook parameters of this type's groups (hook_params.h) */
} machine_type_t;

/* The services a listener offers (listen[].services); health is offered on every one. */
enum {
    LISTENER_SERVICE_CLOUDPROVIDER = 1u << 0,
    LISTENER_SERVICE_EXPANDER = 1u << 1,
    LISTENER_SERVICE_AUTOPROVISIONING = 1u << 2,
    LISTENER_SERVICE_HEALTH = 1u << 3,
    LISTENER_SERVICES_ALL = (1u << 4) - 1,
};

typedef struct listener_config {
    char *address;  /* host:port or unix:PATH */
    char *tls_cert; /* NULL: plaintext */
    char *tls_key;
    char *tls_client_ca; /* NULL: no client certificate required */
    unsigned services;   /* LISTENER_SERVICE_* bits, health always; default all */
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

typedef struct node_group_config {
    group_spec_t spec;
    int32_t min_size;
    int32_t max_size;
    int32_t size;               /* initial size; -1 when not given (start at min_size) */
    bool managed;               /* false: counted toward cluster size and limits, never scaled */
    int32_t scale_up_threshold; /* Escalator's utilisation target, percent in (0, 100]; 70 */
    bool scale_on_starve;       /* a pod that cannot be scheduled forces a scale-up */
    group_options_t options;
    kv_list_t provider_params; /* exec hook parameters; win over the machine type's */
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
    bool machine_types_listed; /* given in the config, not the default */
    char **zones;              /* default: the distinct zones of the node groups (may be none) */
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

/* How BestOptions ranks (docs/ranking.md): the pricing proposal's formula, or
 * demand-fit, which also weighs whether an option's spare room will be used. */
typedef enum ranking_strategy {
    RANKING_STRATEGY_PRICING_PROPOSAL = 0,
    RANKING_STRATEGY_DEMAND_FIT,
} ranking_strategy_t;

/* ranking.cluster_size when it is `auto`: counted from frugal's own groups. */
#define RANKING_CLUSTER_SIZE_AUTO (-1)

typedef struct ranking_config {
    ranking_strategy_t strategy;       /* default demand-fit */
    int64_t cluster_size;              /* nodes; RANKING_CLUSTER_SIZE_AUTO (default) */
    resources_t damper;                /* default cpu 500m, memory 500Mi */
    preferred_node_t *preferred_nodes; /* ascending max_nodes, last one unbounded */
    size_t preferred_nodes_count;
    double suppress_scale;    /* default 15 */
    double gpu_unfitness;     /* default 1000 */
    double not_exist_penalty; /* default 2.0 */
} ranking_config_t;

/* Where the state lives (`state:`; `state_file: PATH` is short for
 * `state: {backend: file, path: PATH}`). */
typedef enum state_backend_kind {
    STATE_BACKEND_MEMORY = 0, /* neither key: in memory only */
    STATE_BACKEND_FILE,
    STATE_BACKEND_ETCD,
} state_backend_kind_t;

typedef struct state_config {
    state_backend_kind_t backend;
    char *backend_name; /* "file" or "etcd" as written; NULL when absent */
    char *path;         /* file: also in frugal_config_t.state_file */
    char **endpoints;   /* etcd: http://host:port or https://host:port, tried in order */
    size_t endpoints_count;
    char *prefix;   /* etcd: every key frugal owns starts with it ("/frugal/prod/") */
    char *tls_ca;   /* etcd: the CA that signed the members' certificates */
    char *tls_cert; /* etcd: client certificate and key (both or neither) */
    char *tls_key;
    int64_t lease_ttl_ms;       /* etcd: leader lease, default 10s (2s..5m) */
    int64_t request_timeout_ms; /* etcd: deadline of one etcd request, default 2s */
} state_config_t;

/* What one client may make the server hold (docs/limits.md). */
typedef struct limits_config {
    int64_t memory_bytes;           /* transport budget; default 2 x max_message_bytes + 64Mi */
    char memory_source[640];        /* where memory_bytes came from, for the log */
    bool memory_source_unreadable;  /* unset, and the cgroup limit could not be read */
    int64_t receive_timeout_ms;     /* for the body of a call without deadline; default 30s */
    int64_t idle_timeout_ms;        /* a connection without calls is closed; default 5m */
    int32_t max_concurrent_streams; /* per connection; default 32 */
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
    char *ops_listen;          /* HOST:PORT of the ops HTTP endpoint; NULL: none */
    state_config_t state;      /* state.backend FILE whenever state_file is set */
    char *provider_kind;       /* "simulated" (default) */
    int64_t boot_seconds;      /* simulated: creating -> running after this; default 0 */
    char *exec_command;        /* exec: the hook program (absolute path); required with exec */
    int64_t exec_timeout_ms;   /* exec: per hook invocation; default 10m */
    int32_t exec_parallelism;  /* exec: hook invocations at once; default 4 */
    kv_list_t exec_params;     /* exec: provider.params, every hook's defaults */
    kv_list_t exec_env_files;  /* exec: variable -> content of its env_from_files file */
    int64_t exec_reconcile_interval_ms;   /* exec: `HOOK list` period; 0 (default): off */
    int32_t exec_reconcile_missing_after; /* exec: lists missing a machine to replace it; 2 */
    bool exec_reconcile_delete_unknown;   /* exec: delete listed machines frugal does not know */
    pricing_config_t pricing;
    machine_type_t *machine_types;
    size_t machine_types_count;
    node_group_config_t *node_groups;
    size_t node_groups_count;
    autoprov_config_t autoprovisioning;
    ranking_config_t ranking;
    int extra_refs; /* config_retain'ed holders beyond the first (reload snapshots) */
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

/* Reference counting, so that a reload can replace the config while calls still use the
 * old one: a loaded config has one holder; config_retain adds one (thread-safe) and
 * config_release drops one, freeing the config with the last. A sole holder may call
 * config_free instead. */
void config_retain(const frugal_config_t *cfg);
void config_release(const frugal_config_t *cfg);

/* The machine type called name in the effective catalog, NULL when absent. */
const machine_type_t *config_find_machine_type(const frugal_config_t *cfg, const char *name);

/* The configured node group called id, NULL when absent. */
const node_group_config_t *config_find_node_group(const frugal_config_t *cfg, const char *id);

/* "pricing-proposal" / "demand-fit". */
const char *config_ranking_strategy_name(ranking_strategy_t s);

/* The strategy called name; -1 when there is none. */
int config_ranking_strategy_parse(const char *name);

/* When the ranking depends on the cluster size and frugal cannot count it (strategy
 * pricing-proposal, cluster_size auto, and no managed group and no autoprovisioning:
 * an expander beside another provider), writes why to buf and returns true. */
bool config_ranking_size_unknown(const frugal_config_t *cfg, char *buf, size_t size);

/* When the simulated provider would serve a listener that other machines can reach and
 * that offers the provider's services (a first install that "scales up" machines that do
 * not exist), writes the warning to buf and returns true. */
bool config_simulated_exposed(const frugal_config_t *cfg, char *buf, size_t size);

/* Whether o overrides any of CA's autoscaling options. */
bool config_group_has_options(const group_options_t *o);

/* Into buf: the warning that CA >= 1.35 uses a node startup time of 0 for group id,
 * whose options are overridden (kubernetes/autoscaler#10245; docs/wire.md). */
void config_format_options_warning(const char *id, char *buf, size_t size);

/* Into buf, and true: the warning that pricing gives cpu, memory and GPUs no price, so
 * that no pod is worth anything and no scale-up option can be ranked. False when some
 * resource has a price. */
bool config_unpriced_pods_warning(const frugal_config_t *cfg, char *buf, size_t size);

/* Into buf, and true: the warning that one node of some machine type a configured
 * group uses or autoprovisioning lists is larger than autoprovisioning.limits' max_cpu
 * or max_memory alone, so its groups can never grow. False when autoprovisioning is off
 * (the limits then bind nothing) or every such type fits. The catalog's types allowed by
 * default are not named: the user chose none of them. */
bool config_autoprov_limits_warning(const frugal_config_t *cfg, char *buf, size_t size);

/* The first on-demand group that cluster-autoscaler's --balance-similar-node-groups
 * would balance with spot group i (same machine type, labels and taints: its template
 * differs only in zone); cfg->node_groups_count when group i is not spot or has none. */
size_t config_spot_twin(const frugal_config_t *cfg, size_t i);

/* Into buf: the warning that spot group spot_id and on-demand group twin_id are
 * balanced as one set, at different prices. */
void config_format_spot_twin_warning(const char *spot_id, const char *twin_id, char *buf,
                                     size_t size);

/* "cloudprovider, expander, ..." for LISTENER_SERVICE_* bits, into buf. */
void config_format_services(unsigned services, char *buf, size_t size);

#endif
