/* `frugal plan -c FILE --pods PODS.json [--nodes NODES.json] [-o yaml]`: offline, what
 * frugal would decide for the pending pods of a cluster, and why (README.md,
 * "Commands"). No server and no gRPC: the inputs (kubectl's JSON, see kube_json.h) are
 * converted into the same structs cluster-autoscaler sends, and the pure modules do
 * the rest: pod_effective_request, template_build + node_info_decode, fit_pod,
 * decide_best_options (the very decision BestOptions makes), propose_node_groups.
 *
 * Pending pods: status.phase Pending, no spec.nodeName, no scheduling gates, not being
 * deleted; pods controlled by a DaemonSet are left out, as cluster-autoscaler leaves them
 * out of scale-up.
 * Cluster size: the number of nodes in NODES.json when given, else the sum of the
 * configured groups' initial sizes (size, else min_size).
 *
 * Scale-up options are what BestOptions would choose among the configured managed
 * groups. A group can host a pod when the pod fits the group's template node (fit.h:
 * allocatable resources, nodeSelector, required node affinity, taints). An option's
 * node count is what its pods take packed first fit, largest first, onto its template
 * node (cpu, memory, GPUs, pod slots), as CA's estimator builds options,
 * capped at what max_size still allows over the initial size; a group that can host
 * none of the pods, or is at max_size, is not an option. The options are decided by
 * decide.h exactly as a live BestOptions decides them for the same pods and template
 * nodes, each group existing with its initial size; X, P and T are the damper, node
 * and summed pod prices of the ranking.
 *
 * For each winner, CA's --balance-similar-node-groups split of its nodes over the
 * managed groups similar to it (escalator_split). For every configured group, Escalator's
 * utilisation and scale-up delta (docs/escalator.md): nodes of NODES.json claimed by
 * escalator_group_of_node, the pods bound to them, and each pending pod in the group that
 * would receive it; input that breaks the model (unclaimed nodes, pods without requests,
 * unequal nodes) is listed and the report goes on.
 *
 * This file reads the input and builds the plan (private/plan.h); plan_print.c prints
 * it.
 *
 * Exit status: 0, 1 on unreadable or invalid input (PATH:LINE:COL: message), 2 on
 * usage errors. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autoprov.h"
#include "binpack.h"
#include "cli.h"
#include "commands.h"
#include "config.h"
#include "decide.h"
#include "demand.h"
#include "escalator.h"
#include "k8s.h"
#include "kube_json.h"
#include "node_info.h"
#include "plan.h"
#include "pod.h"
#include "propose.h"
#include "template.h"

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

static int plan__read_file(const char *path, char **text, size_t *len) {
    int err = cli_read_file(path, text, len);
    if (err != 0) {
        fprintf(stderr, "frugal plan: cannot read %s: %s\n", path, strerror(err));
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------
 * Building the plan
 * ---------------------------------------------------------------------------------- */

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

/* The nodes of g that its pods take, first fit in decreasing size, as CA's estimator
 * builds the option (three pods of 1.2 cores take three 2-core nodes, not two). */
static int plan__pack(const plan_t *pl, const plan_group_t *g, int64_t *nodes, size_t *node_of) {
    resources_t *pods = calloc(g->pods_count + 1, sizeof(*pods));
    size_t used = 0;
    int rc = pods != NULL ? 0 : FRUGAL_ENOMEM;
    for (size_t k = 0; rc == 0 && k < g->pods_count; k++)
        pods[k] = pl->pp[g->pods[k]].request;
    if (rc == 0)
        rc = binpack_largest_first(pods, g->pods_count, &g->info.capacity, g->info.max_pods, &used,
                                   node_of);
    free(pods);
    *nodes = (int64_t)used;
    return rc != 0 ? plan__nomem() : 0;
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
        if (plan_can_host(pl, g, i, why, sizeof(why)))
            g->pods[g->pods_count++] = (uint32_t)i;
    }
    /* As CA's estimator under the group's max_size: the option holds the pods its nodes
     * take, the others wait for another option or a later loop. */
    size_t *node_of = calloc(g->pods_count + 1, sizeof(*node_of));
    if (node_of == NULL || (g->held = calloc(g->pods_count + 1, sizeof(*g->held))) == NULL) {
        free(node_of);
        return plan__nomem();
    }
    int64_t nodes = 0;
    if ((rc = plan__pack(pl, g, &nodes, node_of)) != 0) {
        free(node_of);
        return rc;
    }
    g->nodes_needed = nodes > 1 ? nodes : 1;
    int32_t headroom = g->cfg->max_size - plan_initial_size(g->cfg);
    for (size_t k = 0; k < g->pods_count; k++) {
        if (headroom > 0 && node_of[k] < (size_t)headroom)
            g->held[g->held_count++] = g->pods[k];
    }
    free(node_of);
    if (g->pods_count == 0) {
        g->skip = "hosts none of the pending pods";
    } else if (headroom <= 0) {
        snprintf(g->skip_buf, sizeof(g->skip_buf), "at max_size %d", (int)g->cfg->max_size);
        g->skip = g->skip_buf;
    }
    g->node_count = g->nodes_needed > headroom ? headroom : (int32_t)g->nodes_needed;
    return 0;
}

