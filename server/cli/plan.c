/* `frugal plan -c FILE --pods PODS.json [--nodes NODES.json] [-o yaml]`: offline, what
 * frugal would decide for the pending pods of a cluster, and why (README.md,
 * "Commands"). No server and no gRPC: the inputs (kubectl's JSON, see kube_json.h) are
 * converted into the same structs cluster-autoscaler sends, and the pure modules do
 * the rest: pod_effective_request, template_build + node_info_decode, fit_pod,
 * decide_best_options (the very decision BestOptions makes), propose_node_groups.
 *
 * Pending pods: status.phase Pending and no spec.nodeName; pods controlled by a
 * DaemonSet are left out, as cluster-autoscaler leaves them out of scale-up.
 * Cluster size: the number of nodes in NODES.json when given, else the sum of the
 * configured groups' initial sizes (size, else min_size).
 *
 * Scale-up options are what BestOptions would choose among the configured managed
 * groups. A group can host a pod when the pod fits the group's template node (fit.h:
 * allocatable resources, nodeSelector, required node affinity, taints). An option's
 * node count is ceil(summed requests / one node's allocatable), the larger resource,
 * capped at what max_size still allows over the initial size; a group that can host
 * none of the pods, or is at max_size, is not an option. The options are decided by
 * decide.h exactly as a live BestOptions decides them for the same pods and template
 * nodes, each group existing with its initial size; X, P and T are the damper, node
 * and summed pod prices of the ranking.
 *
 * Exit status: 0, 1 on unreadable or invalid input (PATH:LINE:COL: message), 2 on
 * usage errors. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "config.h"
#include "decide.h"
#include "fit.h"
#include "k8s.h"
#include "kube_json.h"
#include "node_info.h"
#include "pod.h"
#include "pricing.h"
#include "propose.h"
#include "template.h"

#define PLAN_CELL 1024

/* One configured managed group as an option. */
typedef struct plan_group {
    const node_group_config_t *cfg;
    node_info_t info; /* the decoded template: allocatable, GPU, similarity key */
    k8s_node_t *node; /* the same template, for labels and taints */
    uint32_t *pods;   /* indexes of the pending pods it can host */
    size_t pods_count;
    resources_t sum; /* their summed requests */
    int64_t nodes_needed;
    int32_t node_count; /* nodes_needed capped by max_size */
    const char *skip;   /* why it is not an option; NULL when it is one */
    char skip_buf[128];
    size_t option; /* index into the ranking arrays when an option */
} plan_group_t;

typedef struct plan {
    const frugal_config_t *cfg;
    const char *pods_path;
    const char *nodes_path; /* NULL: cluster size from the config */
    kube_pod_list_t pods;
    kube_node_list_t nodes;
    size_t daemonset_pods;     /* pending but left out */
    const k8s_pod_t **pending; /* the pending pods ... */
    propose_pod_t *pp;         /* ... as the algorithms see them */
    size_t n_pending;
    bool *hosted; /* pending pod -> some option hosts it */
    int64_t cluster_size;
    int64_t pref_cpu_milli;
    double damper_price;
    plan_group_t *groups;
    size_t n_groups;
    resources_t *requests;         /* pending pod -> its effective request */
    decide_option_t *options;      /* the options as BestOptions would receive them ... */
    decide_result_t decision;      /* ... and its decision */
    const ranking_input_t *in;     /* = decision.inputs */
    const ranking_figures_t *figs; /* = decision.figures */
    bool *winner;
    size_t *option_group; /* option -> group index */
    size_t n_options;
    bool proposed;
    propose_result_t proposals;
} plan_t;

/* ------------------------------------------------------------------------------------
 * Small helpers
 * ---------------------------------------------------------------------------------- */

static int plan__usage(FILE *f, int status) {
    fprintf(f,
            "usage: frugal plan -c FILE --pods PODS.json [--nodes NODES.json] [-o table|yaml]\n"
            "  what frugal would decide for the pending pods of PODS.json (kubectl get pods -A\n"
            "  -o json), and why; NODES.json (kubectl get nodes -o json) gives the cluster size\n");
    return status;
}

static int plan__nomem(void) {
    fprintf(stderr, "frugal plan: out of memory\n");
    return 1;
}

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

