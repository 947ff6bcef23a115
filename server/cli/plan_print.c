/* The report of `frugal plan` (plan.h): the plan plan.c has built, printed as tables
 * (the default) or as YAML (-o yaml). Reads the plan, decides nothing. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "escalator.h"
#include "plan.h"
#include "pricing.h"
#include "propose.h"
#include "quantity.h"
#include "ranking.h"

#define PLAN_CELL 1024

/* ------------------------------------------------------------------------------------
 * Small helpers
 * ---------------------------------------------------------------------------------- */

/* Append to buf[0..size) at *len, truncating with "..." when full. */
static void plan__append(char *buf, size_t size, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void plan__append(char *buf, size_t size, size_t *len, const char *fmt, ...) {
    if (*len >= size - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, size - *len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= size - *len) {
        *len = size - 1;
        if (size > 4)
            memcpy(buf + size - 4, "...", 4);
        return;
    }
    *len += (size_t)n;
}

/* The similarity keys, sizes and max sizes of the managed groups, for escalator_split
 * of winner chosen's nodes; a group's size is its node count in NODES.json when given,
 * else its initial size. As CA, a similar group joins the split only when it can host
 * the winner's pods too (a zone the pods select is no place for their nodes): the others
 * get no key. Every array has pl->n_groups entries (free them with free). */
static void plan__split_inputs(const plan_t *pl, size_t chosen, const char ***keys, int64_t **sizes,
                               int64_t **max) {
    *keys = cli_xcalloc(pl->n_groups, sizeof(**keys));
    *sizes = cli_xcalloc(pl->n_groups, sizeof(**sizes));
    *max = cli_xcalloc(pl->n_groups, sizeof(**max));
    const plan_group_t *w = &pl->groups[chosen];
    char why[256];
    for (size_t k = 0; k < pl->n_groups; k++) {
        bool hosts = true;
        for (size_t j = 0; j < w->held_count && hosts && k != chosen; j++)
            hosts = plan_can_host(pl, &pl->groups[k], w->held[j], why, sizeof(why));
        (*keys)[k] = hosts ? pl->groups[k].info.similarity_key : NULL;
        const node_group_config_t *g = pl->groups[k].cfg;
        (*sizes)[k] = pl->nodes_path != NULL ? pl->util[g - pl->cfg->node_groups].eg.nodes
                                             : plan_initial_size(g);
        (*max)[k] = g->max_size;
    }
}

/* A percentage as short as it is exact to 3 decimals: "250", "12.5", "3.125", "inf". */
static const char *plan__percent(double v, char *buf, size_t size) {
    if (isinf(v))
        return snprintf(buf, size, "inf"), buf;
    snprintf(buf, size, "%.3f", v);
    char *end = buf + strlen(buf);
    while (end > buf && end[-1] == '0')
        *--end = '\0';
    if (end > buf && end[-1] == '.')
        end[-1] = '\0';
    return buf;
}

/* Why no option hosts pending pod i: "group: reason; ..." over the managed groups. */
static void plan__why_unhosted(const plan_t *pl, size_t i, char *buf, size_t size) {
    size_t len = 0;
    buf[0] = '\0';
    char why[256];
    for (size_t k = 0; k < pl->n_groups; k++) {
        const plan_group_t *g = &pl->groups[k];
        if (!plan_can_host(pl, g, i, why, sizeof(why)))
            plan__append(buf, size, &len, "%s%s: %s", len > 0 ? "; " : "", g->cfg->spec.id, why);
        else if (g->skip != NULL)
            plan__append(buf, size, &len, "%s%s: %s", len > 0 ? "; " : "", g->cfg->spec.id,
                         g->skip);
    }
    if (pl->n_groups == 0)
        plan__append(buf, size, &len, "no managed node group is configured");
}

static void plan__format_labels(const kv_list_t *l, char *buf, size_t size) {
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < l->count; i++)
        plan__append(buf, size, &len, "%s%s=%s", i > 0 ? "," : "", l->items[i].key,
                     l->items[i].value);
    if (len == 0)
        plan__append(buf, size, &len, "-");
}

static void plan__format_taints(const taint_list_t *l, char *buf, size_t size) {
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < l->count; i++)
        plan__append(buf, size, &len, "%s%s=%s:%s", i > 0 ? "," : "", l->items[i].key,
                     l->items[i].value, l->items[i].effect);
    if (len == 0)
        plan__append(buf, size, &len, "-");
}

