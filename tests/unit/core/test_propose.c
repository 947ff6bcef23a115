/* Unit tests of server/core/propose.c, the label-set algorithm of ProposeNodeGroups: the
 * design's scenarios TC1-TC6 at the pure level, plus popularity folding, well-known
 * labels, node counts, ordering and the pod decoder. Pods are built as real v1.Pod
 * messages, packed and decoded, as the service receives them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "k8s.h"
#include "propose.h"

/* A pod as a test writes it. */
typedef struct pod_def {
    const char *name;
    const char *cpu;
    const char *memory;
    const char *selector;    /* "k=v,k=v" or NULL */
    const char *tolerations; /* "key=value:Effect,key:Effect(Exists)" or NULL */
    const char *affinity;    /* one required term's expression: "k=v" (In; "k=v|w" for
                                several values), "k!=v|w" (NotIn), or NULL */
} pod_def_t;

typedef K8s__Io__Api__Core__V1__PodSpec__NodeSelectorEntry sel_entry_t;
typedef K8s__Io__Api__Core__V1__ResourceRequirements__RequestsEntry req_entry_t;

/* Split "a=1,b=2" into a malloc'ed copy and pointers to its pieces. */
static size_t split(const char *s, char sep, char **copy, char **parts, size_t max) {
    *copy = strdup(s != NULL ? s : "");
    size_t n = 0;
    if (s == NULL || s[0] == '\0')
        return 0;
    char *p = *copy;
    while (n < max) {
        parts[n++] = p;
        char *q = strchr(p, sep);
        if (q == NULL)
            break;
        *q = '\0';
        p = q + 1;
    }
    return n;
}