static int plan__read_file(const char *path, char **text, size_t *len) {
    int err = cli_read_file(path, text, len);
    if (err != 0) {
        fprintf(stderr, "frugal plan: cannot read %s: %s\n", path, strerror(err));
        return 1;
    }
    return 0;
}

static int64_t plan__ceil_div(int64_t a, int64_t b) {
    return a <= 0 ? 0 : b <= 0 ? INT64_MAX : a / b + (a % b != 0);
}

static void plan__add(int64_t *acc, int64_t v) {
    if (__builtin_add_overflow(*acc, v, acc))
        *acc = INT64_MAX;
}

/* Whether g can host pending pod i; when not, why (for the "why" of unhostable pods). */
static bool plan__can_host(const plan_t *pl, const plan_group_t *g, size_t i, char *why,
                           size_t size) {
    return fit_pod(pl->pending[i]->spec, &pl->pp[i].request, g->node, &g->info.capacity, why, size);
}

/* ------------------------------------------------------------------------------------
 * Building the plan
 * ---------------------------------------------------------------------------------- */

static int32_t plan__initial_size(const node_group_config_t *g) {
    return g->size >= 0 ? g->size : g->min_size;
}

/* Load PATH as a pod or node list; 0, or 1 with the message printed. */
static int plan__load_list(const char *path, bool nodes, plan_t *pl) {
    char *text;
    size_t len;
    if (plan__read_file(path, &text, &len) != 0)
        return 1;
    kube_json_error_t err;
    memset(&err, 0, sizeof(err));
    int rc = nodes ? kube_json_parse_nodes(text, len, &pl->nodes, &err)
                   : kube_json_parse_pods(text, len, &pl->pods, &err);
    free(text);
    if (rc == 0)
        return 0;
    if (err.line > 0)
        fprintf(stderr, "%s:%d:%d: %s\n", path, err.line, err.column, err.message);
    else
        fprintf(stderr, "%s: %s\n", path, err.message);
    return 1;
}

static int plan__collect_pending(plan_t *pl) {
    size_t n = pl->pods.count > 0 ? pl->pods.count : 1;
    pl->pending = calloc(n, sizeof(*pl->pending));
    pl->pp = calloc(n, sizeof(*pl->pp));
    pl->hosted = calloc(n, sizeof(*pl->hosted));
    if (pl->pending == NULL || pl->pp == NULL || pl->hosted == NULL)
        return plan__nomem();
    for (size_t i = 0; i < pl->pods.count; i++) {
        const k8s_pod_t *pod = pl->pods.items[i];
        if (!kube_pod_is_pending(pod))
            continue;
        const char *kind = kube_pod_controller_kind(pod);
        if (kind != NULL && strcmp(kind, "DaemonSet") == 0) {
            pl->daemonset_pods++;
            continue;
        }
        frugal_err_t err;
        frugal_err_clear(&err);
        if (propose_pod_from_k8s(pod, &pl->pp[pl->n_pending], &err) != 0) {
            if (err.code == FRUGAL_ENOMEM)
                return plan__nomem();
            fprintf(stderr, "%s: items[%zu]: %s\n", pl->pods_path, i, err.msg);
            return 1;
        }
        pl->pending[pl->n_pending++] = pod;
    }
    return 0;
}