/* ------------------------------------------------------------------------------------
 * Tables
 * ---------------------------------------------------------------------------------- */

/* The NOTE cell of a group's utilisation. */
static void plan__util_note(const plan_util_t *u, char *buf, size_t size) {
    size_t len = 0;
    char a[32], b[32];
    buf[0] = '\0';
    if (!u->cfg->managed)
        plan__append(buf, size, &len, "unmanaged; ");
    if (u->res.from_zero)
        plan__append(buf, size, &len, "from zero; ");
    if (u->res.starved)
        plan__append(buf, size, &len, "scale_on_starve; ");
    if (u->res.capped)
        plan__append(buf, size, &len, "wants %" PRId64 ", capped by max_size/limits; ",
                     u->res.delta_wanted);
    if (u->res.delta > 0)
        plan__append(buf, size, &len, "then %" PRId64 " node%s at cpu %s %%, memory %s %%; ",
                     u->eg.nodes + u->res.delta, u->eg.nodes + u->res.delta == 1 ? "" : "s",
                     plan__percent(u->res.cpu_after, a, sizeof(a)),
                     plan__percent(u->res.memory_after, b, sizeof(b)));
    if (u->eg.pods_without_requests > 0)
        plan__append(buf, size, &len, "%" PRId64 " pod%s without requests; ",
                     u->eg.pods_without_requests, u->eg.pods_without_requests == 1 ? "" : "s");
    if (u->eg.mixed_allocatable)
        plan__append(buf, size, &len, "nodes of different allocatable; ");
    if (len >= 2 && buf[len - 2] == ';')
        buf[len - 2] = '\0';
}

static void plan__print_util_table(const plan_t *pl) {
    char a[64], b[64], c[64], d[64], e[32], f[32], g[32], h[32], m[32], k[32], l[32];
    char cell[PLAN_CELL];
    printf("\nutilisation (Escalator: requests / allocatable; %s)\n",
           pl->nodes_path != NULL ? "nodes from NODES.json"
                                  : "groups at their configured size of template nodes");
    if (pl->cfg->node_groups_count == 0) {
        printf("  no node group is configured\n");
    } else {
        cli_table_t t = {.ncols = 13};
        cli_table_row(&t, "GROUP", "NODES", "PODS", "CPU REQ", "CPU CAP", "MEM REQ", "MEM CAP",
                      "CPU %", "MEM %", "USED %", "THRESHOLD", "DELTA", "NOTE");
        for (size_t i = 0; i < pl->cfg->node_groups_count; i++) {
            const plan_util_t *u = &pl->util[i];
            snprintf(e, sizeof(e), "%" PRId64, u->eg.nodes);
            snprintf(f, sizeof(f), "%" PRId64, u->eg.pods);
            snprintf(k, sizeof(k), "%d", (int)u->eg.threshold);
            snprintf(l, sizeof(l), "%" PRId64, u->res.delta);
            plan__util_note(u, cell, sizeof(cell));
            cli_table_row(&t, u->cfg->spec.id, e, f,
                          quantity_format_milli(u->eg.requests.cpu_milli, a, sizeof(a)),
                          quantity_format_milli(u->eg.capacity.cpu_milli, b, sizeof(b)),
                          quantity_format_bytes(u->eg.requests.memory_bytes, c, sizeof(c)),
                          quantity_format_bytes(u->eg.capacity.memory_bytes, d, sizeof(d)),
                          plan__percent(u->res.cpu_percent, g, sizeof(g)),
                          plan__percent(u->res.memory_percent, h, sizeof(h)),
                          plan__percent(u->res.used_percent, m, sizeof(m)), k, l, cell);
        }
        cli_table_flush(&t, 2);
    }
    if (pl->n_notes > 0)
        printf("input that breaks the model (reported, the report goes on):\n");
    for (size_t i = 0; i < pl->n_notes; i++)
        printf("  %s: %s\n", pl->notes[i].subject, pl->notes[i].message);
}

/* For each winner: how CA's --balance-similar-node-groups spreads its nodes over the
 * managed groups similar to it, each at its initial size. */
