/* The fluid lower bound: see replay_bound.h and docs/replay.md. */
#include <glpk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay_bound.h"

#define BOUND__RESOURCES 3 /* cpu (cores), memory (GiB), GPUs */
#define BOUND__GIB (1024.0 * 1024.0 * 1024.0)

/* A pod's class: which groups host it, and the direction of its request. */
typedef struct bound__key {
    int kind; /* 0: d = (1, m/c, g/c); 1: no cpu, d = (0, 1, g/m); 2: GPUs only */
    /* The direction's identity: exact, the reduced fractions m/c and g/c (bytes and
     * GPUs per millicore; g/m: GPUs per byte), numerator then denominator, 0/1 when 0;
     * on the grid, the grid indices of m/c and g/c, INT64_MIN when 0. */
    int64_t dir[4];
    double d[BOUND__RESOURCES]; /* the direction per unit of load */
    double load;                /* the pod's amount along d: cores, GiB or GPUs */
    const bool *hosts;
    uint32_t pod;
} bound__key_t;

typedef struct bound__class {
    double d[BOUND__RESOURCES];
    const bool *hosts;
    double load; /* of the pods running now */
    double area; /* load x seconds since the window's start, up to since */
    int64_t since;
    size_t count;  /* pods running now (the load is set to exactly 0 at none) */
    double solved; /* the load the program last saw */
} bound__class_t;

typedef struct bound__event {
    int64_t t_s;
    uint32_t cls;
    int sign;
    double load;
} bound__event_t;

/* The grid index of v > 0: floor(GRID log2 v); and the grid value it stands for. */
static int64_t bound__grid(double v) {
    return (int64_t)floor(log2(v) * REPLAY_BOUND_GRID);
}

static double bound__grid_value(int64_t k) {
    return k == INT64_MIN ? 0.0 : exp2((double)k / REPLAY_BOUND_GRID);
}

/* The position of ratio v > 0 between two grid points: their lower index, and the weight
 * of the upper one (v = (1 - w) lower + w upper). */
static int64_t bound__between(double v, double *w) {
    int64_t k = bound__grid(v);
    double lo = bound__grid_value(k), hi = bound__grid_value(k + 1);
    *w = v <= lo ? 0.0 : v >= hi ? 1.0 : (v - lo) / (hi - lo);
    return k;
}

static int64_t bound__gcd(int64_t a, int64_t b) {
    while (b != 0) {
        int64_t t = a % b;
        a = b, b = t;
    }
    return a;
}

/* num/den (den > 0) reduced into f[0], f[1]: equal ratios give equal pairs. */
static void bound__fraction(int64_t num, int64_t den, int64_t *f) {
    int64_t g = num > 0 ? bound__gcd(num, den) : den;
    f[0] = num / g, f[1] = den / g;
}

/* The pod as parts whose requests add up to its own: one part along its exact direction
 * (exact), or at most four whose directions lie on the grid. Returns how many (0: it
 * requests nothing). */
static size_t bound__keys_of(const replay_bound_pod_t *p, uint32_t pod, bool exact,
                             bound__key_t *k) {
    int64_t cm = p->request.cpu_milli, mb = p->request.memory_bytes, gpu = p->request.gpu;
    double c = (double)cm / 1000.0, m = (double)mb / BOUND__GIB, g = (double)gpu;
    int kind;
    double load, second = 0, third = 0;
    bound__key_t key = {.hosts = p->hosts, .pod = pod};
    if (cm > 0) {
        kind = 0, load = c, second = m / c, third = g / c;
        bound__fraction(mb, cm, &key.dir[0]);
        bound__fraction(gpu, cm, &key.dir[2]);
    } else if (mb > 0) {
        kind = 1, load = m, third = g / m;
        key.dir[0] = 0, key.dir[1] = 1;
        bound__fraction(gpu, mb, &key.dir[2]);
    } else if (gpu > 0) {
        kind = 2, load = g;
        key.dir[0] = key.dir[2] = 0, key.dir[1] = key.dir[3] = 1;
    } else {
        return 0;
    }
    key.kind = kind;
    key.d[kind] = 1.0;
    if (exact) { /* from the reduced fractions: every pod of the class gets the same d */
        if (kind == 0)
            key.d[1] = (double)key.dir[0] / (double)key.dir[1] * (1000.0 / BOUND__GIB);
        if (kind != 2)
            key.d[2] = (double)key.dir[2] / (double)key.dir[3] * (kind == 0 ? 1000.0 : BOUND__GIB);
        key.load = load;
        k[0] = key;
        return 1;
    }
    int64_t km = INT64_MIN, kg = INT64_MIN;
    double wm = 0, wg = 0;
    if (second > 0)
        km = bound__between(second, &wm);
    if (third > 0)
        kg = bound__between(third, &wg);
    size_t n = 0;
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < 2; j++) {
            double w = (i ? wm : 1 - wm) * (j ? wg : 1 - wg);
            if (w <= 0)
                continue;
            bound__key_t *part = &k[n++];
            *part = key;
            part->dir[0] = km == INT64_MIN ? km : km + i, part->dir[1] = 0;
            part->dir[2] = kg == INT64_MIN ? kg : kg + j, part->dir[3] = 0;
            if (kind == 0)
                part->d[1] = bound__grid_value(part->dir[0]);
            if (kind != 2)
                part->d[2] = bound__grid_value(part->dir[2]);
            part->load = load * w;
        }
    }
    return n;
}