/* Decode g's template and find the pods it can host. */
static int plan__build_group(plan_t *pl, plan_group_t *g) {
    const frugal_config_t *cfg = pl->cfg;
    uint8_t *buf = NULL;
    size_t len = 0;
    frugal_err_t err;
    frugal_err_clear(&err);
    int rc = template_build(cfg, &g->cfg->spec, &buf, &len, &err);
    if (rc == 0)
        rc = node_info_decode(buf, len, &g->info, &err);
    if (rc == 0 && (g->node = k8s__io__api__core__v1__node__unpack(NULL, len, buf)) == NULL)
        rc = frugal_err_set(&err, FRUGAL_ENOMEM, "out of memory");
    free(buf);
    if (rc != 0) {
        fprintf(stderr, "frugal plan: node group %s: %s\n", g->cfg->spec.id, err.msg);
        return 1;
    }
    if ((g->pods = calloc(pl->n_pending > 0 ? pl->n_pending : 1, sizeof(*g->pods))) == NULL)
        return plan__nomem();
    char why[256];
    for (size_t i = 0; i < pl->n_pending; i++) {
        if (!plan__can_host(pl, g, i, why, sizeof(why)))
            continue;
        g->pods[g->pods_count++] = (uint32_t)i;
        plan__add(&g->sum.cpu_milli, pl->pp[i].request.cpu_milli);
        plan__add(&g->sum.memory_bytes, pl->pp[i].request.memory_bytes);
        plan__add(&g->sum.gpu, pl->pp[i].request.gpu);
    }
    const resources_t *cap = &g->info.capacity;
    int64_t nodes = plan__ceil_div(g->sum.cpu_milli, cap->cpu_milli);
    int64_t by_memory = plan__ceil_div(g->sum.memory_bytes, cap->memory_bytes);
    int64_t by_gpu = plan__ceil_div(g->sum.gpu, cap->gpu);
    if (by_memory > nodes)
        nodes = by_memory;
    if (by_gpu > nodes)
        nodes = by_gpu;
    g->nodes_needed = nodes > 1 ? nodes : 1;
    int32_t headroom = g->cfg->max_size - plan__initial_size(g->cfg);
    if (g->pods_count == 0) {
        g->skip = "hosts none of the pending pods";
    } else if (headroom <= 0) {
        snprintf(g->skip_buf, sizeof(g->skip_buf), "at max_size %d", (int)g->cfg->max_size);
        g->skip = g->skip_buf;
    }
    g->node_count = g->nodes_needed > headroom ? headroom : (int32_t)g->nodes_needed;
    return 0;
}

/* The options as a live BestOptions would get them: each configured group that can
 * host pending pods, its template node, the pods, and the group as the server knows it
 * when it starts (existing, at its initial size, with its spot settings). */
static int plan__rank(plan_t *pl) {
    const frugal_config_t *cfg = pl->cfg;
    size_t managed = 0;
    for (size_t i = 0; i < cfg->node_groups_count; i++)
        managed += cfg->node_groups[i].managed;
    size_t m = managed > 0 ? managed : 1;
    pl->groups = calloc(m, sizeof(*pl->groups));
    pl->options = calloc(m, sizeof(*pl->options));
    pl->winner = calloc(m, sizeof(*pl->winner));
    pl->option_group = calloc(m, sizeof(*pl->option_group));
    pl->requests = calloc(pl->n_pending > 0 ? pl->n_pending : 1, sizeof(*pl->requests));
    if (pl->groups == NULL || pl->options == NULL || pl->winner == NULL ||
        pl->option_group == NULL || pl->requests == NULL)
        return plan__nomem();
    for (size_t i = 0; i < pl->n_pending; i++)
        pl->requests[i] = pl->pp[i].request;
    for (size_t i = 0; i < cfg->node_groups_count; i++) {
        if (!cfg->node_groups[i].managed)
            continue;
        plan_group_t *g = &pl->groups[pl->n_groups++];
        g->cfg = &cfg->node_groups[i];
        if (plan__build_group(pl, g) != 0)
            return 1;
        if (g->skip != NULL)
            continue;
        for (size_t k = 0; k < g->pods_count; k++)
            pl->hosted[g->pods[k]] = true;
        g->option = pl->n_options;
        pl->option_group[pl->n_options] = pl->n_groups - 1;
        const group_spec_t *spec = &g->cfg->spec;
        pl->options[pl->n_options++] = (decide_option_t){
            .group_id = spec->id,
            .node_count = g->node_count,
            .node = &g->info,
            .pods = g->pods,
            .pods_count = g->pods_count,
            .group = {.known = true,
                      .exists = true,
                      .spot = spec->spot,
                      .spot_price = spec->spot_price,
                      .nodes = plan__initial_size(g->cfg)},
        };
    }
    decide_request_t req = {pl->options, pl->n_options, pl->requests, pl->n_pending,
                            pl->cluster_size};
    frugal_err_t err;
    frugal_err_clear(&err);
    if (decide_best_options(cfg, &req, &pl->decision, &err) != 0)
        return plan__nomem();
    pl->in = pl->decision.inputs;
    pl->figs = pl->decision.figures;
    pl->pref_cpu_milli = pl->decision.preferred_cpu_milli;
    pl->damper_price = pl->decision.damper_price;
    for (size_t i = 0; i < pl->decision.selected_count; i++)
        pl->winner[pl->decision.selected[i]] = true;
    return 0;
}