static void plan__print_split_table(const plan_t *pl) {
    if (pl->n_options == 0)
        return;
    int64_t *share = cli_xcalloc(pl->n_groups, sizeof(*share));
    char cell[PLAN_CELL];
    for (size_t s = 0; s < pl->decision.selected_count; s++) {
        size_t chosen = pl->option_group[pl->decision.selected[s]];
        const plan_group_t *w = &pl->groups[chosen];
        const char **keys;
        int64_t *sizes, *max;
        plan__split_inputs(pl, chosen, &keys, &sizes, &max);
        int64_t placed =
            escalator_split(keys, sizes, max, pl->n_groups, chosen, w->node_count, share);
        size_t len = 0, members = 0;
        cell[0] = '\0';
        for (size_t k = 0; k < pl->n_groups; k++) {
            if (!escalator_in_set(keys, k, chosen))
                continue;
            members++;
            plan__append(cell, sizeof(cell), &len, "%s%s +%" PRId64, len > 0 ? ", " : "",
                         pl->groups[k].cfg->spec.id, share[k]);
        }
        printf("balance-similar split of %s's %d node%s: %s%s", w->cfg->spec.id, (int)w->node_count,
               w->node_count == 1 ? "" : "s", cell, members == 1 ? " (no similar group)" : "");
        if (placed < w->node_count)
            printf(" (%" PRId64 " placed: the similar groups reach max_size)", placed);
        printf("\n");
        free(keys);
        free(sizes);
        free(max);
    }
    free(share);
}

/* The NOTE of option o: what keeps it from a score, its max_size cap, and under
 * demand-fit the rules beside the score that decided it (docs/ranking.md). */
static void plan__option_note(const plan_t *pl, size_t o, char *buf, size_t size) {
    const plan_group_t *g = &pl->groups[pl->option_group[o]];
    const ranking_figures_t *fg = &pl->figs[o];
    const char *sep = "";
    size_t len = 0;
    buf[0] = '\0';
    if (!fg->scored) {
        plan__append(buf, size, &len, "not scorable");
        return;
    }
    if (g->nodes_needed > g->node_count) {
        plan__append(buf, size, &len,
                     "needs %" PRId64 " nodes, capped by max_size %d: holds the pods those take",
                     g->nodes_needed, (int)g->cfg->max_size);
        sep = "; ";
    }
    if (pl->decision.strategy != RANKING_STRATEGY_DEMAND_FIT)
        return;
    if (pl->in[o].left_out_pods_price > 0.0) {
        plan__append(buf, size, &len,
                     "%sleaves pods to a later scale-up (their nodes %.6f, pods %.6f)", sep,
                     pl->in[o].left_out_nodes_price, pl->in[o].left_out_pods_price);
        sep = "; ";
    }
    bool lower = false; /* a better score lost: the winner was chosen by another rule */
    for (size_t k = 0; pl->winner[o] && k < pl->n_options; k++)
        lower |= pl->figs[k].scored && pl->figs[k].score < fg->score &&
                 !ranking_scores_tie(pl->figs[k].score, fg->score);
    if (fg->most_pods_first)
        plan__append(buf, size, &len, "%smost pods first", sep);
    else if (lower)
        plan__append(buf, size, &len, "%sexact GPU fit: the lowest pods_ratio, %.6f", sep,
                     fg->pods_ratio);
}