/* Pack a v1.Pod for def and decode it with propose_pod_decode. */
static void make_pod(const pod_def_t *def, propose_pod_t *out) {
    k8s_quantity_t qcpu = K8S__IO__APIMACHINERY__PKG__API__RESOURCE__QUANTITY__INIT;
    k8s_quantity_t qmem = K8S__IO__APIMACHINERY__PKG__API__RESOURCE__QUANTITY__INIT;
    qcpu.string = (char *)def->cpu;
    qmem.string = (char *)def->memory;
    req_entry_t rcpu = K8S__IO__API__CORE__V1__RESOURCE_REQUIREMENTS__REQUESTS_ENTRY__INIT;
    req_entry_t rmem = K8S__IO__API__CORE__V1__RESOURCE_REQUIREMENTS__REQUESTS_ENTRY__INIT;
    rcpu.key = "cpu";
    rcpu.value = &qcpu;
    rmem.key = "memory";
    rmem.value = &qmem;
    req_entry_t *reqs[2] = {&rcpu, &rmem};
    k8s_resource_requirements_t rr = K8S__IO__API__CORE__V1__RESOURCE_REQUIREMENTS__INIT;
    rr.n_requests = 2;
    rr.requests = reqs;
    k8s_container_t ct = K8S__IO__API__CORE__V1__CONTAINER__INIT;
    ct.name = "main";
    ct.resources = &rr;
    k8s_container_t *cts[1] = {&ct};

    k8s_pod_spec_t spec = K8S__IO__API__CORE__V1__POD_SPEC__INIT;
    spec.n_containers = 1;
    spec.containers = cts;

    char *sel_copy, *sel_parts[16];
    size_t nsel = split(def->selector, ',', &sel_copy, sel_parts, 16);
    sel_entry_t sels[16], *sel_ptrs[16];
    for (size_t i = 0; i < nsel; i++) {
        sel_entry_t init = K8S__IO__API__CORE__V1__POD_SPEC__NODE_SELECTOR_ENTRY__INIT;
        sels[i] = init;
        char *eq = strchr(sel_parts[i], '=');
        assert_non_null(eq);
        *eq = '\0';
        sels[i].key = sel_parts[i];
        sels[i].value = eq + 1;
        sel_ptrs[i] = &sels[i];
    }
    spec.n_nodeselector = nsel;
    spec.nodeselector = sel_ptrs;

    char *tol_copy, *tol_parts[16];
    size_t ntol = split(def->tolerations, ',', &tol_copy, tol_parts, 16);
    k8s_toleration_t tols[16], *tol_ptrs[16];
    for (size_t i = 0; i < ntol; i++) {
        k8s_toleration_t init = K8S__IO__API__CORE__V1__TOLERATION__INIT;
        tols[i] = init;
        char *colon = strchr(tol_parts[i], ':');
        if (colon != NULL) {
            *colon = '\0';
            tols[i].effect = colon + 1;
        }
        char *eq = strchr(tol_parts[i], '=');
        if (eq != NULL) {
            *eq = '\0';
            tols[i].operator_ = "Equal";
            tols[i].value = eq + 1;
        } else {
            tols[i].operator_ = "Exists";
        }
        tols[i].key = tol_parts[i];
        tol_ptrs[i] = &tols[i];
    }
    spec.n_tolerations = ntol;
    spec.tolerations = tol_ptrs;

    K8s__Io__Api__Core__V1__NodeSelectorRequirement expr =
        K8S__IO__API__CORE__V1__NODE_SELECTOR_REQUIREMENT__INIT;
    K8s__Io__Api__Core__V1__NodeSelectorRequirement *exprs[1] = {&expr};
    K8s__Io__Api__Core__V1__NodeSelectorTerm term =
        K8S__IO__API__CORE__V1__NODE_SELECTOR_TERM__INIT;
    K8s__Io__Api__Core__V1__NodeSelectorTerm *terms[1] = {&term};
    K8s__Io__Api__Core__V1__NodeSelector ns = K8S__IO__API__CORE__V1__NODE_SELECTOR__INIT;
    K8s__Io__Api__Core__V1__NodeAffinity na = K8S__IO__API__CORE__V1__NODE_AFFINITY__INIT;
    K8s__Io__Api__Core__V1__Affinity aff = K8S__IO__API__CORE__V1__AFFINITY__INIT;
    char *aff_copy = strdup(def->affinity != NULL ? def->affinity : "");
    char *aff_value[4], *values_copy = NULL;
    if (def->affinity != NULL) {
        char *eq = strchr(aff_copy, '=');
        assert_non_null(eq);
        *eq = '\0';
        bool not_in = eq > aff_copy && eq[-1] == '!';
        if (not_in)
            eq[-1] = '\0';
        expr.key = aff_copy;
        expr.operator_ = not_in ? "NotIn" : "In";
        expr.n_values = split(eq + 1, '|', &values_copy, aff_value, 4);
        expr.values = aff_value;
        term.n_matchexpressions = 1;
        term.matchexpressions = exprs;
        ns.n_nodeselectorterms = 1;
        ns.nodeselectorterms = terms;
        na.requiredduringschedulingignoredduringexecution = &ns;
        aff.nodeaffinity = &na;
        spec.affinity = &aff;
    }

    k8s_object_meta_t meta = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__INIT;
    meta.name = (char *)def->name;
    meta.namespace_ = "default";
    k8s_pod_t pod = K8S__IO__API__CORE__V1__POD__INIT;
    pod.metadata = &meta;
    pod.spec = &spec;

    size_t len = k8s__io__api__core__v1__pod__get_packed_size(&pod);
    uint8_t *buf = malloc(len);
    k8s__io__api__core__v1__pod__pack(&pod, buf);
    frugal_err_t err = {0};
    int rc = propose_pod_decode(buf, len, out, &err);
    if (rc != 0)
        fail_msg("decode %s: %s", def->name, err.msg);
    free(buf);
    free(sel_copy);
    free(tol_copy);
    free(aff_copy);
    free(values_copy);
}

typedef struct fixture {
    frugal_config_t *cfg;
    propose_pod_t pods[256];
    size_t n;
    propose_result_t res;
} fixture_t;