static bool plan__group_exists(void *ctx, const char *id) {
    return config_find_node_group(ctx, id) != NULL;
}

static int plan__propose(plan_t *pl) {
    if (!pl->cfg->autoprovisioning.enabled)
        return 0;
    propose_params_t params = {
        .cfg = pl->cfg,
        .cluster_size = pl->cluster_size,
        .group_exists = plan__group_exists,
        .ctx = (void *)pl->cfg,
    };
    frugal_err_t err;
    frugal_err_clear(&err);
    if (propose_node_groups(&params, pl->pp, pl->n_pending, &pl->proposals, &err) != 0) {
        fprintf(stderr, "frugal plan: autoprovisioning: %s\n", err.msg);
        return 1;
    }
    pl->proposed = true;
    return 0;
}

static void plan__free(plan_t *pl) {
    for (size_t i = 0; i < pl->n_groups; i++) {
        node_info_free(&pl->groups[i].info);
        if (pl->groups[i].node != NULL)
            k8s__io__api__core__v1__node__free_unpacked(pl->groups[i].node, NULL);
        free(pl->groups[i].pods);
    }
    free(pl->groups);
    for (size_t i = 0; i < pl->n_pending; i++)
        propose_pod_clear(&pl->pp[i]);
    free(pl->pp);
    free(pl->pending);
    free(pl->hosted);
    free(pl->requests);
    free(pl->options);
    decide_result_free(&pl->decision);
    free(pl->winner);
    free(pl->option_group);
    if (pl->proposed)
        propose_result_clear(&pl->proposals);
    kube_pod_list_clear(&pl->pods);
    kube_node_list_clear(&pl->nodes);
}

