/* The replay simulation's cluster (see replay.h and docs/replay.md): the run's setup
 * (the groups' templates, the workload's pods, which groups each pod shape can go to),
 * the placement of a pod on existing nodes, and buying, billing and removing nodes; and
 * the pods the fluid lower bound sees (replay_bound). CA's loop over this cluster is
 * replay_loop.c's; the state both share is private/replay_internal.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fit.h"
#include "hash.h"
#include "pricing.h"
#include "replay_internal.h"
#include "template.h"

/* ---- the running pods' end times: a binary min-heap ---- */

static void replay__heap_push(replay__sim_t *s, replay__heap_item_t it) {
    size_t i = s->heap_count++;
    while (i > 0 && s->heap[(i - 1) / 2].end_s > it.end_s) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = it;
}

replay__heap_item_t replay__heap_pop(replay__sim_t *s) {
    replay__heap_item_t top = s->heap[0], last = s->heap[--s->heap_count];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->heap_count)
            break;
        if (c + 1 < s->heap_count && s->heap[c + 1].end_s < s->heap[c].end_s)
            c++;
        if (s->heap[c].end_s >= last.end_s)
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->heap_count > 0)
        s->heap[i] = last;
    return top;
}

/* ---- setup ---- */

static int replay__groups(replay__sim_t *s, frugal_err_t *err) {
    const frugal_config_t *cfg = s->cfg;
    s->groups = calloc(cfg->node_groups_count ? cfg->node_groups_count : 1, sizeof(*s->groups));
    if (s->groups == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    for (size_t i = 0; i < cfg->node_groups_count; i++) {
        const node_group_config_t *gc = &cfg->node_groups[i];
        if (!gc->managed)
            continue;
        replay_group_t *g = &s->groups[s->groups_count++];
        g->cfg = gc;
        uint8_t *buf = NULL;
        size_t len = 0;
        int rc = template_build(cfg, &gc->spec, &buf, &len, err);
        if (rc == 0)
            rc = node_info_decode(buf, len, &g->info, err);
        if (rc == 0 && (g->node = k8s__io__api__core__v1__node__unpack(NULL, len, buf)) == NULL)
            rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        free(buf);
        if (rc != 0)
            return rc;
        g->price = pricing_group_node_price(cfg, &gc->spec);
        if (g->price < 0)
            g->price = pricing_linear(&cfg->pricing, &g->info.capacity);
        g->unneeded_s = gc->options.has_scale_down_unneeded
                            ? gc->options.scale_down_unneeded_ns / 1000000000LL
                            : REPLAY_UNNEEDED_SECONDS;
    }
    if (s->groups_count == 0)
        return frugal_err_set(err, FRUGAL_EINVAL, "the config has no managed node group to replay");
    return 0;
}

static int64_t replay__uniform(replay_rng_t *r, replay_range_t range) {
    if (range.max <= range.min)
        return range.min;
    return range.min + (int64_t)(replay_rng_unit(r) * (double)(range.max - range.min + 1));
}

/* Append one pod of family f arriving at t, its lifetime drawn from the family, its
 * request too unless like (the request of its burst's first pod) is given. */
static int replay__add_pod(replay__sim_t *s, size_t *cap, const replay_workload_t *w, size_t f,
                           int64_t t, const resources_t *like, frugal_err_t *err) {
    if (s->pods_count == *cap) {
        replay_pod_t *np = realloc(s->pods, *cap * 2 * sizeof(*np));
        if (np == NULL)
            return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        s->pods = np;
        *cap *= 2;
    }
    const replay_family_t *fam = &w->families[f];
    replay_pod_t *p = &s->pods[s->pods_count++];
    p->arrive_s = t;
    if (like != NULL) {
        p->request = *like;
    } else {
        p->request.cpu_milli = replay__uniform(&s->rng, fam->cpu_milli);
        int64_t mib = 1024 * 1024;
        p->request.memory_bytes = replay__uniform(&s->rng, fam->memory_bytes) / mib * mib;
        p->request.gpu = replay__uniform(&s->rng, fam->gpu);
    }
    double lo = log((double)fam->lifetime_s.min), hi = log((double)fam->lifetime_s.max);
    p->duration_s = (int64_t)exp(lo + replay_rng_unit(&s->rng) * (hi - lo));
    if (p->duration_s < 1)
        p->duration_s = 1;
    p->lifetime = pod_lifetime_of_kind(fam->owner);
    p->shape = (uint32_t)f;
    p->spec_pod = fam->pod;
    return 0;
}

/* The mix's pods: each family's `initial` pods at 0, then the arrivals over the horizon,
 * a Poisson process whose rate follows a daily sine (thinning), each arrival drawn from
 * a family chosen by weight and bringing `burst` pods of one request. Families without
 * initial pods or bursts draw no extra numbers, so older mixes keep their pods. */
static int replay__generate(replay__sim_t *s, const replay_workload_t *w, frugal_err_t *err) {
    double total = 0;
    for (size_t i = 0; i < w->families_count; i++)
        total += w->families[i].weight;
    double peak = w->arrivals_per_hour * (1.0 + w->diurnal) / 3600.0; /* per second */
    size_t cap = (size_t)(peak * (double)s->horizon_s * 1.2) + 64;
    if ((s->pods = calloc(cap, sizeof(*s->pods))) == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    int rc = 0;
    for (size_t f = 0; f < w->families_count && rc == 0; f++)
        for (int64_t k = 0; k < w->families[f].initial && rc == 0; k++)
            rc = replay__add_pod(s, &cap, w, f, 0, NULL, err);
    double t = 0;
    while (rc == 0) {
        t += -log(1.0 - replay_rng_unit(&s->rng)) / peak;
        if (t >= (double)s->horizon_s)
            break;
        double rate = w->arrivals_per_hour / 3600.0 *
                      (1.0 + w->diurnal * sin(2.0 * 3.14159265358979323846 * t / 86400.0));
        if (replay_rng_unit(&s->rng) * peak > rate)
            continue;
        double pick = replay_rng_unit(&s->rng) * total;
        size_t f = 0;
        while (f + 1 < w->families_count && pick >= w->families[f].weight) {
            pick -= w->families[f].weight;
            f++;
        }
        if ((rc = replay__add_pod(s, &cap, w, f, (int64_t)t, NULL, err)) != 0)
            break;
        resources_t like = s->pods[s->pods_count - 1].request;
        const replay_range_t *burst = &w->families[f].burst;
        int64_t more = burst->max > 1 ? replay__uniform(&s->rng, *burst) - 1 : 0;
        for (int64_t k = 0; k < more && rc == 0; k++)
            rc = replay__add_pod(s, &cap, w, f, (int64_t)t, &like, err);
    }
    s->shapes = w->families_count;
    return rc;
}

static int replay__from_trace(replay__sim_t *s, const replay_workload_t *w, frugal_err_t *err) {
    if ((s->pods = calloc(w->trace_count, sizeof(*s->pods))) == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    for (size_t i = 0; i < w->trace_count && w->trace[i].t_s < s->horizon_s; i++) {
        replay_pod_t *p = &s->pods[s->pods_count++];
        p->arrive_s = w->trace[i].t_s;
        p->duration_s = w->trace[i].duration_s;
        p->request = w->trace[i].request;
        p->lifetime = pod_lifetime(w->trace[i].pod);
        p->shape = (uint32_t)i;
        p->spec_pod = w->trace[i].pod;
    }
    s->shapes = w->trace_count;
    return 0;
}

static uint64_t replay__row_hash(const bool *row, size_t n) {
    uint64_t h = HASH_FNV_OFFSET;
    for (size_t g = 0; g < n; g++)
        h = hash_fnv_byte(h, row[g]);
    return hash_finish(h);
}

/* Shapes whose pods the same groups can host are one class: a trace gives every line a
 * shape of its own, yet few classes. */
static int replay__compat_classes(replay__sim_t *s, frugal_err_t *err) {
    size_t G = s->groups_count, cap = 16;
    while (cap < 2 * s->shapes)
        cap *= 2;
    s->compat_class = calloc(s->shapes ? s->shapes : 1, sizeof(*s->compat_class));
    uint32_t *table = malloc(cap * sizeof(*table)); /* first shape of a class + 1; 0 empty */
    if (s->compat_class == NULL || table == NULL) {
        free(table);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    memset(table, 0, cap * sizeof(*table));
    for (size_t k = 0; k < s->shapes; k++) {
        const bool *row = s->compat + k * G;
        size_t i = replay__row_hash(row, G) & (cap - 1);
        while (table[i] != 0 && memcmp(s->compat + (table[i] - 1) * G, row, G * sizeof(*row)) != 0)
            i = (i + 1) & (cap - 1);
        if (table[i] == 0)
            table[i] = (uint32_t)k + 1;
        s->compat_class[k] = table[i] - 1;
    }
    free(table);
    return 0;
}

static int replay__compat(replay__sim_t *s, frugal_err_t *err) {
    size_t n = s->shapes * s->groups_count;
    if ((s->compat = calloc(n ? n : 1, sizeof(*s->compat))) == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    bool *done = calloc(s->shapes ? s->shapes : 1, sizeof(*done));
    if (done == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    for (size_t i = 0; i < s->pods_count; i++) {
        const replay_pod_t *p = &s->pods[i];
        if (done[p->shape])
            continue;
        done[p->shape] = true;
        const k8s_pod_spec_t *spec = p->spec_pod ? p->spec_pod->spec : NULL;
        for (size_t g = 0; g < s->groups_count; g++) {
            const k8s_node_t *node = s->groups[g].node;
            s->compat[p->shape * s->groups_count + g] =
                fit_node_selector(spec, node, NULL, 0) && fit_node_affinity(spec, node, NULL, 0) &&
                fit_taints(spec, node, NULL, 0) && fit_named_resources(spec, node, NULL, 0);
        }
    }
    free(done);
    return replay__compat_classes(s, err);
}

/* Each pod's hash of what replay_loop.c's replay__same_miss compares (its compat class
 * and request): they never change, so it is hashed once, not at every loop it waits. */
static int replay__miss_hashes(replay__sim_t *s, frugal_err_t *err) {
    if ((s->miss_hash = calloc(s->pods_count ? s->pods_count : 1, sizeof(*s->miss_hash))) == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    for (size_t i = 0; i < s->pods_count; i++) {
        const replay_pod_t *p = &s->pods[i];
        const int64_t v[4] = {s->compat_class[p->shape], p->request.cpu_milli,
                              p->request.memory_bytes, p->request.gpu};
        uint64_t h = HASH_FNV_OFFSET;
        for (size_t b = 0; b < sizeof(v); b++)
            h = hash_fnv_byte(h, ((const unsigned char *)v)[b]);
        s->miss_hash[i] = hash_finish(h);
    }
    return 0;
}

/* ---- placement (replay_options_t.placement) ---- */

static const char *const replay__placements[] = {
    [REPLAY_PLACE_FIRST_FIT] = "first-fit",
    [REPLAY_PLACE_LEAST_ALLOCATED] = "least-allocated",
    [REPLAY_PLACE_MOST_ALLOCATED] = "most-allocated",
};

int replay_placement_parse(const char *name, replay_placement_t *out) {
    for (size_t i = 0; i < sizeof(replay__placements) / sizeof(*replay__placements); i++)
        if (strcmp(name, replay__placements[i]) == 0) {
            *out = (replay_placement_t)i;
            return 0;
        }
    return -1;
}

const char *replay_placement_name(replay_placement_t p) {
    return (size_t)p < sizeof(replay__placements) / sizeof(*replay__placements)
               ? replay__placements[p]
               : "?";
}

/* How s->placement ranks a node of group g with free room free_ for a pod of request r
 * that fits it (higher is better): the mean over cpu and memory (those the node has) of
 * the share of its capacity left free once the pod is on it, negated for
 * most-allocated. */
static double replay__score(const replay__sim_t *s, uint32_t g, const resources_t *free_,
                            const resources_t *r) {
    const resources_t *cap = &s->groups[g].info.capacity;
    double sum = 0;
    int count = 0;
    if (cap->cpu_milli > 0) {
        sum += (double)(free_->cpu_milli - r->cpu_milli) / (double)cap->cpu_milli;
        count++;
    }
    if (cap->memory_bytes > 0) {
        sum += (double)(free_->memory_bytes - r->memory_bytes) / (double)cap->memory_bytes;
        count++;
    }
    double share = count > 0 ? sum / count : 0;
    return s->placement == REPLAY_PLACE_MOST_ALLOCATED ? -share : share;
}

/* Whether node b, which can host r, is where the placement puts r rather than *best (A
 * when none yet, *best_score its score); the nodes are offered in purchase order. Returns
 * true when the search can stop (first fit). */
static bool replay__consider(const replay__sim_t *s, size_t b, const resources_t *free_,
                             const resources_t *r, size_t A, size_t *best, double *best_score) {
    if (s->placement == REPLAY_PLACE_FIRST_FIT) {
        *best = b;
        return true;
    }
    double score = replay__score(s, s->nodes[s->alive[b]].group, free_, r);
    if (*best == A || score > *best_score) {
        *best = b;
        *best_score = score;
    }
    return false;
}

/* The node (index into s->alive; s->alive_count when none) where the scheduler puts pod
 * p at now, for steps 4 and 7: among the compatible, untainted nodes with room for it
 * (room[b] and a pod slot by held[b], or the node's own free room and pods when room is
 * NULL), other than node self and
 * those flagged REPLAY__REMOVING (flag may be NULL), by s->placement. Booting nodes
 * only when booting_ok: first fit takes them in purchase order; the scored placements
 * rank ready nodes only (kube-scheduler sees only nodes that exist), a booting one
 * taking the pod when no ready one can. */
size_t replay__pick_node(const replay__sim_t *s, const replay_pod_t *p, const resources_t *room,
                         const int32_t *held, const uint8_t *flag, size_t self, bool booting_ok,
                         int64_t now) {
    size_t A = s->alive_count, best = A, booting = A;
    double score = 0;
    for (size_t b = 0; b < A; b++) {
        const replay__node_t *n = &s->nodes[s->alive[b]];
        const resources_t *free_ = room != NULL ? &room[b] : &n->free;
        if (b == self || (flag != NULL && (flag[b] & REPLAY__REMOVING)) || n->tainted_s >= 0 ||
            !s->compat[p->shape * s->groups_count + n->group] ||
            !replay__fits(&p->request, free_) ||
            !replay__slot(s, n->group, room != NULL ? held[b] : n->pods))
            continue;
        if (n->ready_s > now) {
            if (!booting_ok)
                continue;
            if (s->placement != REPLAY_PLACE_FIRST_FIT) {
                if (booting == A)
                    booting = b;
                continue;
            }
        }
        if (replay__consider(s, b, free_, &p->request, A, &best, &score))
            break;
    }
    return best < A ? best : booting;
}

/* ---- nodes ---- */

int replay__buy(replay__sim_t *s, size_t g, int64_t now, uint32_t *id, frugal_err_t *err) {
    if (s->nodes_count == s->nodes_cap) {
        size_t cap = s->nodes_cap ? s->nodes_cap * 2 : 64;
        replay__node_t *nn = realloc(s->nodes, cap * sizeof(*nn));
        uint32_t *na = realloc(s->alive, cap * sizeof(*na));
        if (nn)
            s->nodes = nn;
        if (na)
            s->alive = na;
        if (!nn || !na)
            return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        s->nodes_cap = cap;
    }
    *id = (uint32_t)s->nodes_count++;
    replay__node_t *n = &s->nodes[*id];
    const replay_group_t *grp = &s->groups[g];
    *n = (replay__node_t){.group = (uint32_t)g,
                          .free = grp->info.capacity,
                          .bought_s = now,
                          .ready_s = now,
                          .empty_since_s = now,
                          .tainted_s = -1,
                          .unneeded_s = -1,
                          .candidate = -1};
    s->alive[s->alive_count++] = *id;
    s->groups[g].nodes++;
    s->cpu_alive += grp->info.capacity.cpu_milli;
    s->mem_alive += grp->info.capacity.memory_bytes;
    return 0;
}

/* Bill node a up to now and forget it. */
void replay__remove(replay__sim_t *s, size_t a, int64_t now) {
    replay__node_t *n = &s->nodes[s->alive[a]];
    replay_group_t *g = &s->groups[n->group];
    int64_t loops = (now - n->bought_s + REPLAY_LOOP_SECONDS - 1) / REPLAY_LOOP_SECONDS;
    s->fig.cost += g->price * (double)(loops * REPLAY_LOOP_SECONDS) / 3600.0;
    g->nodes--;
    s->cpu_alive -= g->info.capacity.cpu_milli;
    s->mem_alive -= g->info.capacity.memory_bytes;
    memmove(&s->alive[a], &s->alive[a + 1], (s->alive_count - a - 1) * sizeof(*s->alive));
    s->alive_count--;
}

void replay__start(replay__sim_t *s, uint32_t pod, uint32_t node, int64_t at) {
    const replay_pod_t *p = &s->pods[pod];
    if (at < p->arrive_s)
        at = p->arrive_s;
    s->start_s[pod] = at;
    s->fig.pending_pod_minutes += (double)(at - p->arrive_s) / 60.0;
    int64_t end = at + p->duration_s;
    int64_t ran = (end < s->horizon_s ? end : s->horizon_s) - at;
    if (ran > 0)
        s->fig.ideal_cost += pricing_linear(&s->cfg->pricing, &p->request) * (double)ran / 3600.0;
    replay__heap_push(s, (replay__heap_item_t){end, pod, node});
}

/* Put pod on node: it runs now when the node is ready, else when it is. */
void replay__place(replay__sim_t *s, uint32_t pod, uint32_t node, int64_t now) {
    replay__node_t *n = &s->nodes[node];
    replay__take(&n->free, &s->pods[pod].request, 1);
    n->pods++;
    if (n->ready_s <= now) {
        replay__start(s, pod, node, now);
    } else {
        s->bound[s->bound_count] = pod;
        s->bound_node[s->bound_count++] = node;
    }
}

/* ---- a run: setup and teardown; the lower bound's pods ---- */

void replay__free(replay__sim_t *s) {
    if (s->policy_state)
        s->policy->free(s->policy_state);
    for (size_t i = 0; s->groups && i < s->groups_count; i++) {
        node_info_free(&s->groups[i].info);
        if (s->groups[i].node)
            k8s__io__api__core__v1__node__free_unpacked(s->groups[i].node, NULL);
    }
    free(s->groups);
    free(s->pods);
    free(s->compat);
    free(s->compat_class);
    free(s->miss_hash);
    free(s->nodes);
    free(s->alive);
    free(s->pending);
    free(s->bound);
    free(s->bound_node);
    free(s->heap);
    free(s->start_s);
    free(s->threshold);
    free(s->gpu_threshold);
}

/* The groups, the pods of seed over the horizon and which groups each can go to. */
int replay__setup(replay__sim_t *s, const frugal_config_t *cfg, const replay_workload_t *w,
                  uint64_t seed, double hours, frugal_err_t *err) {
    s->cfg = cfg;
    replay_rng_seed(&s->rng, seed);
    if (hours > 0)
        s->horizon_s = (int64_t)(hours * 3600.0);
    else
        s->horizon_s = w->is_trace ? w->trace_span_s : 7 * 86400;
    int rc = replay__groups(s, err);
    if (rc == 0)
        rc = w->is_trace ? replay__from_trace(s, w, err) : replay__generate(s, w, err);
    if (rc == 0)
        rc = replay__compat(s, err);
    if (rc == 0)
        rc = replay__miss_hashes(s, err);
    return rc;
}

int replay_bound(const frugal_config_t *cfg, const replay_workload_t *w, uint64_t seed,
                 double hours, replay_bound_t *out, frugal_err_t *err) {
    replay__sim_t s;
    memset(&s, 0, sizeof(s));
    memset(out, 0, sizeof(*out));
    int rc = replay__setup(&s, cfg, w, seed, hours, err);
    size_t G = s.groups_count;
    replay_bound_group_t *groups = calloc(G ? G : 1, sizeof(*groups));
    replay_bound_pod_t *pods = calloc(s.pods_count ? s.pods_count : 1, sizeof(*pods));
    bool *hosts = calloc(s.pods_count * G + 1, sizeof(*hosts));
    if (rc == 0 && (!groups || !pods || !hosts))
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    for (size_t g = 0; rc == 0 && g < G; g++) {
        const replay_group_t *grp = &s.groups[g];
        groups[g] = (replay_bound_group_t){grp->info.capacity, grp->price, grp->cfg->min_size,
                                           grp->cfg->max_size};
    }
    for (size_t i = 0; rc == 0 && i < s.pods_count; i++) {
        const replay_pod_t *p = &s.pods[i];
        for (size_t g = 0; g < G; g++)
            hosts[i * G + g] = replay__can_host(&s, p, g);
        pods[i] = (replay_bound_pod_t){p->arrive_s, p->arrive_s + p->duration_s, p->request,
                                       hosts + i * G};
    }
    if (rc == 0)
        rc = replay_bound_compute(groups, G, cfg->autoprovisioning.max_cpu_milli,
                                  cfg->autoprovisioning.max_memory_bytes, pods, s.pods_count,
                                  s.horizon_s, out, err);
    free(groups);
    free(pods);
    free(hosts);
    replay__free(&s);
    return rc;
}
