/* `frugal check`'s summary of a configuration (config_summary.h). */
#include "config_summary.h"

#include <inttypes.h>
#include <string.h>

#include "duration.h"

#define SUMMARY_MAX_GROUPS 10

/* The names (never the values: credentials) of what every hook gets besides the group's
 * description: provider.params and provider.env_from_files. */
static void summary__hook_inputs(FILE *f, const frugal_config_t *cfg) {
    const kv_list_t *lists[] = {&cfg->exec_params, &cfg->exec_env_files};
    const char *what[] = {"params", "files"};
    fprintf(f, "%-18s", "hook inputs");
    for (size_t k = 0; k < 2; k++) {
        fprintf(f, "%s%s", k > 0 ? "; " : "", what[k]);
        for (size_t i = 0; i < lists[k]->count; i++)
            fprintf(f, "%s %s", i > 0 ? "," : "", lists[k]->items[i].key);
        if (lists[k]->count == 0)
            fputs(" none", f);
    }
    fputc('\n', f);
}

void config_summary_print(const frugal_config_t *cfg, FILE *f) {
    char a[32], b[32], c[32], d[32];
    size_t managed = 0;
    for (size_t i = 0; i < cfg->node_groups_count; i++) {
        managed += cfg->node_groups[i].managed;
    }
    fprintf(f, "%s: OK\n", cfg->path);
    for (size_t i = 0; i < cfg->listeners_count; i++) {
        const listener_config_t *l = &cfg->listeners[i];
        char services[80] = "";
        if (l->services != LISTENER_SERVICES_ALL) {
            config_format_services(l->services, services + 2, sizeof(services) - 2);
            memcpy(services, "; ", 2);
        }
        fprintf(f, "%-18s%s (%s%s)\n", i == 0 ? "listen" : "", l->address,
                l->tls_cert == NULL        ? "plaintext"
                : l->tls_client_ca != NULL ? "TLS, client certificates required"
                                           : "TLS",
                services);
    }
    if (cfg->ops_listen != NULL)
        fprintf(f, "%-18s%s (plain HTTP: /healthz, /readyz, /metrics)\n", "ops_listen",
                cfg->ops_listen);
    else
        fprintf(f, "%-18s%s\n", "ops_listen", "none");
    if (cfg->allow_insecure) {
        fprintf(f, "%-18s%s\n", "allow_insecure", "true");
    }
    if (cfg->state.backend == STATE_BACKEND_ETCD) {
        const state_config_t *st = &cfg->state;
        char t[32];
        fprintf(f, "%-18setcd, prefix %s, lease %s, %s, endpoints", "state", st->prefix,
                duration_format_short_ms(st->lease_ttl_ms, t, sizeof(t)),
                st->tls_cert != NULL                            ? "mutual TLS"
                : strncmp(st->endpoints[0], "https://", 8) == 0 ? "TLS"
                                                                : "plaintext");
        for (size_t i = 0; i < st->endpoints_count; i++)
            fprintf(f, "%s %s", i > 0 ? "," : "", st->endpoints[i]);
        fputc('\n', f);
    } else {
        fprintf(f, "%-18s%s\n", "state file",
                cfg->state_file != NULL ? cfg->state_file : "none (in-memory only)");
    }
    if (cfg->provider_kind != NULL && strcmp(cfg->provider_kind, "exec") == 0) {
        char t[32];
        fprintf(f, "%-18sexec %s, timeout %s, parallelism %d; max message %s\n", "provider",
                cfg->exec_command, duration_format_short_ms(cfg->exec_timeout_ms, t, sizeof(t)),
                (int)cfg->exec_parallelism,
                quantity_format_bytes(cfg->max_message_bytes, a, sizeof(a)));
        summary__hook_inputs(f, cfg);
        if (cfg->exec_reconcile_interval_ms > 0)
            fprintf(f,
                    "%-18severy %s; a running machine missing from %d lists is replaced; "
                    "machines frugal does not know are %s\n",
                    "reconcile",
                    duration_format_short_ms(cfg->exec_reconcile_interval_ms, t, sizeof(t)),
                    (int)cfg->exec_reconcile_missing_after,
                    cfg->exec_reconcile_delete_unknown ? "deleted" : "reported");
        else
            fprintf(f, "%-18soff\n", "reconcile");
    } else {
        fprintf(f, "%-18s%s, boot %" PRId64 " s; max message %s\n", "provider", cfg->provider_kind,
                cfg->boot_seconds, quantity_format_bytes(cfg->max_message_bytes, a, sizeof(a)));
    }
    const limits_config_t *lim = &cfg->limits;
    char t1[32], t2[32];
    fprintf(f,
            "%-18smemory %s, %d streams a connection, %d calls a worker, receive timeout %s, "
            "idle timeout %s\n",
            "limits", quantity_format_bytes(lim->memory_bytes, a, sizeof(a)),
            (int)lim->max_concurrent_streams, (int)lim->max_calls_per_worker,
            duration_format_short_ms(lim->receive_timeout_ms, t1, sizeof(t1)),
            lim->idle_timeout_ms > 0
                ? duration_format_short_ms(lim->idle_timeout_ms, t2, sizeof(t2))
                : "off");
    fprintf(f, "%-18scpu %g/core, memory %g/GiB, gpu %g/GPU per hour; %zu machine types (%s)\n",
            "pricing", cfg->pricing.cpu, cfg->pricing.memory_gib, cfg->pricing.gpu,
            cfg->machine_types_count,
            cfg->pricing.builtin_catalog ? "builtin catalog + configured" : "configured only");
    fprintf(f, "%-18s%zu (%zu managed, %zu unmanaged)\n", "node groups", cfg->node_groups_count,
            managed, cfg->node_groups_count - managed);
    if (cfg->node_groups_count > 0) {
        fprintf(f, "  %-24s %-18s %-16s %5s %5s %5s  %s\n", "ID", "MACHINE TYPE", "ZONE", "MIN",
                "MAX", "SIZE", "MANAGED");
    }
    for (size_t i = 0; i < cfg->node_groups_count && i < SUMMARY_MAX_GROUPS; i++) {
        const node_group_config_t *g = &cfg->node_groups[i];
        char size[16] = "-";
        if (g->size >= 0) {
            snprintf(size, sizeof(size), "%" PRId32, g->size);
        }
        fprintf(f, "  %-24s %-18s %-16s %5" PRId32 " %5" PRId32 " %5s  %s\n", g->spec.id,
                g->spec.machine_type, g->spec.zone != NULL ? g->spec.zone : "-", g->min_size,
                g->max_size, size, g->managed ? "yes" : "no");
    }
    if (cfg->node_groups_count > SUMMARY_MAX_GROUPS) {
        fprintf(f, "  ... and %zu more\n", cfg->node_groups_count - SUMMARY_MAX_GROUPS);
    }
    const autoprov_config_t *ap = &cfg->autoprovisioning;
    if (!ap->enabled) {
        fprintf(f, "%-18s%s\n", "autoprovisioning", "disabled");
    } else {
        /* No zone anywhere: one theoretical group per shape, without a zone label. */
        char zones[32];
        if (ap->zones_count > 0)
            snprintf(zones, sizeof(zones), "%zu zones", ap->zones_count);
        else
            snprintf(zones, sizeof(zones), "no zone");
        fprintf(f,
                "%-18senabled, prefix %s: %zu machine types x %s x %zu label sets, "
                "at most %" PRId32 " groups (%" PRId32 " more from NewNodeGroup), empty ttl %s\n",
                "autoprovisioning", ap->prefix, ap->machine_types_count, zones,
                ap->label_sets_count, ap->max_node_groups, ap->max_theoretical_groups,
                duration_format_short_ms(ap->empty_group_ttl_ms, a, sizeof(a)));
        fprintf(f, "%-18slimits cpu %s..%s, memory %s..%s\n", "",
                quantity_format_milli(ap->min_cpu_milli, a, sizeof(a)),
                quantity_format_milli_limit(ap->max_cpu_milli, b, sizeof(b)),
                quantity_format_bytes(ap->min_memory_bytes, c, sizeof(c)),
                quantity_format_bytes_limit(ap->max_memory_bytes, d, sizeof(d)));
    }
    const ranking_config_t *r = &cfg->ranking;
    fprintf(f, "%-18sdamper cpu %s memory %s; preferred cpu", "ranking",
            quantity_format_milli(r->damper.cpu_milli, a, sizeof(a)),
            quantity_format_bytes(r->damper.memory_bytes, b, sizeof(b)));
    for (size_t i = 0; i < r->preferred_nodes_count; i++) {
        const preferred_node_t *p = &r->preferred_nodes[i];
        quantity_format_milli(p->cpu_milli, a, sizeof(a));
        if (p->max_nodes >= 0) {
            fprintf(f, " <=%" PRId32 ":%s", p->max_nodes, a);
        } else {
            fprintf(f, " else:%s", a);
        }
    }
    fprintf(f, "\n%-18ssuppress_scale %g, gpu_unfitness %g, not_exist_penalty %g\n", "",
            r->suppress_scale, r->gpu_unfitness, r->not_exist_penalty);
    fprintf(f, "%-18sstrategy %s, cluster size ", "", config_ranking_strategy_name(r->strategy));
    if (r->cluster_size == RANKING_CLUSTER_SIZE_AUTO)
        fprintf(f, "auto\n");
    else
        fprintf(f, "%" PRId64 "\n", r->cluster_size);
}