static void load(fixture_t *f, const char *types, const char *zones) {
    char yaml[1024];
    snprintf(yaml, sizeof(yaml),
             "autoprovisioning:\n"
             "  enabled: true\n"
             "  machine_types: [%s]\n"
             "  zones: [%s]\n",
             types, zones);
    char *errors = NULL;
    memset(f, 0, sizeof(*f));
    if (config_load_string("propose.yaml", yaml, strlen(yaml), &f->cfg, &errors) != 0)
        fail_msg("config: %s", errors != NULL ? errors : "?");
}

static void add(fixture_t *f, pod_def_t def) {
    assert_true(f->n < 256);
    make_pod(&def, &f->pods[f->n++]);
}

static void run(fixture_t *f) {
    propose_params_t params = {f->cfg, 3, NULL, NULL};
    frugal_err_t err = {0};
    if (propose_node_groups(&params, f->pods, f->n, &f->res, &err) != 0)
        fail_msg("propose: %s", err.msg);
}

static void done(fixture_t *f) {
    propose_result_clear(&f->res);
    for (size_t i = 0; i < f->n; i++)
        propose_pod_clear(&f->pods[i]);
    config_free(f->cfg);
}

static const char *label(const propose_proposal_t *p, const char *key) {
    for (size_t i = 0; i < p->labels.count; i++)
        if (strcmp(p->labels.items[i].key, key) == 0)
            return p->labels.items[i].value;
    return NULL;
}

static bool serves(const fixture_t *f, const propose_proposal_t *p, const char *name) {
    char full[128];
    snprintf(full, sizeof(full), "default/%s", name);
    for (size_t i = 0; i < p->pods_count; i++)
        if (strcmp(f->pods[p->pods[i]].name, full) == 0)
            return true;
    return false;
}

/* The proposals of one machine type, in result order. */
static size_t of_type(const fixture_t *f, const char *type, const propose_proposal_t **out,
                      size_t max) {
    size_t k = 0;
    for (size_t i = 0; i < f->res.count && k < max; i++)
        if (strcmp(f->res.proposals[i].machine_type->name, type) == 0)
            out[k++] = &f->res.proposals[i];
    return k;
}

/* TC1: a big pod gets a big enough group and nothing smaller. */
static void test_tc1_big_pod(void **state) {
    (void)state;
    fixture_t f;
    load(&f, "n1-standard-1, n1-standard-2, n1-standard-4, n1-standard-8, n1-highmem-8",
         "us-central1-a");
    add(&f, (pod_def_t){"big", "6", "20Gi", NULL, NULL, NULL});
    add(&f, (pod_def_t){"huge", "200", "1Gi", NULL, NULL, NULL});
    run(&f);
    assert_int_equal(f.res.count, 2);
    for (size_t i = 0; i < f.res.count; i++) {
        const propose_proposal_t *p = &f.res.proposals[i];
        assert_true(p->machine_type->cpu_milli >= 6000);
        assert_true(p->machine_type->memory_bytes >= 20LL << 30);
        /* 6 cores are 75 % of an 8-core node: the 70 % headroom takes a second one. */
        assert_int_equal(p->node_count, 2);
        assert_int_equal(p->pods_count, 1);
        assert_true(serves(&f, p, "big"));
        assert_true(p->figures.scored);
        assert_false(p->exists);
        assert_string_equal(p->zone, "us-central1-a");
    }
    /* Cheapest first: the standard type beats the highmem one for a cpu-bound pod. */
    assert_string_equal(f.res.proposals[0].machine_type->name, "n1-standard-8");
    assert_string_equal(f.res.proposals[0].group_id, "nap-n1-standard-8-us-central1-a");
    assert_true(f.res.proposals[0].figures.score <= f.res.proposals[1].figures.score);
    assert_int_equal(f.res.unschedulable_count, 1);
    assert_string_equal(f.pods[f.res.unschedulable[0]].name, "default/huge");
    done(&f);
}