static int plan__decide(plan_t *pl);

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
    pl->ranked = calloc(m, sizeof(*pl->ranked));
    pl->requests = calloc(pl->n_pending > 0 ? pl->n_pending : 1, sizeof(*pl->requests));
    pl->lifetimes = calloc(pl->n_pending > 0 ? pl->n_pending : 1, sizeof(*pl->lifetimes));
    pl->created_ms = calloc(pl->n_pending > 0 ? pl->n_pending : 1, sizeof(*pl->created_ms));
    if (pl->groups == NULL || pl->options == NULL || pl->winner == NULL ||
        pl->option_group == NULL || pl->ranked == NULL || pl->requests == NULL ||
        pl->lifetimes == NULL || pl->created_ms == NULL)
        return plan__nomem();
    for (size_t i = 0; i < pl->n_pending; i++) {
        pl->requests[i] = pl->pp[i].request;
        pl->lifetimes[i] = pod_lifetime(pl->pending[i]);
        pl->created_ms[i] = pod_created_ms(pl->pending[i]);
    }
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
            .pods = g->held,
            .pods_count = g->held_count,
            .group = {.known = true,
                      .exists = true,
                      .spot = spec->spot,
                      .spot_price = spec->spot_price,
                      .nodes = plan_initial_size(g->cfg),
                      .max_size = g->cfg->max_size},
        };
    }
    return plan__decide(pl);
}

/* Whether option a is printed before option b: winners first, then the lower score,
 * options without a score last; the configuration's order among equals. */
static bool plan__ranked_before(const plan_t *pl, size_t a, size_t b) {
    if (pl->winner[a] != pl->winner[b])
        return pl->winner[a];
    if (pl->figs[a].scored != pl->figs[b].scored)
        return pl->figs[a].scored;
    return pl->figs[a].scored && pl->figs[a].score < pl->figs[b].score &&
           !ranking_scores_tie(pl->figs[a].score, pl->figs[b].score);
}

/* pl->ranked: an insertion sort, stable (a few options, one per configured group). */
static void plan__rank_order(plan_t *pl) {
    for (size_t i = 0; i < pl->n_options; i++) {
        size_t k = i;
        for (; k > 0 && plan__ranked_before(pl, i, pl->ranked[k - 1]); k--)
            pl->ranked[k] = pl->ranked[k - 1];
        pl->ranked[k] = i;
    }
}

/* The decision on the request CA would send: only the pending pods some option carries
 * (hosted), renumbered, so that a pod no group can host shapes nothing (CA never sends
 * it). As a server that has just started decides its first BestOptions, demand-fit's
 * recent demand is these pods, with their owners' lifetimes. */