static int bound__key_cmp_n(const bound__key_t *x, const bound__key_t *y, size_t n) {
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    for (int i = 0; i < 4; i++)
        if (x->dir[i] != y->dir[i])
            return x->dir[i] < y->dir[i] ? -1 : 1;
    return memcmp(x->hosts, y->hosts, n * sizeof(bool));
}

/* Classes by sorting keys; qsort_r is not C11, so keys sort with a merge sort of our own
 * that takes the row length as an argument. */
static void bound__sort(bound__key_t *keys, bound__key_t *tmp, size_t n, size_t groups) {
    if (n < 2)
        return;
    size_t h = n / 2;
    bound__sort(keys, tmp, h, groups);
    bound__sort(keys + h, tmp, n - h, groups);
    size_t i = 0, j = h, o = 0;
    while (i < h && j < n)
        tmp[o++] = bound__key_cmp_n(&keys[j], &keys[i], groups) < 0 ? keys[j++] : keys[i++];
    while (i < h)
        tmp[o++] = keys[i++];
    while (j < n)
        tmp[o++] = keys[j++];
    memcpy(keys, tmp, n * sizeof(*keys));
}

/* The sorted keys of the pods that run within [0, horizon_s) and that some group
 * hosts, exact or on the grid; returns their number. */
static size_t bound__keys(const replay_bound_pod_t *pods, size_t pods_count, size_t G,
                          int64_t horizon_s, bool exact, bound__key_t *keys, bound__key_t *tmp) {
    size_t n = 0;
    for (size_t i = 0; i < pods_count; i++) {
        const replay_bound_pod_t *p = &pods[i];
        int64_t a = p->start_s > 0 ? p->start_s : 0,
                b = p->end_s < horizon_s ? p->end_s : horizon_s;
        bool hosted = false;
        for (size_t g = 0; g < G && !hosted; g++)
            hosted = p->hosts[g];
        if (b > a && hosted)
            n += bound__keys_of(p, (uint32_t)i, exact, &keys[n]);
    }
    bound__sort(keys, tmp, n, G);
    return n;
}

/* The number of classes among n sorted keys. */
static size_t bound__classes(const bound__key_t *keys, size_t n, size_t G) {
    size_t C = 0;
    for (size_t i = 0; i < n; i++)
        C += i == 0 || bound__key_cmp_n(&keys[i - 1], &keys[i], G) != 0;
    return C;
}

static int bound__event_cmp(const void *a, const void *b) {
    const bound__event_t *x = a, *y = b;
    return (x->t_s > y->t_s) - (x->t_s < y->t_s);
}

/* The program over the classes: rows 1..C are the classes, then BOUND__RESOURCES per
 * group, then the cluster limits; columns 1..G are the groups' node counts, then one
 * assignment per (class, hosting group). */