/* TC2: a pod with a node selector gets a group with that label. */
static void test_tc2_selector(void **state) {
    (void)state;
    fixture_t f;
    load(&f, "n1-standard-4", "us-central1-a");
    add(&f, (pod_def_t){"ssd", "1", "1Gi", "disktype=ssd", NULL, NULL});
    run(&f);
    assert_int_equal(f.res.count, 1);
    const propose_proposal_t *p = &f.res.proposals[0];
    assert_int_equal(p->labels.count, 1);
    assert_string_equal(label(p, "disktype"), "ssd");
    assert_int_equal(p->taints.count, 0);
    assert_true(strncmp(p->group_id, "nap-n1-standard-4-us-central1-a-", 32) == 0);
    assert_int_equal(strlen(p->group_id), 32 + 8);
    done(&f);
}

/* TC3: two pods with incompatible selectors give two groups. */
static void test_tc3_incompatible(void **state) {
    (void)state;
    fixture_t f;
    load(&f, "n1-standard-4", "us-central1-a");
    add(&f, (pod_def_t){"x", "1", "1Gi", "team=x", NULL, NULL});
    add(&f, (pod_def_t){"y", "1", "1Gi", "team=y", NULL, NULL});
    run(&f);
    assert_int_equal(f.res.count, 2);
    const propose_proposal_t *a = &f.res.proposals[0], *b = &f.res.proposals[1];
    if (strcmp(label(a, "team"), "x") != 0) {
        const propose_proposal_t *t = a;
        a = b;
        b = t;
    }
    assert_string_equal(label(a, "team"), "x");
    assert_string_equal(label(b, "team"), "y");
    assert_true(serves(&f, a, "x") && !serves(&f, a, "y"));
    assert_true(serves(&f, b, "y") && !serves(&f, b, "x"));
    assert_string_not_equal(a->group_id, b->group_id);
    done(&f);
}

/* TC4: two pods with compatible but different selectors give one group with both labels. */
static void test_tc4_compatible(void **state) {
    (void)state;
    fixture_t f;
    load(&f, "n1-standard-4", "us-central1-a");
    add(&f, (pod_def_t){"x", "1", "1Gi", "team=x", NULL, NULL});
    add(&f, (pod_def_t){"ssd", "1", "1Gi", "disktype=ssd", NULL, NULL});
    run(&f);
    assert_int_equal(f.res.count, 1);
    const propose_proposal_t *p = &f.res.proposals[0];
    assert_int_equal(p->labels.count, 2);
    assert_string_equal(label(p, "team"), "x");
    assert_string_equal(label(p, "disktype"), "ssd");
    assert_int_equal(p->pods_count, 2);
    done(&f);
}

/* TC5: a pod with a custom toleration gives a tainted group; a pod without it is never
 * put on that group. */
static void test_tc5_toleration(void **state) {
    (void)state;
    fixture_t f;
    load(&f, "n1-standard-4", "us-central1-a");
    add(&f, (pod_def_t){"ml", "1", "1Gi", NULL, "dedicated=ml:NoSchedule", NULL});
    add(&f, (pod_def_t){"plain", "1", "1Gi", NULL, "node.kubernetes.io/not-ready:NoExecute", NULL});
    run(&f);
    assert_int_equal(f.res.count, 2);
    const propose_proposal_t *tainted = NULL, *plain = NULL;
    for (size_t i = 0; i < f.res.count; i++) {
        if (f.res.proposals[i].taints.count > 0)
            tainted = &f.res.proposals[i];
        else
            plain = &f.res.proposals[i];
    }
    assert_non_null(tainted);
    assert_non_null(plain);
    assert_int_equal(tainted->taints.count, 1);
    assert_string_equal(tainted->taints.items[0].key, "dedicated");
    assert_string_equal(tainted->taints.items[0].value, "ml");
    assert_string_equal(tainted->taints.items[0].effect, "NoSchedule");
    assert_true(serves(&f, tainted, "ml") && !serves(&f, tainted, "plain"));
    assert_true(serves(&f, plain, "plain"));
    assert_string_not_equal(tainted->group_id, plain->group_id);
    done(&f);
}