int plan_print_table(const plan_t *pl) {
    const frugal_config_t *cfg = pl->cfg;
    char a[64], b[64], c[64], d[64], e[64], f[64], g6[64], h[64], cell[PLAN_CELL];

    printf("cluster size: %" PRId64 " nodes (%s); preferred node cpu: %s\n", pl->cluster_size,
           pl->cluster_size_fixed   ? "ranking.cluster_size"
           : pl->nodes_path != NULL ? pl->nodes_path
                                    : "configured group sizes",
           quantity_format_milli(pl->pref_cpu_milli, a, sizeof(a)));
    printf("damper price X: %.6f\n", pl->damper_price);
    printf("pending pods: %zu of %zu", pl->n_pending, pl->pods.count);
    if (pl->daemonset_pods > 0)
        printf(" (%zu DaemonSet pod%s left out)", pl->daemonset_pods,
               pl->daemonset_pods == 1 ? "" : "s");
    printf("\n");
    if (pl->n_pending > 0) {
        cli_table_t t = {.ncols = 5};
        cli_table_row(&t, "POD", "CPU", "MEMORY", "GPU", "PRICE");
        for (size_t i = 0; i < pl->n_pending; i++) {
            const resources_t *r = &pl->pp[i].request;
            snprintf(c, sizeof(c), "%" PRId64, r->gpu);
            snprintf(d, sizeof(d), "%.6f", pricing_linear(&cfg->pricing, r));
            cli_table_row(&t, pl->pp[i].name, quantity_format_milli(r->cpu_milli, a, sizeof(a)),
                          quantity_format_bytes(r->memory_bytes, b, sizeof(b)), c, d);
        }
        cli_table_flush(&t, 2);
    }

    printf("\nscale-up options (configured groups)\n");
    if (pl->n_options == 0) {
        printf("  none\n");
    } else {
        bool demand_fit = pl->decision.strategy == RANKING_STRATEGY_DEMAND_FIT;
        cli_table_t t = {.ncols = 12};
        if (demand_fit)
            cli_table_row(&t, "", "GROUP", "MACHINE TYPE", "NODES", "PODS", "P", "T", "SPARE",
                          "USE", "RATIO", "SCORE", "NOTE");
        else
            cli_table_row(&t, "", "GROUP", "MACHINE TYPE", "NODES", "PODS", "P", "T", "RATIO",
                          "UNFITNESS", "SUPPRESSED", "SCORE", "NOTE");
        for (size_t r = 0; r < pl->n_options; r++) {
            size_t o = pl->ranked[r];
            const plan_group_t *g = &pl->groups[pl->option_group[o]];
            const ranking_figures_t *fg = &pl->figs[o];
            snprintf(a, sizeof(a), "%d", (int)g->node_count);
            snprintf(b, sizeof(b), "%zu", g->held_count);
            snprintf(c, sizeof(c), "%.6f", pl->in[o].node_price);
            snprintf(d, sizeof(d), "%.6f", pl->in[o].pods_price);
            /* Under demand-fit the two factor columns are the spare room and its use. */
            snprintf(e, sizeof(e), "%.6f", demand_fit ? pl->in[o].spare_value : fg->ratio);
            snprintf(f, sizeof(f), "%.6f", demand_fit ? pl->in[o].use_share : fg->unfitness);
            snprintf(g6, sizeof(g6), "%.6f", demand_fit ? fg->ratio : fg->suppressed);
            snprintf(h, sizeof(h), "%.6f", fg->score);
            plan__option_note(pl, o, cell, sizeof(cell));
            cli_table_row(&t, pl->winner[o] ? "*" : "", g->cfg->spec.id, g->cfg->spec.machine_type,
                          a, b, c, d, e, f, g6, fg->scored ? h : "-", cell);
        }
        cli_table_flush(&t, 2);
    }
    bool header = false;
    for (size_t k = 0; k < pl->n_groups; k++) {
        const plan_group_t *g = &pl->groups[k];
        if (g->skip == NULL)
            continue;
        if (!header)
            printf("not options:\n");
        header = true;
        printf("  %s: %s\n", g->cfg->spec.id, g->skip);
    }
    header = false;
    for (size_t i = 0; i < pl->n_pending; i++) {
        if (pl->hosted[i])
            continue;
        if (!header)
            printf("pods no configured group can host:\n");
        header = true;
        plan__why_unhosted(pl, i, cell, sizeof(cell));
        printf("  %s: %s\n", pl->pp[i].name, cell);
    }

    plan__print_split_table(pl);
    plan__print_util_table(pl);

    printf("\nautoprovisioning proposals\n");
    if (!pl->proposed) {
        printf("  autoprovisioning is disabled\n");
    } else if (pl->proposals.count == 0) {
        printf("  none\n");
    } else {
        cli_table_t t = {.ncols = 8};
        cli_table_row(&t, "GROUP", "MACHINE TYPE", "ZONE", "LABELS", "TAINTS", "PODS", "NODES",
                      "SCORE");
        for (size_t k = 0; k < pl->proposals.count; k++) {
            const propose_proposal_t *p = &pl->proposals.proposals[k];
            char labels[PLAN_CELL], taints[PLAN_CELL];
            plan__format_labels(&p->labels, labels, sizeof(labels));
            plan__format_taints(&p->taints, taints, sizeof(taints));
            snprintf(a, sizeof(a), "%zu", p->pods_count);
            snprintf(b, sizeof(b), "%d", (int)p->node_count);
            snprintf(c, sizeof(c), "%.6f", p->figures.score);
            cli_table_row(&t, p->group_id, p->machine_type->name, p->zone != NULL ? p->zone : "-",
                          labels, taints, a, b, p->figures.scored ? c : "-");
        }
        cli_table_flush(&t, 2);
    }
    if (pl->proposed && pl->proposals.unschedulable_count > 0) {
        printf("unschedulable (no allowed machine type serves them):\n");
        for (size_t k = 0; k < pl->proposals.unschedulable_count; k++)
            printf("  %s\n", pl->pp[pl->proposals.unschedulable[k]].name);
    }
    return 0;
}