static int bound__build(glp_prob *lp, const replay_bound_group_t *groups, size_t G,
                        const bound__class_t *cls, size_t C, const double limit[2]) {
    size_t lim_rows = (limit[0] > 0) + (limit[1] > 0);
    size_t rows = C + G * BOUND__RESOURCES + lim_rows;
    size_t ycols = 0;
    for (size_t c = 0; c < C; c++)
        for (size_t g = 0; g < G; g++)
            ycols += cls[c].hosts[g];
    size_t nnz = G * (BOUND__RESOURCES + 2) + ycols * (1 + BOUND__RESOURCES) + 1;
    int *ia = calloc(nnz, sizeof(*ia)), *ja = calloc(nnz, sizeof(*ja));
    double *ar = calloc(nnz, sizeof(*ar));
    if (!ia || !ja || !ar) {
        free(ia), free(ja), free(ar);
        return FRUGAL_ENOMEM;
    }
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_rows(lp, (int)rows);
    glp_add_cols(lp, (int)(G + ycols));
    for (size_t c = 0; c < C; c++)
        glp_set_row_bnds(lp, (int)(c + 1), GLP_FX, 0.0, 0.0);
    for (size_t r = C; r < C + G * BOUND__RESOURCES; r++)
        glp_set_row_bnds(lp, (int)(r + 1), GLP_UP, 0.0, 0.0);
    size_t lim_row[2] = {0, 0}, at = C + G * BOUND__RESOURCES;
    for (int r = 0; r < 2; r++) {
        if (limit[r] > 0) {
            lim_row[r] = ++at;
            glp_set_row_bnds(lp, (int)at, GLP_UP, 0.0, limit[r]);
        }
    }
    size_t k = 0;
    for (size_t g = 0; g < G; g++) {
        const replay_bound_group_t *grp = &groups[g];
        double cap[BOUND__RESOURCES] = {(double)grp->capacity.cpu_milli / 1000.0,
                                        (double)grp->capacity.memory_bytes / BOUND__GIB,
                                        (double)grp->capacity.gpu};
        int col = (int)(g + 1);
        double lo = grp->min_size > 0 ? grp->min_size : 0;
        double hi = grp->max_size > lo ? grp->max_size : lo;
        glp_set_col_bnds(lp, col, hi > lo ? GLP_DB : GLP_FX, lo, hi);
        glp_set_obj_coef(lp, col, grp->price);
        for (int r = 0; r < BOUND__RESOURCES; r++) {
            if (cap[r] > 0) {
                k++, ia[k] = (int)(C + g * BOUND__RESOURCES + (size_t)r + 1), ja[k] = col;
                ar[k] = -cap[r];
            }
            if (r < 2 && lim_row[r] && cap[r] > 0)
                k++, ia[k] = (int)lim_row[r], ja[k] = col, ar[k] = cap[r];
        }
    }
    int col = (int)G;
    for (size_t c = 0; c < C; c++) {
        for (size_t g = 0; g < G; g++) {
            if (!cls[c].hosts[g])
                continue;
            col++;
            glp_set_col_bnds(lp, col, GLP_LO, 0.0, 0.0);
            k++, ia[k] = (int)(c + 1), ja[k] = col, ar[k] = 1.0;
            for (int r = 0; r < BOUND__RESOURCES; r++)
                if (cls[c].d[r] > 0)
                    k++, ia[k] = (int)(C + g * BOUND__RESOURCES + (size_t)r + 1), ja[k] = col,
                         ar[k] = cls[c].d[r];
        }
    }
    glp_load_matrix(lp, (int)k, ia, ja, ar);
    free(ia), free(ja), free(ar);
    glp_scale_prob(lp, GLP_SF_AUTO);
    return 0;
}

static const char *bound__glpk_error(int rc) {
    switch (rc) {
    case GLP_ESING:
        return "singular basis";
    case GLP_ECOND:
        return "ill-conditioned basis";
    case GLP_EITLIM:
        return "iteration limit";
    case GLP_ETMLIM:
        return "time limit";
    case GLP_EFAIL:
        return "solver failed";
    default:
        return "numerical failure";
    }
}

/* The first event time after t0, from ev[e] on (events sorted by time); INT64_MAX when
 * none is left. */
static int64_t bound__next_change(const bound__event_t *ev, size_t E, size_t e, int64_t t0) {
    while (e < E && ev[e].t_s <= t0)
        e++;
    return e < E ? ev[e].t_s : INT64_MAX;
}

/* Solve from the current basis, once more from an advanced basis when that fails;
 * the optimum in *value, or a reason in out. */
static bool bound__solve(glp_prob *lp, int64_t t_s, double *value, replay_bound_t *out) {
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.meth = GLP_DUALP;
    int rc = glp_simplex(lp, &parm);
    if (rc != 0) {
        glp_adv_basis(lp, 0);
        rc = glp_simplex(lp, &parm);
    }
    out->solves++;
    double hours = (double)t_s / 3600.0;
    if (rc != 0) {
        snprintf(out->reason, sizeof(out->reason), "GLPK cannot solve the program at %.2f h: %s",
                 hours, bound__glpk_error(rc));
        return false;
    }
    int status = glp_get_status(lp);
    if (status == GLP_NOFEAS || glp_get_prim_stat(lp) == GLP_NOFEAS) {
        snprintf(out->reason, sizeof(out->reason),
                 "no feasible solution at %.2f h: the pods running then need more nodes than "
                 "max_size and the cluster limits allow",
                 hours);
        return false;
    }
    if (status != GLP_OPT) {
        snprintf(out->reason, sizeof(out->reason), "GLPK found no optimum at %.2f h (status %d)",
                 hours, status);
        return false;
    }
    *value = glp_get_obj_val(lp);
    return true;
}