/* TC6: two different custom tolerations give two groups. */
static void test_tc6_two_tolerations(void **state) {
    (void)state;
    fixture_t f;
    load(&f, "n1-standard-4", "us-central1-a");
    add(&f, (pod_def_t){"ml", "1", "1Gi", NULL, "dedicated=ml:NoSchedule", NULL});
    add(&f, (pod_def_t){"batch", "1", "1Gi", NULL, "batch:NoSchedule", NULL});
    add(&f, (pod_def_t){"ml2", "1", "1Gi", NULL, "dedicated=ml:NoSchedule", NULL});
    run(&f);
    assert_int_equal(f.res.count, 2);
    const propose_proposal_t *ml = NULL, *batch = NULL;
    for (size_t i = 0; i < f.res.count; i++) {
        assert_int_equal(f.res.proposals[i].taints.count, 1);
        if (strcmp(f.res.proposals[i].taints.items[0].key, "dedicated") == 0)
            ml = &f.res.proposals[i];
        else
            batch = &f.res.proposals[i];
    }
    assert_non_null(ml);
    assert_non_null(batch);
    assert_string_equal(batch->taints.items[0].key, "batch");
    assert_string_equal(batch->taints.items[0].value, "");
    assert_int_equal(ml->pods_count, 2);
    assert_true(serves(&f, batch, "batch"));
    done(&f);
}

/* The most popular selector starts the set; compatible ones fold in, the rest wait. */
static void test_popularity_and_folding(void **state) {
    (void)state;
    fixture_t f;
    load(&f, "n1-standard-4", "us-central1-a");
    add(&f, (pod_def_t){"a2", "500m", "1Gi", "a=2", NULL, NULL});
    add(&f, (pod_def_t){"a1-1", "500m", "1Gi", "a=1", NULL, NULL});
    add(&f, (pod_def_t){"a1-2", "500m", "1Gi", "a=1", NULL, NULL});
    add(&f, (pod_def_t){"a1-3", "500m", "1Gi", "a=1", NULL, NULL});
    add(&f, (pod_def_t){"b1-1", "500m", "1Gi", "b=1", NULL, NULL});
    add(&f, (pod_def_t){"b1-2", "500m", "1Gi", "b=1", NULL, NULL});
    add(&f, (pod_def_t){"free", "500m", "1Gi", NULL, NULL, NULL});
    run(&f);
    assert_int_equal(f.res.count, 2);
    const propose_proposal_t *big =
        f.res.proposals[0].pods_count == 6 ? &f.res.proposals[0] : &f.res.proposals[1];
    const propose_proposal_t *small =
        big == &f.res.proposals[0] ? &f.res.proposals[1] : &f.res.proposals[0];
    assert_int_equal(big->pods_count, 6);
    assert_string_equal(label(big, "a"), "1");
    assert_string_equal(label(big, "b"), "1");
    assert_true(serves(&f, big, "free"));
    assert_int_equal(small->pods_count, 1);
    assert_string_equal(label(small, "a"), "2");
    assert_null(label(small, "b"));
    done(&f);
}

/* Well-known labels: instance type must name the type, zone picks the zone, a hostname
 * cannot be served; none of them goes into the label set. Affinity pins count. */