/* ------------------------------------------------------------------------------------
 * YAML
 * ---------------------------------------------------------------------------------- */

static void plan__yaml_figures(int indent, const ranking_figures_t *f) {
    printf("%*sscored: %s\n", indent, "", f->scored ? "true" : "false");
    printf("%*snode_price: %.6f\n%*spods_price: %.6f\n%*sratio: %.6f\n", indent, "", f->node_price,
           indent, "", f->pods_price, indent, "", f->ratio);
    printf("%*sunfitness: %.6f\n%*ssuppressed: %.6f\n%*sscore: %.6f\n", indent, "", f->unfitness,
           indent, "", f->suppressed, indent, "", f->score);
}

/* "pods:" and the names of pending pods idx[0..n) (an option's) or wide[0..n) (a
 * proposal's); one of idx and wide is NULL. */
static void plan__yaml_pods(int indent, const plan_t *pl, const uint32_t *idx, const size_t *wide,
                            size_t n) {
    printf("%*spods:%s\n", indent, "", n == 0 ? " []" : "");
    for (size_t k = 0; k < n; k++) {
        printf("%*s- ", indent, "");
        cli_yaml_str(pl->pp[idx != NULL ? idx[k] : wide[k]].name);
        putchar('\n');
    }
}

/* "balance_similar_split:" of winning group chosen: each similar managed group and the
 * nodes CA would give it. */
static void plan__yaml_split(const plan_t *pl, size_t chosen) {
    const char **keys;
    int64_t *sizes, *max;
    plan__split_inputs(pl, chosen, &keys, &sizes, &max);
    int64_t *share = cli_xcalloc(pl->n_groups, sizeof(*share));
    escalator_split(keys, sizes, max, pl->n_groups, chosen, pl->groups[chosen].node_count, share);
    printf("  balance_similar_split:\n");
    for (size_t k = 0; k < pl->n_groups; k++) {
        if (!escalator_in_set(keys, k, chosen))
            continue;
        cli_yaml_item_kv(2, "group", pl->groups[k].cfg->spec.id);
        printf("    size: %" PRId64 "\n    nodes: %" PRId64 "\n", sizes[k], share[k]);
    }
    free(share);
    free(keys);
    free(sizes);
    free(max);
}

/* A percentage as a YAML float (".inf" from zero). */
static void plan__yaml_percent(int indent, const char *key, double v) {
    char buf[32];
    printf("%*s%s: %s\n", indent, "", key, isinf(v) ? ".inf" : plan__percent(v, buf, sizeof(buf)));
}