static int plan__decide(plan_t *pl) {
    size_t n = pl->n_pending > 0 ? pl->n_pending : 1, count = 0, total = 0;
    uint32_t *index = calloc(n, sizeof(*index));
    resources_t *pods = calloc(n, sizeof(*pods));
    int64_t *created = calloc(n, sizeof(*created));
    pod_lifetime_t *lifetimes = calloc(n, sizeof(*lifetimes));
    for (size_t i = 0; i < pl->n_options; i++)
        total += pl->options[i].pods_count;
    uint32_t *carried = calloc(total > 0 ? total : 1, sizeof(*carried));
    decide_option_t *options = calloc(pl->n_options > 0 ? pl->n_options : 1, sizeof(*options));
    demand_memory_t *memory = calloc(1, sizeof(*memory));
    int rc = 1;
    if (index == NULL || pods == NULL || created == NULL || lifetimes == NULL || carried == NULL ||
        options == NULL || memory == NULL) {
        rc = plan__nomem();
        goto done;
    }
    for (size_t i = 0; i < pl->n_pending; i++) {
        if (!pl->hosted[i])
            continue;
        index[i] = (uint32_t)count;
        pods[count] = pl->requests[i];
        created[count] = pl->created_ms[i];
        lifetimes[count++] = pl->lifetimes[i];
    }
    uint32_t *next = carried;
    for (size_t i = 0; i < pl->n_options; i++) {
        options[i] = pl->options[i];
        options[i].pods = next;
        for (size_t k = 0; k < pl->options[i].pods_count; k++)
            *next++ = index[pl->options[i].pods[k]];
    }
    /* As BestOptions reads the request's time: its latest pod's creation. */
    int64_t now_ms = demand_request_ms(created, count, 0);
    decide_request_t req = {options, pl->n_options, pods,    count, pl->cluster_size,
                            true,    now_ms,        created, NULL};
    frugal_err_t err;
    frugal_err_clear(&err);
    demand_init(memory);
    if (decide_best_options_remember(pl->cfg, &req, lifetimes, NULL, memory, &pl->decision, &err) !=
        0) {
        rc = plan__nomem();
        goto done;
    }
    pl->in = pl->decision.inputs;
    pl->figs = pl->decision.figures;
    pl->pref_cpu_milli = pl->decision.preferred_cpu_milli;
    pl->damper_price = pl->decision.damper_price;
    for (size_t i = 0; i < pl->decision.selected_count; i++)
        pl->winner[pl->decision.selected[i]] = true;
    plan__rank_order(pl);
    rc = 0;
done:
    free(index);
    free(pods);
    free(created);
    free(lifetimes);
    free(carried);
    free(options);
    free(memory);
    return rc;
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

/* ------------------------------------------------------------------------------------
 * Utilisation (Escalator) and the balance-similar split
 * ---------------------------------------------------------------------------------- */

static void plan__note(plan_t *pl, const char *subject, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Record a problem the report goes on past. */
static void plan__note(plan_t *pl, const char *subject, const char *fmt, ...) {
    if (pl->n_notes == pl->cap_notes) {
        size_t cap = pl->cap_notes > 0 ? pl->cap_notes * 2 : 16;
        plan_note_t *n = realloc(pl->notes, cap * sizeof(*n));
        if (n == NULL)
            cli_die_nomem();
        pl->notes = n;
        pl->cap_notes = cap;
    }
    plan_note_t *n = &pl->notes[pl->n_notes++];
    snprintf(n->subject, sizeof(n->subject), "%s", subject);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->message, sizeof(n->message), fmt, ap);
    va_end(ap);
}

/* Whether g can host pending pod i (g->pods is ascending). */
static bool plan__group_hosts(const plan_group_t *g, size_t i) {
    size_t lo = 0, hi = g->pods_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->pods[mid] == i)
            return true;
        if (g->pods[mid] < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

/* The group a pending pod counts toward: the first winner that hosts it, else the first
 * managed group in configuration order that can; NULL when none can. */
static const plan_group_t *plan__pending_group(const plan_t *pl, size_t i) {
    for (size_t s = 0; s < pl->decision.selected_count; s++) {
        const plan_group_t *g = &pl->groups[pl->option_group[pl->decision.selected[s]]];
        if (plan__group_hosts(g, i))
            return g;
    }
    for (size_t k = 0; k < pl->n_groups; k++)
        if (plan__group_hosts(&pl->groups[k], i))
            return &pl->groups[k];
    return NULL;
}

/* One node of a group's machine type (a template node's allocatable). */
static resources_t plan__machine_allocatable(const frugal_config_t *cfg,
                                             const node_group_config_t *g) {
    const machine_type_t *mt = config_find_machine_type(cfg, g->spec.machine_type);
    return mt != NULL ? (resources_t){mt->cpu_milli, mt->memory_bytes, mt->gpu}
                      : (resources_t){0, 0, 0};
}

static void plan__count_pod(plan_t *pl, plan_util_t *u, const char *name,
                            const resources_t *request, bool pending) {
    const char *missing = escalator_add_pod(&u->eg, request, pending);
    if (missing == NULL)
        return;
    char subject[320];
    snprintf(subject, sizeof(subject), "pod %s", name);
    plan__note(pl, subject,
               "%s: counted in group %s, whose utilisation understates it (Escalator assumes "
               "every container has requests)",
               missing, u->cfg->spec.id);
}

/* Nodes of NODES.json into their groups; node_group[k] receives node k's group or -1. */
static void plan__util_nodes(plan_t *pl, long *node_group) {
    const frugal_config_t *cfg = pl->cfg;
    char subject[320], a[64], b[64], c[64], d[64];
    for (size_t k = 0; k < pl->nodes.count; k++) {
        const k8s_node_t *node = pl->nodes.items[k];
        const char *name =
            node->metadata != NULL && node->metadata->name != NULL ? node->metadata->name : "";
        snprintf(subject, sizeof(subject), "node %s", name);
        long gi = node_group[k] = escalator_group_of_node(cfg, node, NULL);
        if (gi < 0) {
            plan__note(
                pl, subject,
                "no configured group claims it (no %s label naming one, no frugal:// "
                "provider id, no group of its instance type and zone whose labels it carries): "
                "left out",
                FRUGAL_LABEL_NODE_GROUP);
            continue;
        }
        plan_util_t *u = &pl->util[gi];
        resources_t alloc;
        frugal_err_t err;
        frugal_err_clear(&err);
        if (node_info_allocatable(node, &alloc, &err) != 0) {
            plan__note(pl, subject, "%s: left out", err.msg);
            node_group[k] = -1;
            continue;
        }
        if (alloc.cpu_milli <= 0 || alloc.memory_bytes <= 0) { /* a registered node has both */
            plan__note(pl, subject, "no allocatable or capacity %s: left out",
                       alloc.cpu_milli <= 0 ? "cpu" : "memory");
            node_group[k] = -1;
            continue;
        }
        if (node->spec != NULL && node->spec->has_unschedulable && node->spec->unschedulable) {
            /* node_group[k] stays: the pods it still runs are the group's demand */
            plan__note(pl, subject,
                       "cordoned (spec.unschedulable): left out of group %s's nodes and "
                       "capacity, as Escalator leaves cordoned nodes out; its pods count",
                       u->cfg->spec.id);
            continue;
        }
        resources_t first = u->eg.node_allocatable;
        if (!escalator_add_node(&u->eg, &alloc))
            plan__note(pl, subject,
                       "group %s: allocatable %s cpu / %s memory differs from %s / %s of its "
                       "first node (Escalator assumes equal nodes): counted as is",
                       u->cfg->spec.id, quantity_format_milli(alloc.cpu_milli, a, sizeof(a)),
                       quantity_format_bytes(alloc.memory_bytes, b, sizeof(b)),
                       quantity_format_milli(first.cpu_milli, c, sizeof(c)),
                       quantity_format_bytes(first.memory_bytes, d, sizeof(d)));
    }
}

/* The node a pod occupies for the utilisation, or NULL: not bound, a DaemonSet's, or
 * finished. */
static const char *plan__bound_node(const k8s_pod_t *pod) {
    const char *node = pod->spec != NULL ? pod->spec->nodename : NULL;
    const char *phase = pod->status != NULL ? pod->status->phase : NULL;
    const char *kind = kube_pod_controller_kind(pod);
    if (node == NULL || node[0] == '\0' || (kind != NULL && strcmp(kind, "DaemonSet") == 0) ||
        (phase != NULL && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)))
        return NULL;
    return node;
}

/* Without NODES.json a bound pod's group is not known: said once, not guessed. */
static void plan__note_bound_unknown(plan_t *pl) {
    size_t n = 0;
    for (size_t i = 0; i < pl->pods.count; i++)
        n += plan__bound_node(pl->pods.items[i]) != NULL;
    if (n > 0)
        plan__note(pl, "utilisation",
                   "%zu pod%s bound to nodes left out: without --nodes NODES.json their "
                   "nodes' groups are not known",
                   n, n == 1 ? "" : "s");
}

/* Pods bound to a node of NODES.json, into that node's group. */
static void plan__util_bound_pods(plan_t *pl, const long *node_group) {
    char subject[320], name[256];
    for (size_t i = 0; i < pl->pods.count; i++) {
        const k8s_pod_t *pod = pl->pods.items[i];
        const char *node = plan__bound_node(pod);
        if (node == NULL)
            continue;
        pod_format_name(pod, name, sizeof(name));
        snprintf(subject, sizeof(subject), "pod %s", name);
        size_t k = 0;
        while (k < pl->nodes.count && (pl->nodes.items[k]->metadata == NULL ||
                                       pl->nodes.items[k]->metadata->name == NULL ||
                                       strcmp(pl->nodes.items[k]->metadata->name, node) != 0))
            k++;
        if (k == pl->nodes.count) {
            plan__note(pl, subject, "on node %s, which NODES.json does not list: left out", node);
            continue;
        }
        if (node_group[k] < 0)
            continue; /* the node is reported */
        resources_t r;
        frugal_err_t err;
        frugal_err_clear(&err);
        if (pod_effective_request(pod, &r, &err) != 0) {
            plan__note(pl, subject, "%s: left out", err.msg);
            continue;
        }
        plan__count_pod(pl, &pl->util[node_group[k]], name, &r, false);
    }
}

/* Every configured group's utilisation and scale-up delta. Without NODES.json each
 * group is taken at its initial size of template nodes, and only pending pods count. */
static int plan__utilisation(plan_t *pl) {
    const frugal_config_t *cfg = pl->cfg;
    size_t n = cfg->node_groups_count;
    pl->util = calloc(n > 0 ? n : 1, sizeof(*pl->util));
    long *node_group = calloc(pl->nodes.count > 0 ? pl->nodes.count : 1, sizeof(*node_group));
    if (pl->util == NULL || node_group == NULL) {
        free(node_group);
        return plan__nomem();
    }
    autoprov_totals_t totals = {0, 0};
    for (size_t i = 0; i < n; i++) {
        const node_group_config_t *g = &cfg->node_groups[i];
        resources_t alloc = plan__machine_allocatable(cfg, g);
        pl->util[i].cfg = g;
        escalator_group_init(&pl->util[i].eg, g->scale_up_threshold, g->scale_on_starve, &alloc);
        for (int32_t k = 0; pl->nodes_path == NULL && k < plan_initial_size(g); k++)
            escalator_add_node(&pl->util[i].eg, &alloc);
    }
    if (pl->nodes_path != NULL) {
        plan__util_nodes(pl, node_group);
        plan__util_bound_pods(pl, node_group);
    } else {
        plan__note_bound_unknown(pl);
    }
    /* The limits count each group's nodes (those NODES.json gives it, else its initial
     * size) at its machine type's size, as the server counts target sizes. */
    for (size_t i = 0; i < n; i++) {
        const node_group_config_t *g = &cfg->node_groups[i];
        resources_t alloc = plan__machine_allocatable(cfg, g);
        autoprov_totals_add(
            &totals, pl->nodes_path != NULL ? pl->util[i].eg.nodes : plan_initial_size(g), &alloc);
    }
    free(node_group);
    for (size_t i = 0; i < pl->n_pending; i++) {
        const plan_group_t *g = plan__pending_group(pl, i);
        if (g != NULL)
            plan__count_pod(pl, &pl->util[g->cfg - cfg->node_groups], pl->pp[i].name,
                            &pl->pp[i].request, true);
    }
    /* The cluster limits bind only with autoprovisioning, as in the server. */
    const autoprov_config_t *limits = cfg->autoprovisioning.enabled ? &cfg->autoprovisioning : NULL;
    for (size_t i = 0; i < n; i++)
        escalator_scale_up(&pl->util[i].eg, pl->util[i].cfg->max_size, limits, &totals,
                           &pl->util[i].res);
    return 0;
}

static void plan__free(plan_t *pl) {
    for (size_t i = 0; i < pl->n_groups; i++) {
        node_info_free(&pl->groups[i].info);
        if (pl->groups[i].node != NULL)
            k8s__io__api__core__v1__node__free_unpacked(pl->groups[i].node, NULL);
        free(pl->groups[i].pods);
        free(pl->groups[i].held);
    }
    free(pl->groups);
    for (size_t i = 0; i < pl->n_pending; i++)
        propose_pod_clear(&pl->pp[i]);
    free(pl->pp);
    free(pl->pending);
    free(pl->hosted);
    free(pl->requests);
    free(pl->lifetimes);
    free(pl->created_ms);
    free(pl->options);
    decide_result_free(&pl->decision);
    free(pl->winner);
    free(pl->ranked);
    free(pl->option_group);
    if (pl->proposed)
        propose_result_clear(&pl->proposals);
    free(pl->util);
    free(pl->notes);
    kube_pod_list_clear(&pl->pods);
    kube_node_list_clear(&pl->nodes);
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
        if (dst != &format && *dst != NULL) {
            fprintf(stderr, "frugal plan: %s given twice\n", opt);
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
    if (cmd_load_config(config_path, &cfg) != 0)
        return 1;

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
        if (cfg->ranking.cluster_size != RANKING_CLUSTER_SIZE_AUTO) {
            pl.cluster_size = cfg->ranking.cluster_size;
            pl.cluster_size_fixed = true;
        } else if (nodes_path != NULL) {
            pl.cluster_size = (int64_t)pl.nodes.count;
        } else {
            for (size_t i = 0; i < cfg->node_groups_count; i++)
                pl.cluster_size += plan_initial_size(&cfg->node_groups[i]);
        }
        status = plan__rank(&pl);
    }
    if (status == 0)
        status = plan__utilisation(&pl);
    if (status == 0)
        status = plan__propose(&pl);
    if (status == 0)
        status = yaml ? plan_print_yaml(&pl) : plan_print_table(&pl);
    if (status == 0 && fflush(stdout) != 0)
        status = 1;
    plan__free(&pl);
    config_free(cfg);
    return status;
}