static void test_well_known_labels(void **state) {
    (void)state;
    fixture_t f;
    load(&f, "n1-standard-2, n1-standard-4", "us-central1-a, us-central1-b");
    add(&f, (pod_def_t){"typed", "1", "1Gi", "node.kubernetes.io/instance-type=n1-standard-4", NULL,
                        NULL});
    add(&f,
        (pod_def_t){"zoned", "1", "1Gi", "topology.kubernetes.io/zone=us-central1-b", NULL, NULL});
    add(&f, (pod_def_t){"host", "1", "1Gi", "kubernetes.io/hostname=node-7", NULL, NULL});
    add(&f, (pod_def_t){"pinned", "1", "1Gi", "kubernetes.io/os=linux", NULL, "team=z"});
    add(&f, (pod_def_t){"conflict", "1", "1Gi", "team=q", NULL, "team=r"});
    add(&f, (pod_def_t){"windows", "1", "1Gi", "kubernetes.io/os=windows", NULL, NULL});
    add(&f, (pod_def_t){"old-chart", "1", "1Gi", "beta.kubernetes.io/os=linux", NULL, "team=z"});
    add(&f, (pod_def_t){"arm", "1", "1Gi", "beta.kubernetes.io/arch=arm64", NULL, NULL});
    run(&f);

    const propose_proposal_t *s2[8], *s4[8];
    size_t n2 = of_type(&f, "n1-standard-2", s2, 8), n4 = of_type(&f, "n1-standard-4", s4, 8);
    for (size_t i = 0; i < n2; i++)
        assert_false(serves(&f, s2[i], "typed"));
    bool typed = false, zoned = false, pinned = false;
    for (size_t i = 0; i < n4; i++) {
        assert_null(label(s4[i], "node.kubernetes.io/instance-type"));
        assert_null(label(s4[i], "topology.kubernetes.io/zone"));
        assert_null(label(s4[i], "kubernetes.io/os"));
        assert_null(label(s4[i], "beta.kubernetes.io/os"));
        if (serves(&f, s4[i], "typed"))
            typed = true;
        if (serves(&f, s4[i], "zoned")) {
            zoned = true;
            assert_string_equal(s4[i]->zone, "us-central1-b");
        }
        if (serves(&f, s4[i], "pinned")) {
            pinned = serves(&f, s4[i], "old-chart"); /* the same labels, the same group */
            assert_string_equal(label(s4[i], "team"), "z");
        }
    }
    assert_true(typed && zoned && pinned);
    /* hostname, conflicting selectors, windows and arm64: no allowed type serves them. */
    assert_int_equal(f.res.unschedulable_count, 4);
    assert_string_equal(f.pods[f.res.unschedulable[0]].name, "default/host");
    assert_string_equal(f.pods[f.res.unschedulable[1]].name, "default/conflict");
    assert_string_equal(f.pods[f.res.unschedulable[2]].name, "default/windows");
    assert_true(f.pods[f.res.unschedulable[1]].impossible);
    done(&f);
}

/* Node count: Escalator's delta from zero, ceil(summed requests x 100 / (one node x
 * 70)), the larger resource. */
static void test_node_count(void **state) {
    (void)state;
    fixture_t f;
    /* n1-standard-4: 4 cores, 15 GB. */
    load(&f, "n1-standard-4", "us-central1-a");
    static const char *const names[] = {"p0", "p1", "p2", "p3", "p4"};
    for (int i = 0; i < 5; i++)
        add(&f, (pod_def_t){names[i], "1500m", "1Gi", NULL, NULL, NULL});
    run(&f);
    assert_int_equal(f.res.count, 1);
    assert_int_equal(f.res.proposals[0].node_count, 3); /* 7.5 cores / 4 / 70 % = 2.68 */
    done(&f);

    load(&f, "n1-standard-4", "us-central1-a");
    add(&f, (pod_def_t){"m1", "100m", "11Gi", NULL, NULL, NULL});
    add(&f, (pod_def_t){"m2", "100m", "11Gi", NULL, NULL, NULL});
    add(&f, (pod_def_t){"m3", "100m", "11Gi", NULL, NULL, NULL});
    run(&f);
    assert_int_equal(f.res.proposals[0].node_count, 4); /* 33 GiB / 15 GiB / 70 % = 3.14 */
    done(&f);

    /* 230 pods of 10m: 2.3 cores would take one node, but a node runs 110 pods. */
    load(&f, "n1-standard-4", "us-central1-a");
    for (int i = 0; i < 230; i++) {
        char name[16];
        snprintf(name, sizeof(name), "t%d", i);
        add(&f, (pod_def_t){name, "10m", "16Mi", NULL, NULL, NULL});
    }
    run(&f);
    assert_int_equal(f.res.proposals[0].node_count, 3);
    done(&f);

    /* 5 pods of 2.1 cores: 10.5 / 4 / 70 % = 3.75 gives 4, but one such pod fills a node. */
    load(&f, "n1-standard-4", "us-central1-a");
    for (int i = 0; i < 5; i++)
        add(&f, (pod_def_t){names[i], "2100m", "1Gi", NULL, NULL, NULL});
    run(&f);
    assert_int_equal(f.res.proposals[0].node_count, 5);
    done(&f);
}