static void plan__yaml_util(const plan_t *pl) {
    char a[64], b[64];
    printf("utilisation:\n");
    cli_yaml_kv(2, "nodes_from", pl->nodes_path != NULL ? "nodes" : "config");
    printf("  groups:%s\n", pl->cfg->node_groups_count == 0 ? " []" : "");
    for (size_t i = 0; i < pl->cfg->node_groups_count; i++) {
        const plan_util_t *u = &pl->util[i];
        cli_yaml_item_kv(2, "group", u->cfg->spec.id);
        printf("    managed: %s\n", u->cfg->managed ? "true" : "false");
        printf("    nodes: %" PRId64 "\n    pods: %" PRId64 "\n", u->eg.nodes, u->eg.pods);
        printf("    pods_without_requests: %" PRId64 "\n", u->eg.pods_without_requests);
        printf("    mixed_allocatable: %s\n", u->eg.mixed_allocatable ? "true" : "false");
        printf("    requests:\n");
        cli_yaml_kv(6, "cpu", quantity_format_milli(u->eg.requests.cpu_milli, a, sizeof(a)));
        cli_yaml_kv(6, "memory", quantity_format_bytes(u->eg.requests.memory_bytes, b, sizeof(b)));
        printf("    capacity:\n");
        cli_yaml_kv(6, "cpu", quantity_format_milli(u->eg.capacity.cpu_milli, a, sizeof(a)));
        cli_yaml_kv(6, "memory", quantity_format_bytes(u->eg.capacity.memory_bytes, b, sizeof(b)));
        plan__yaml_percent(4, "cpu_percent", u->res.cpu_percent);
        plan__yaml_percent(4, "memory_percent", u->res.memory_percent);
        plan__yaml_percent(4, "used_percent", u->res.used_percent);
        printf("    scale_up_threshold: %d\n    scale_on_starve: %s\n", (int)u->eg.threshold,
               u->eg.scale_on_starve ? "true" : "false");
        printf("    from_zero: %s\n    starved: %s\n", u->res.from_zero ? "true" : "false",
               u->res.starved ? "true" : "false");
        printf("    delta_wanted: %" PRId64 "\n    delta: %" PRId64 "\n", u->res.delta_wanted,
               u->res.delta);
        printf("    nodes_after: %" PRId64 "\n", u->eg.nodes + u->res.delta);
        plan__yaml_percent(4, "cpu_percent_after", u->res.cpu_after);
        plan__yaml_percent(4, "memory_percent_after", u->res.memory_after);
    }
    printf("  warnings:%s\n", pl->n_notes == 0 ? " []" : "");
    for (size_t i = 0; i < pl->n_notes; i++) {
        cli_yaml_item_kv(2, "subject", pl->notes[i].subject);
        cli_yaml_kv(4, "message", pl->notes[i].message);
    }
}