int replay_bound_compute(const replay_bound_group_t *groups, size_t groups_count,
                         int64_t max_cpu_milli, int64_t max_memory_bytes,
                         const replay_bound_pod_t *pods, size_t pods_count, int64_t horizon_s,
                         replay_bound_t *out, frugal_err_t *err) {
    memset(out, 0, sizeof(*out));
    size_t G = groups_count;
    bound__key_t *keys = calloc(4 * pods_count + 1, sizeof(*keys));
    bound__key_t *tmp = calloc(4 * pods_count + 1, sizeof(*tmp));
    bound__class_t *cls = calloc(4 * pods_count + 1, sizeof(*cls));
    bound__event_t *ev = calloc(8 * pods_count + 1, sizeof(*ev));
    glp_prob *lp = NULL;
    int rc = 0;
    if (!keys || !tmp || !cls || !ev) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        goto done;
    }
    size_t n = bound__keys(pods, pods_count, G, horizon_s, true, keys, tmp);
    out->exact = bound__classes(keys, n, G) <= REPLAY_BOUND_EXACT_CLASSES;
    if (!out->exact)
        n = bound__keys(pods, pods_count, G, horizon_s, false, keys, tmp);
    size_t C = 0, E = 0;
    for (size_t i = 0; i < n; i++) {
        const bound__key_t *k = &keys[i];
        if (i == 0 || bound__key_cmp_n(&keys[i - 1], k, G) != 0) {
            bound__class_t *c = &cls[C++];
            c->hosts = k->hosts;
            memcpy(c->d, k->d, sizeof(c->d));
        }
        const replay_bound_pod_t *p = &pods[k->pod];
        int64_t a = p->start_s > 0 ? p->start_s : 0,
                b = p->end_s < horizon_s ? p->end_s : horizon_s;
        ev[E++] = (bound__event_t){a, (uint32_t)(C - 1), 1, k->load};
        ev[E++] = (bound__event_t){b, (uint32_t)(C - 1), -1, k->load};
    }
    qsort(ev, E, sizeof(*ev), bound__event_cmp);
    out->classes = C;

    glp_term_out(GLP_OFF);
    if ((lp = glp_create_prob()) == NULL) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        goto done;
    }
    double limit[2] = {
        max_cpu_milli > 0 && max_cpu_milli < INT64_MAX ? (double)max_cpu_milli / 1000.0 : 0,
        max_memory_bytes > 0 && max_memory_bytes < INT64_MAX ? (double)max_memory_bytes / BOUND__GIB
                                                             : 0};
    if ((rc = bound__build(lp, groups, G, cls, C, limit)) != 0) {
        rc = frugal_err_set(err, rc, "out of memory");
        goto done;
    }
    /* One program per change of the running set when there are at most
     * REPLAY_BOUND_MAX_SOLVES changes; else windows of equal length, as many, each solved
     * for its classes' mean load (exact when a window holds no change). */
    size_t changes = 0;
    for (size_t i = 0; i < E && ev[i].t_s < horizon_s; i++)
        changes += ev[i].t_s > 0 && (i == 0 || ev[i].t_s != ev[i - 1].t_s);
    bool per_change = changes < REPLAY_BOUND_MAX_SOLVES;
    int64_t window = (horizon_s + REPLAY_BOUND_MAX_SOLVES - 1) / REPLAY_BOUND_MAX_SOLVES;
    if (window < REPLAY_BOUND_MIN_WINDOW)
        window = REPLAY_BOUND_MIN_WINDOW;
    double value = 0;
    out->ok = true;
    size_t e = 0;
    for (int64_t t0 = 0; out->ok && t0 < horizon_s;) {
        int64_t t1 = per_change ? bound__next_change(ev, E, e, t0) : t0 + window;
        if (t1 > horizon_s)
            t1 = horizon_s;
        for (; e < E && ev[e].t_s < t1; e++) {
            bound__class_t *c = &cls[ev[e].cls];
            int64_t at = ev[e].t_s > t0 ? ev[e].t_s : t0;
            c->area += c->load * (double)(at - c->since);
            c->since = at;
            c->load += ev[e].sign * ev[e].load;
            c->count = ev[e].sign > 0 ? c->count + 1 : c->count - 1;
            if (c->count == 0)
                c->load = 0.0;
        }
        bool dirty = t0 == 0;
        for (size_t k = 0; k < C; k++) {
            bound__class_t *c = &cls[k];
            double mean = (c->area + c->load * (double)(t1 - c->since)) / (double)(t1 - t0);
            if (c->count == 0 && c->area == 0)
                mean = 0;
            c->area = 0, c->since = t1;
            if (mean != c->solved) {
                c->solved = mean;
                glp_set_row_bnds(lp, (int)k + 1, GLP_FX, mean, mean);
                dirty = true;
            }
        }
        if (dirty && !(out->ok = bound__solve(lp, t0, &value, out)))
            break;
        out->cost += value * (double)(t1 - t0) / 3600.0;
        t0 = t1;
    }
    if (!out->ok)
        out->cost = 0;

done:
    if (lp)
        glp_delete_prob(lp);
    glp_free_env();
    free(keys);
    free(tmp);
    free(cls);
    free(ev);
    return rc;
}