/* Proposals come back cheapest first, and an existing group gets no penalty. */
static bool exists_std4(void *ctx, const char *id) {
    (void)ctx;
    return strcmp(id, "nap-n1-standard-4-us-central1-a") == 0;
}

static void test_order_and_exists(void **state) {
    (void)state;
    fixture_t f;
    load(&f, "n1-standard-1, n1-standard-2, n1-standard-4, n1-highmem-4, n1-standard-16",
         "us-central1-a");
    add(&f, (pod_def_t){"p", "500m", "1Gi", NULL, NULL, NULL});
    run(&f);
    assert_int_equal(f.res.count, 5);
    for (size_t i = 1; i < f.res.count; i++)
        assert_true(f.res.proposals[i - 1].figures.score <= f.res.proposals[i].figures.score);
    double before = 0;
    for (size_t i = 0; i < f.res.count; i++)
        if (strcmp(f.res.proposals[i].machine_type->name, "n1-standard-4") == 0)
            before = f.res.proposals[i].figures.score;
    propose_result_clear(&f.res);

    propose_params_t params = {f.cfg, 3, exists_std4, NULL};
    assert_int_equal(propose_node_groups(&params, f.pods, f.n, &f.res, NULL), 0);
    for (size_t i = 0; i < f.res.count; i++) {
        const propose_proposal_t *p = &f.res.proposals[i];
        if (strcmp(p->machine_type->name, "n1-standard-4") == 0) {
            assert_true(p->exists);
            assert_true(p->figures.score < before);
            assert_float_equal(p->figures.score * f.cfg->ranking.not_exist_penalty, before, 1e-9);
        } else {
            assert_false(p->exists);
        }
    }
    done(&f);
}

static void test_empty_and_bad_input(void **state) {
    (void)state;
    fixture_t f;
    load(&f, "n1-standard-4", "us-central1-a");
    run(&f);
    assert_int_equal(f.res.count, 0);
    assert_int_equal(f.res.unschedulable_count, 0);
    propose_pod_t p;
    uint8_t junk[] = {0xff, 0xff, 0xff};
    frugal_err_t err = {0};
    assert_int_equal(propose_pod_decode(junk, sizeof(junk), &p, &err), FRUGAL_EINVAL);
    done(&f);
}

/* A proposal never holds what NewNodeGroup would refuse: a selector no node label can
 * match makes its pod unschedulable, and a toleration of a taint no node can carry is
 * ignored (the pod goes to an untainted group). */
static void test_invalid_names(void **state) {
    (void)state;
    fixture_t f;
    load(&f, "n1-standard-4", "us-central1-a");
    add(&f, (pod_def_t){"bad-key", "1", "1Gi", "-team=x", NULL, NULL});
    add(&f, (pod_def_t){"bad-value", "1", "1Gi", "team=two words", NULL, NULL});
    add(&f, (pod_def_t){"bad-pin", "1", "1Gi", NULL, NULL, "Example.com/x=y"});
    add(&f, (pod_def_t){"bad-effect", "1", "1Gi", NULL, "dedicated=ml:Sometimes", NULL});
    add(&f, (pod_def_t){"bad-taint", "1", "1Gi", NULL, "dedicated=-ml:NoSchedule", NULL});
    run(&f);
    assert_int_equal(f.res.unschedulable_count, 3);
    assert_int_equal(f.res.count, 1);
    const propose_proposal_t *p = &f.res.proposals[0];
    assert_int_equal(p->labels.count, 0);
    assert_int_equal(p->taints.count, 0);
    assert_true(serves(&f, p, "bad-effect") && serves(&f, p, "bad-taint"));
    done(&f);
}

/* A required affinity the pins do not say (NotIn, In with several values) holds on the
 * proposal's nodes: such a pod never joins a group whose labels or zone it refuses. */