int plan_print_yaml(const plan_t *pl) {
    const frugal_config_t *cfg = pl->cfg;
    char a[64], b[64], cell[PLAN_CELL];
    printf("cluster_size: %" PRId64 "\n", pl->cluster_size);
    cli_yaml_kv(0, "cluster_size_from",
                pl->cluster_size_fixed   ? "ranking"
                : pl->nodes_path != NULL ? "nodes"
                                         : "config");
    cli_yaml_kv(0, "preferred_node_cpu", quantity_format_milli(pl->pref_cpu_milli, a, sizeof(a)));
    printf("damper_price: %.6f\n", pl->damper_price);
    printf("pods: %zu\ndaemonset_pods_left_out: %zu\n", pl->pods.count, pl->daemonset_pods);
    printf("pending_pods:%s\n", pl->n_pending == 0 ? " []" : "");
    for (size_t i = 0; i < pl->n_pending; i++) {
        const resources_t *r = &pl->pp[i].request;
        printf("- name: ");
        cli_yaml_str(pl->pp[i].name);
        printf("\n");
        cli_yaml_kv(2, "cpu", quantity_format_milli(r->cpu_milli, a, sizeof(a)));
        cli_yaml_kv(2, "memory", quantity_format_bytes(r->memory_bytes, b, sizeof(b)));
        printf("  gpu: %" PRId64 "\n  price: %.6f\n", r->gpu, pricing_linear(&cfg->pricing, r));
    }

    cli_yaml_kv(0, "strategy", config_ranking_strategy_name(pl->cfg->ranking.strategy));
    printf("scale_up_options:%s\n", pl->n_options == 0 ? " []" : "");
    for (size_t r = 0; r < pl->n_options; r++) {
        size_t o = pl->ranked[r];
        const plan_group_t *g = &pl->groups[pl->option_group[o]];
        printf("- group: ");
        cli_yaml_str(g->cfg->spec.id);
        printf("\n");
        cli_yaml_kv(2, "machine_type", g->cfg->spec.machine_type);
        printf("  winner: %s\n", pl->winner[o] ? "true" : "false");
        printf("  nodes: %d\n  nodes_needed: %" PRId64 "\n", (int)g->node_count, g->nodes_needed);
        plan__yaml_pods(2, pl, g->held, NULL, g->held_count);
        plan__yaml_figures(2, &pl->figs[o]);
        if (pl->decision.strategy == RANKING_STRATEGY_DEMAND_FIT) {
            const ranking_input_t *in = &pl->in[o];
            printf("  spare_value: %.6f\n  use_share: %.6f\n  arrivals_per_hour: %.6f\n"
                   "  gib_per_core: %.6f\n  mixed_gpu: %s\n  pods_ratio: %.6f\n"
                   "  left_out_nodes_price: %.6f\n  left_out_pods_price: %.6f\n"
                   "  most_pods_first: %s\n",
                   in->spare_value, in->use_share, in->arrivals_per_hour, in->gib_per_core,
                   in->gpu_mixed ? "true" : "false", pl->figs[o].pods_ratio,
                   in->left_out_nodes_price, in->left_out_pods_price,
                   pl->figs[o].most_pods_first ? "true" : "false");
        }
        char figures[RANKING_FIGURES_MAX];
        ranking_format_strategy_figures(pl->decision.strategy, &pl->figs[o], &pl->in[o], figures,
                                        sizeof(figures));
        cli_yaml_kv(2, "figures", figures); /* as BestOptions' debug has them */
        plan__option_note(pl, o, cell, sizeof(cell));
        cli_yaml_kv(2, "note", cell);
        if (pl->winner[o])
            plan__yaml_split(pl, pl->option_group[o]);
    }
    size_t skipped = 0;
    for (size_t k = 0; k < pl->n_groups; k++)
        skipped += pl->groups[k].skip != NULL;
    printf("not_options:%s\n", skipped == 0 ? " []" : "");
    for (size_t k = 0; k < pl->n_groups; k++) {
        const plan_group_t *g = &pl->groups[k];
        if (g->skip == NULL)
            continue;
        printf("- group: ");
        cli_yaml_str(g->cfg->spec.id);
        printf("\n");
        cli_yaml_kv(2, "reason", g->skip);
    }
    size_t unhosted = 0;
    for (size_t i = 0; i < pl->n_pending; i++)
        unhosted += !pl->hosted[i];
    printf("unhostable_pods:%s\n", unhosted == 0 ? " []" : "");
    for (size_t i = 0; i < pl->n_pending; i++) {
        if (pl->hosted[i])
            continue;
        printf("- pod: ");
        cli_yaml_str(pl->pp[i].name);
        printf("\n");
        plan__why_unhosted(pl, i, cell, sizeof(cell));
        cli_yaml_kv(2, "why", cell);
    }

    plan__yaml_util(pl);

    printf("autoprovisioning:\n  enabled: %s\n", pl->proposed ? "true" : "false");
    if (pl->proposed) {
        const propose_result_t *res = &pl->proposals;
        printf("  proposals:%s\n", res->count == 0 ? " []" : "");
        for (size_t k = 0; k < res->count; k++) {
            const propose_proposal_t *p = &res->proposals[k];
            printf("  - group: ");
            cli_yaml_str(p->group_id);
            printf("\n");
            cli_yaml_kv(4, "machine_type", p->machine_type->name);
            if (p->zone != NULL)
                cli_yaml_kv(4, "zone", p->zone);
            else
                printf("    zone: null\n");
            printf("    labels:%s\n", p->labels.count == 0 ? " {}" : "");
            for (size_t l = 0; l < p->labels.count; l++) {
                printf("      ");
                cli_yaml_str(p->labels.items[l].key);
                printf(": ");
                cli_yaml_str(p->labels.items[l].value);
                printf("\n");
            }
            printf("    taints:%s\n", p->taints.count == 0 ? " []" : "");
            for (size_t l = 0; l < p->taints.count; l++) {
                printf("    - key: ");
                cli_yaml_str(p->taints.items[l].key);
                printf("\n");
                cli_yaml_kv(6, "value", p->taints.items[l].value);
                cli_yaml_kv(6, "effect", p->taints.items[l].effect);
            }
            printf("    nodes: %d\n    exists: %s\n", (int)p->node_count,
                   p->exists ? "true" : "false");
            plan__yaml_pods(4, pl, NULL, p->pods, p->pods_count);
            plan__yaml_figures(4, &p->figures);
        }
        printf("  unschedulable:%s\n", res->unschedulable_count == 0 ? " []" : "");
        for (size_t k = 0; k < res->unschedulable_count; k++) {
            printf("  - ");
            cli_yaml_str(pl->pp[res->unschedulable[k]].name);
            printf("\n");
        }
    }
    return 0;
}
