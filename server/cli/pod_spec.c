/* See pod_spec.h. */
#include <stdbool.h>
#include <stdlib.h>

#include "k8s.h"
#include "pod_spec.h"
#include "quantity.h"

typedef K8s__Io__Api__Core__V1__ResourceRequirements__RequestsEntry pod_spec_request_t;
typedef K8s__Io__Api__Core__V1__PodSpec__NodeSelectorEntry pod_spec_selector_t;

int pod_spec_pack(const pod_spec_t *spec, uint8_t **out, size_t *len, frugal_err_t *err) {
    /* Each resource with the unit its value is checked in: CPU in milli-cores, memory
     * in bytes, GPUs whole. */
    const struct {
        const char *field, *resource, *value;
        bool milli;
    } res[3] = {{"cpu", K8S_RESOURCE_CPU, spec->cpu, true},
                {"memory", K8S_RESOURCE_MEMORY, spec->memory, false},
                {"gpu", K8S_RESOURCE_NVIDIA_GPU, spec->gpu, false}};
    k8s_quantity_t qty[3];
    pod_spec_request_t req[3], *req_ptrs[3];
    size_t nreq = 0;
    for (size_t i = 0; i < 3; i++) {
        const char *v = res[i].value;
        if (v == NULL)
            continue;
        int64_t parsed;
        frugal_err_t qerr;
        if ((res[i].milli ? quantity_parse_milli(v, &parsed, &qerr)
                          : quantity_parse_value(v, &parsed, &qerr)) != 0)
            return frugal_err_set(err, FRUGAL_EINVAL, "%s: invalid quantity \"%s\"", res[i].field,
                                  v);
        k8s_quantity_t q = K8S__IO__APIMACHINERY__PKG__API__RESOURCE__QUANTITY__INIT;
        pod_spec_request_t e = K8S__IO__API__CORE__V1__RESOURCE_REQUIREMENTS__REQUESTS_ENTRY__INIT;
        qty[nreq] = q;
        qty[nreq].string = (char *)v;
        req[nreq] = e;
        req[nreq].key = (char *)res[i].resource;
        req[nreq].value = &qty[nreq];
        req_ptrs[nreq] = &req[nreq];
        nreq++;
    }
    k8s_resource_requirements_t rr = K8S__IO__API__CORE__V1__RESOURCE_REQUIREMENTS__INIT;
    rr.n_requests = nreq;
    rr.requests = req_ptrs;
    k8s_container_t container = K8S__IO__API__CORE__V1__CONTAINER__INIT;
    container.name = "main";
    container.resources = &rr;
    k8s_container_t *containers[1] = {&container};
    k8s_pod_spec_t ps = K8S__IO__API__CORE__V1__POD_SPEC__INIT;
    ps.n_containers = 1;
    ps.containers = containers;

    int rc = FRUGAL_ENOMEM;
    size_t nsel = spec->node_selector.count, ntol = spec->n_tolerations;
    /* One more than needed so that no count asks malloc for zero bytes. */
    pod_spec_selector_t *sel = malloc((nsel + 1) * sizeof(*sel));
    if (sel == NULL)
        goto fail_sel;
    pod_spec_selector_t **sel_ptrs = malloc((nsel + 1) * sizeof(*sel_ptrs));
    if (sel_ptrs == NULL)
        goto fail_sel_ptrs;
    k8s_toleration_t *tol = malloc((ntol + 1) * sizeof(*tol));
    if (tol == NULL)
        goto fail_tol;
    k8s_toleration_t **tol_ptrs = malloc((ntol + 1) * sizeof(*tol_ptrs));
    if (tol_ptrs == NULL)
        goto fail_tol_ptrs;
    for (size_t i = 0; i < nsel; i++) {
        pod_spec_selector_t e = K8S__IO__API__CORE__V1__POD_SPEC__NODE_SELECTOR_ENTRY__INIT;
        sel[i] = e;
        sel[i].key = spec->node_selector.items[i].key;
        sel[i].value = spec->node_selector.items[i].value;
        sel_ptrs[i] = &sel[i];
    }
    ps.n_nodeselector = nsel;
    ps.nodeselector = sel_ptrs;
    for (size_t i = 0; i < ntol; i++) {
        const pod_toleration_t *t = &spec->tolerations[i];
        k8s_toleration_t e = K8S__IO__API__CORE__V1__TOLERATION__INIT;
        tol[i] = e;
        tol[i].key = (char *)t->key;
        tol[i].operator_ = (char *)t->operator_;
        tol[i].value = (char *)t->value;
        tol[i].effect = (char *)t->effect;
        tol_ptrs[i] = &tol[i];
    }
    ps.n_tolerations = ntol;
    ps.tolerations = tol_ptrs;

    k8s_object_meta_t meta = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__INIT;
    meta.name = (char *)spec->name;
    meta.namespace_ = (char *)(spec->namespace_ != NULL ? spec->namespace_ : "default");
    k8s_time_t created = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__TIME__INIT;
    if (spec->created_s > 0) {
        created.has_seconds = true;
        created.seconds = spec->created_s;
        meta.creationtimestamp = &created;
    }
    k8s_owner_reference_t owner = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OWNER_REFERENCE__INIT;
    k8s_owner_reference_t *owners[1] = {&owner};
    if (spec->owner_kind != NULL) {
        owner.kind = (char *)spec->owner_kind;
        owner.name = "ctl";
        owner.has_controller = true;
        owner.controller = true;
        meta.n_ownerreferences = 1;
        meta.ownerreferences = owners;
    }
    k8s_pod_t pod = K8S__IO__API__CORE__V1__POD__INIT;
    pod.metadata = &meta;
    pod.spec = &ps;
    size_t n = k8s__io__api__core__v1__pod__get_packed_size(&pod);
    uint8_t *buf = malloc(n + 1);
    if (buf == NULL)
        goto fail_buf;
    k8s__io__api__core__v1__pod__pack(&pod, buf);
    *out = buf;
    *len = n;
    rc = 0;
fail_buf:
    free(tol_ptrs);
fail_tol_ptrs:
    free(tol);
fail_tol:
    free(sel_ptrs);
fail_sel_ptrs:
    free(sel);
fail_sel:
    if (rc != 0)
        frugal_err_set(err, rc, "out of memory packing a pod");
    return rc;
}