static void test_affinity_beyond_pins(void **state) {
    (void)state;
    fixture_t f;
    load(&f, "n1-standard-2", "us-central1-a");
    add(&f, (pod_def_t){"ml-1", "500m", "1Gi", "team=ml", NULL, NULL});
    add(&f, (pod_def_t){"ml-2", "500m", "1Gi", "team=ml", NULL, NULL});
    add(&f, (pod_def_t){"not-ml", "500m", "1Gi", NULL, NULL, "team!=ml"});
    add(&f, (pod_def_t){"web-or-x", "500m", "1Gi", NULL, NULL, "team=web|x"});
    add(&f, (pod_def_t){"not-a", "500m", "1Gi", NULL, NULL,
                        "topology.kubernetes.io/zone!=us-central1-a"});
    add(&f, (pod_def_t){"in-a", "500m", "1Gi", NULL, NULL,
                        "topology.kubernetes.io/zone=us-central1-a|us-central1-b"});
    run(&f);
    const propose_proposal_t *ml = NULL, *plain = NULL;
    for (size_t i = 0; i < f.res.count; i++) {
        const propose_proposal_t *p = &f.res.proposals[i];
        if (label(p, "team") != NULL)
            ml = p;
        else
            plain = p;
    }
    assert_int_equal(f.res.count, 2);
    assert_non_null(ml);
    assert_non_null(plain);
    assert_string_equal(label(ml, "team"), "ml");
    assert_true(serves(&f, ml, "ml-1") && serves(&f, ml, "ml-2"));
    assert_false(serves(&f, ml, "not-ml")); /* it refuses team=ml */
    assert_true(serves(&f, plain, "not-ml"));
    assert_true(serves(&f, ml, "in-a") != serves(&f, plain, "in-a")); /* either holds */
    assert_int_equal(ml->pods_count + plain->pods_count, 4);
    /* No group of this config carries team=web or x, nor another zone. */
    assert_int_equal(f.res.unschedulable_count, 2);
    assert_string_equal(f.pods[f.res.unschedulable[0]].name, "default/web-or-x");
    assert_string_equal(f.pods[f.res.unschedulable[1]].name, "default/not-a");
    done(&f);
}

/* A zone the pods' affinity allows is chosen even when it is not the first allowed
 * zone: pods that allow b or c go to b, and with one that refuses b, all go to c. */
static void test_affinity_picks_zone(void **state) {
    (void)state;
    for (int with_not_b = 0; with_not_b <= 1; with_not_b++) {
        fixture_t f;
        load(&f, "n1-standard-2", "us-central1-a, us-central1-b, us-central1-c");
        add(&f, (pod_def_t){"b-or-c", "500m", "1Gi", NULL, NULL,
                            "topology.kubernetes.io/zone=us-central1-b|us-central1-c"});
        add(&f, (pod_def_t){"c-or-b", "500m", "1Gi", NULL, NULL,
                            "topology.kubernetes.io/zone=us-central1-c|us-central1-b"});
        if (with_not_b)
            add(&f, (pod_def_t){"not-b", "500m", "1Gi", NULL, NULL,
                                "topology.kubernetes.io/zone!=us-central1-b"});
        run(&f);
        assert_int_equal(f.res.unschedulable_count, 0);
        assert_int_equal(f.res.count, 1);
        assert_string_equal(f.res.proposals[0].zone,
                            with_not_b ? "us-central1-c" : "us-central1-b");
        assert_int_equal(f.res.proposals[0].pods_count, 2 + with_not_b);
        done(&f);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tc1_big_pod),
        cmocka_unit_test(test_tc2_selector),
        cmocka_unit_test(test_tc3_incompatible),
        cmocka_unit_test(test_tc4_compatible),
        cmocka_unit_test(test_tc5_toleration),
        cmocka_unit_test(test_tc6_two_tolerations),
        cmocka_unit_test(test_popularity_and_folding),
        cmocka_unit_test(test_well_known_labels),
        cmocka_unit_test(test_node_count),
        cmocka_unit_test(test_order_and_exists),
        cmocka_unit_test(test_empty_and_bad_input),
        cmocka_unit_test(test_invalid_names),
        cmocka_unit_test(test_affinity_beyond_pins),
        cmocka_unit_test(test_affinity_picks_zone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