/* Why no option hosts pending pod i: "group: reason; ..." over the managed groups. */
static void plan__why_unhosted(const plan_t *pl, size_t i, char *buf, size_t size) {
    size_t len = 0;
    buf[0] = '\0';
    char why[256];
    for (size_t k = 0; k < pl->n_groups; k++) {
        const plan_group_t *g = &pl->groups[k];
        if (!plan__can_host(pl, g, i, why, sizeof(why)))
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

static int plan__print_table(const plan_t *pl) {
    const frugal_config_t *cfg = pl->cfg;
    char a[64], b[64], c[64], d[64], e[64], f[64], g6[64], h[64], cell[PLAN_CELL];

    printf("cluster size: %" PRId64 " nodes (%s); preferred node cpu: %s\n", pl->cluster_size,
           pl->nodes_path != NULL ? pl->nodes_path : "configured group sizes",
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
        cli_table_t t = {.ncols = 12};
        cli_table_row(&t, "", "GROUP", "MACHINE TYPE", "NODES", "PODS", "P", "T", "RATIO",
                      "UNFITNESS", "SUPPRESSED", "SCORE", "NOTE");
        for (size_t o = 0; o < pl->n_options; o++) {
            const plan_group_t *g = &pl->groups[pl->option_group[o]];
            const ranking_figures_t *fg = &pl->figs[o];
            snprintf(a, sizeof(a), "%d", (int)g->node_count);
            snprintf(b, sizeof(b), "%zu", g->pods_count);
            snprintf(c, sizeof(c), "%.6f", pl->in[o].node_price);
            snprintf(d, sizeof(d), "%.6f", pl->in[o].pods_price);
            snprintf(e, sizeof(e), "%.6f", fg->ratio);
            snprintf(f, sizeof(f), "%.6f", fg->unfitness);
            snprintf(g6, sizeof(g6), "%.6f", fg->suppressed);
            snprintf(h, sizeof(h), "%.6f", fg->score);
            cell[0] = '\0';
            if (!fg->scored)
                snprintf(cell, sizeof(cell), "not scorable");
            else if (g->nodes_needed > g->node_count)
                snprintf(cell, sizeof(cell), "needs %" PRId64 " nodes, capped by max_size %d",
                         g->nodes_needed, (int)g->cfg->max_size);
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

static int plan__print_yaml(const plan_t *pl) {
    const frugal_config_t *cfg = pl->cfg;
    char a[64], b[64], cell[PLAN_CELL];
    printf("cluster_size: %" PRId64 "\n", pl->cluster_size);
    cli_yaml_kv(0, "cluster_size_from", pl->nodes_path != NULL ? "nodes" : "config");
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

    printf("scale_up_options:%s\n", pl->n_options == 0 ? " []" : "");
    for (size_t o = 0; o < pl->n_options; o++) {
        const plan_group_t *g = &pl->groups[pl->option_group[o]];
        printf("- group: ");
        cli_yaml_str(g->cfg->spec.id);
        printf("\n");
        cli_yaml_kv(2, "machine_type", g->cfg->spec.machine_type);
        printf("  winner: %s\n", pl->winner[o] ? "true" : "false");
        printf("  nodes: %d\n  nodes_needed: %" PRId64 "\n", (int)g->node_count, g->nodes_needed);
        plan__yaml_pods(2, pl, g->pods, NULL, g->pods_count);
        plan__yaml_figures(2, &pl->figs[o]);
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

/* ------------------------------------------------------------------------------------
 * The command
 * ---------------------------------------------------------------------------------- */

int cmd_plan(int argc, char **argv) {
    const char *config_path = NULL, *pods_path = NULL, *nodes_path = NULL, *format = "table";
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "-h") == 0 || strcmp(opt, "--help") == 0)
            return plan__usage(stdout, 0);
        const char **dst = NULL;
        if (strcmp(opt, "-c") == 0 || strcmp(opt, "--config") == 0)
            dst = &config_path;
        else if (strcmp(opt, "--pods") == 0)
            dst = &pods_path;
        else if (strcmp(opt, "--nodes") == 0)
            dst = &nodes_path;
        else if (strcmp(opt, "-o") == 0 || strcmp(opt, "--output") == 0)
            dst = &format;
        if (dst == NULL) {
            fprintf(stderr, "frugal plan: unexpected argument \"%s\"\n", opt);
            return plan__usage(stderr, 2);
        }
        if (i + 1 >= argc || argv[i + 1][0] == '\0') {
            fprintf(stderr, "frugal plan: %s needs a value\n", opt);
            return plan__usage(stderr, 2);
        }
        *dst = argv[++i];
    }
    if (config_path == NULL || pods_path == NULL) {
        fprintf(stderr, "frugal plan: %s is required\n",
                config_path == NULL ? "-c FILE" : "--pods PODS.json");
        return plan__usage(stderr, 2);
    }
    bool yaml = strcmp(format, "yaml") == 0;
    if (!yaml && strcmp(format, "table") != 0) {
        fprintf(stderr, "frugal plan: unknown output format \"%s\" (table or yaml)\n", format);
        return plan__usage(stderr, 2);
    }

    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    int rc = config_load(config_path, &cfg, &errors);
    if (rc != 0) {
        if (errors != NULL)
            fputs(errors, stderr);
        else
            fprintf(stderr, "%s: %s\n", config_path, frugal_err_describe(rc));
        free(errors);
        return 1;
    }

    plan_t pl;
    memset(&pl, 0, sizeof(pl));
    pl.cfg = cfg;
    pl.pods_path = pods_path;
    pl.nodes_path = nodes_path;
    int status = plan__load_list(pods_path, false, &pl);
    if (status == 0 && nodes_path != NULL)
        status = plan__load_list(nodes_path, true, &pl);
    if (status == 0)
        status = plan__collect_pending(&pl);
    if (status == 0) {
        if (nodes_path != NULL) {
            pl.cluster_size = (int64_t)pl.nodes.count;
        } else {
            for (size_t i = 0; i < cfg->node_groups_count; i++)
                pl.cluster_size += plan__initial_size(&cfg->node_groups[i]);
        }
        status = plan__rank(&pl);
    }
    if (status == 0)
        status = plan__propose(&pl);
    if (status == 0)
        status = yaml ? plan__print_yaml(&pl) : plan__print_table(&pl);
    if (status == 0 && fflush(stdout) != 0)
        status = 1;
    plan__free(&pl);
    config_free(cfg);
    return status;
}
