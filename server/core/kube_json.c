/* Kubernetes JSON into protobuf-c structs: see kube_json.h.
 *
 * The conversion is driven by the generated message descriptors, so it covers every
 * field proto/k8s/ declares and follows it when the subset grows. Messages are built
 * on the heap with the system allocator exactly as unpack would build them, so one
 * protobuf_c_message_free_unpacked releases a finished or a half-built object alike:
 * every allocation is attached to its parent before anything else can fail. */
#include "kube_json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "quantity.h"
#include "timestamp.h"

#define KJ_MEMBER(type, msg, offset) (*(type *)((char *)(msg) + (offset)))

typedef struct kj_ctx {
    kube_json_error_t *err;
    char path[256]; /* e.g. items[3].spec.containers[0].resources.requests.cpu */
    size_t len;
} kj_ctx_t;

static void kj__ctx_init(kj_ctx_t *c, kube_json_error_t *err, const char *path) {
    c->err = err;
    snprintf(c->path, sizeof(c->path), "%s", path != NULL ? path : "");
    c->len = strlen(c->path);
}

/* Append ".key" ("key" at the start) to the path; returns the length to pop back to. */
static size_t kj__push_key(kj_ctx_t *c, const char *key) {
    size_t old = c->len;
    if (old < sizeof(c->path) - 1) {
        snprintf(c->path + old, sizeof(c->path) - old, "%s%s", old > 0 ? "." : "", key);
        c->len = strlen(c->path);
    }
    return old;
}

static size_t kj__push_index(kj_ctx_t *c, size_t i) {
    size_t old = c->len;
    if (old < sizeof(c->path) - 1) {
        snprintf(c->path + old, sizeof(c->path) - old, "[%zu]", i);
        c->len = strlen(c->path);
    }
    return old;
}

static void kj__pop(kj_ctx_t *c, size_t old) {
    c->len = old;
    c->path[old] = '\0';
}

static int kj__fail(kj_ctx_t *c, const yaml_tree_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int kj__fail(kj_ctx_t *c, const yaml_tree_node_t *n, const char *fmt, ...) {
    char msg[248];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    c->err->line = n != NULL ? n->line : 0;
    c->err->column = n != NULL ? n->column : 0;
    if (c->len > 0)
        snprintf(c->err->message, sizeof(c->err->message), "%s: %s", c->path, msg);
    else
        snprintf(c->err->message, sizeof(c->err->message), "%s", msg);
    return FRUGAL_EINVAL;
}

static int kj__nomem(kj_ctx_t *c) {
    c->err->line = 0;
    c->err->column = 0;
    snprintf(c->err->message, sizeof(c->err->message), "out of memory");
    return FRUGAL_ENOMEM;
}

static const char *kj__type_name(const yaml_tree_node_t *n) {
    return yaml_tree_type_name(n->type);
}

static ProtobufCMessage *kj__new(const ProtobufCMessageDescriptor *desc) {
    ProtobufCMessage *m = malloc(desc->sizeof_message);
    if (m != NULL)
        protobuf_c_message_init(desc, m);
    return m;
}

/* The field types the Kubernetes subset uses; fields of other types are skipped. */
static bool kj__supported(const ProtobufCFieldDescriptor *f) {
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
        return false;
    switch (f->type) {
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BOOL:
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_MESSAGE:
        return true;
    default:
        return false;
    }
}

static size_t kj__elem_size(const ProtobufCFieldDescriptor *f) {
    switch (f->type) {
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_INT32:
        return sizeof(int32_t);
    case PROTOBUF_C_TYPE_INT64:
        return sizeof(int64_t);
    default:
        return sizeof(void *);
    }
}

/* map<string, X> fields are generated as repeated XxxEntry {key = 1; value = 2}. */
static bool kj__is_map_entry(const ProtobufCMessageDescriptor *d) {
    size_t n = strlen(d->short_name);
    return n > 5 && strcmp(d->short_name + n - 5, "Entry") == 0 && d->n_fields == 2 &&
           protobuf_c_message_descriptor_get_field_by_name(d, "key") != NULL &&
           protobuf_c_message_descriptor_get_field_by_name(d, "value") != NULL;
}

/* Check the quantities frugal computes with at their position, rather than failing
 * later in pod_effective_request without one. */
static int kj__check_quantity(kj_ctx_t *c, const yaml_tree_node_t *n, const char *resource,
                              const char *text) {
    int scale;
    if (resource == NULL)
        return 0;
    if (strcmp(resource, K8S_RESOURCE_CPU) == 0)
        scale = 3;
    else if (strcmp(resource, K8S_RESOURCE_MEMORY) == 0 ||
             strcmp(resource, K8S_RESOURCE_NVIDIA_GPU) == 0 ||
             strcmp(resource, K8S_RESOURCE_AMD_GPU) == 0)
        scale = 0;
    else
        return 0;
    int64_t v;
    frugal_err_t qerr;
    frugal_err_clear(&qerr);
    if (quantity_parse_scaled(text, strlen(text), scale, &v, &qerr) != 0)
        return kj__fail(c, n, "bad quantity \"%s\": %s", text, qerr.msg);
    if (v < 0)
        return kj__fail(c, n, "quantity \"%s\" must not be negative", text);
    return 0;
}

static int kj__message(kj_ctx_t *c, const yaml_tree_node_t *obj, ProtobufCMessage *msg);

static int kj__integer(kj_ctx_t *c, const yaml_tree_node_t *n, int64_t lo, int64_t hi,
                       int64_t *out) {
    const char *s = n->u.scalar.text;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (s[0] == '\0' || *end != '\0' || errno != 0 || v < lo || v > hi)
        return kj__fail(c, n, "expected an integer, got \"%s\"", s);
    *out = (int64_t)v;
    return 0;
}

/* A Time, which Kubernetes writes as an RFC 3339 string ("2026-01-02T15:04:05Z"). */
static int kj__time(kj_ctx_t *c, const yaml_tree_node_t *n, const ProtobufCFieldDescriptor *f,
                    void *slot) {
    int64_t seconds;
    if (n->type != YAML_TREE_SCALAR || !timestamp_parse_rfc3339(n->u.scalar.text, &seconds))
        return kj__fail(c, n, "expected an RFC 3339 time (2026-01-02T15:04:05Z)");
    k8s_time_t *t = (k8s_time_t *)kj__new(f->descriptor);
    if (t == NULL)
        return kj__nomem(c);
    t->has_seconds = true;
    t->seconds = seconds;
    *(k8s_time_t **)slot = t;
    return 0;
}

/* Convert n into the single value of field f stored at slot. resource: the map key
 * when n is the value of a map<string, Quantity> entry, else NULL. */
static int kj__set_one(kj_ctx_t *c, const yaml_tree_node_t *n, const ProtobufCFieldDescriptor *f,
                       void *slot, const char *resource) {
    bool quantity =
        f->type == PROTOBUF_C_TYPE_MESSAGE &&
        f->descriptor == &k8s__io__apimachinery__pkg__api__resource__quantity__descriptor;
    if (f->type == PROTOBUF_C_TYPE_MESSAGE &&
        f->descriptor == &k8s__io__apimachinery__pkg__apis__meta__v1__time__descriptor)
        return kj__time(c, n, f, slot);
    if (f->type == PROTOBUF_C_TYPE_MESSAGE && !quantity) {
        if (n->type != YAML_TREE_MAPPING)
            return kj__fail(c, n, "expected a mapping, got %s", kj__type_name(n));
        ProtobufCMessage *m = kj__new(f->descriptor);
        if (m == NULL)
            return kj__nomem(c);
        *(ProtobufCMessage **)slot = m;
        return kj__message(c, n, m);
    }
    if (n->type != YAML_TREE_SCALAR)
        return kj__fail(c, n, "expected a scalar, got %s", kj__type_name(n));
    const char *text = n->u.scalar.text;
    int64_t v = 0;
    int rc;
    switch (f->type) {
    case PROTOBUF_C_TYPE_STRING:
        if ((*(char **)slot = strdup(text)) == NULL)
            return kj__nomem(c);
        return 0;
    case PROTOBUF_C_TYPE_BOOL:
        if (strcmp(text, "true") == 0)
            *(protobuf_c_boolean *)slot = 1;
        else if (strcmp(text, "false") == 0)
            *(protobuf_c_boolean *)slot = 0;
        else
            return kj__fail(c, n, "expected true or false, got \"%s\"", text);
        return 0;
    case PROTOBUF_C_TYPE_INT32:
        rc = kj__integer(c, n, INT32_MIN, INT32_MAX, &v);
        if (rc == 0)
            *(int32_t *)slot = (int32_t)v;
        return rc;
    case PROTOBUF_C_TYPE_INT64:
        rc = kj__integer(c, n, INT64_MIN, INT64_MAX, &v);
        if (rc == 0)
            *(int64_t *)slot = v;
        return rc;
    default: /* a Quantity: "500m" or 1 */
        break;
    }
    rc = kj__check_quantity(c, n, resource, text);
    if (rc != 0)
        return rc;
    k8s_quantity_t *q = (k8s_quantity_t *)kj__new(f->descriptor);
    if (q == NULL)
        return kj__nomem(c);
    *(k8s_quantity_t **)slot = q;
    if ((q->string = strdup(text)) == NULL)
        return kj__nomem(c);
    return 0;
}

static int kj__repeated(kj_ctx_t *c, const yaml_tree_node_t *n, const ProtobufCFieldDescriptor *f,
                        ProtobufCMessage *msg) {
    if (n->type != YAML_TREE_SEQUENCE)
        return kj__fail(c, n, "expected a sequence, got %s", kj__type_name(n));
    size_t count = n->u.sequence.count, size = kj__elem_size(f);
    if (count == 0)
        return 0;
    char *arr = calloc(count, size);
    if (arr == NULL)
        return kj__nomem(c);
    /* Attached whole at once: unset slots are NULL/0, which free_unpacked skips. */
    KJ_MEMBER(void *, msg, f->offset) = arr;
    KJ_MEMBER(size_t, msg, f->quantifier_offset) = count;
    for (size_t i = 0; i < count; i++) {
        const yaml_tree_node_t *item = n->u.sequence.items[i];
        size_t old = kj__push_index(c, i);
        int rc = yaml_tree_is_null(item) ? kj__fail(c, item, "null item")
                                         : kj__set_one(c, item, f, arr + i * size, NULL);
        kj__pop(c, old);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int kj__map(kj_ctx_t *c, const yaml_tree_node_t *n, const ProtobufCFieldDescriptor *f,
                   ProtobufCMessage *msg) {
    if (n->type != YAML_TREE_MAPPING)
        return kj__fail(c, n, "expected a mapping, got %s", kj__type_name(n));
    const ProtobufCMessageDescriptor *ed = f->descriptor;
    const ProtobufCFieldDescriptor *kf = protobuf_c_message_descriptor_get_field_by_name(ed, "key");
    const ProtobufCFieldDescriptor *vf =
        protobuf_c_message_descriptor_get_field_by_name(ed, "value");
    size_t count = n->u.mapping.count;
    if (count == 0)
        return 0;
    ProtobufCMessage **arr = calloc(count, sizeof(*arr));
    if (arr == NULL)
        return kj__nomem(c);
    KJ_MEMBER(void *, msg, f->offset) = arr;
    size_t *n_out = &KJ_MEMBER(size_t, msg, f->quantifier_offset);
    for (size_t i = 0; i < count; i++) {
        const yaml_tree_pair_t *p = &n->u.mapping.items[i];
        if (p->key->type != YAML_TREE_SCALAR)
            return kj__fail(c, p->key, "expected a scalar key, got %s", kj__type_name(p->key));
        if (yaml_tree_is_null(p->value))
            continue;
        const char *key = p->key->u.scalar.text;
        ProtobufCMessage *entry = kj__new(ed);
        if (entry == NULL)
            return kj__nomem(c);
        arr[(*n_out)++] = entry;
        if ((KJ_MEMBER(char *, entry, kf->offset) = strdup(key)) == NULL)
            return kj__nomem(c);
        size_t old = kj__push_key(c, key);
        int rc = kj__set_one(c, p->value, vf, (char *)entry + vf->offset, key);
        kj__pop(c, old);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* The value of key in a mapping; of duplicate keys the last wins, as in Go's decoder. */
static const yaml_tree_node_t *kj__get(const yaml_tree_node_t *map, const char *key) {
    for (size_t i = map->u.mapping.count; i-- > 0;) {
        const yaml_tree_node_t *k = map->u.mapping.items[i].key;
        if (k->type == YAML_TREE_SCALAR && strcmp(k->u.scalar.text, key) == 0)
            return map->u.mapping.items[i].value;
    }
    return NULL;
}

static int kj__message(kj_ctx_t *c, const yaml_tree_node_t *obj, ProtobufCMessage *msg) {
    const ProtobufCMessageDescriptor *d = msg->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        const yaml_tree_node_t *v = kj__get(obj, f->name);
        if (v == NULL || yaml_tree_is_null(v) || !kj__supported(f))
            continue;
        size_t old = kj__push_key(c, f->name);
        int rc;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            if (f->type == PROTOBUF_C_TYPE_MESSAGE && kj__is_map_entry(f->descriptor))
                rc = kj__map(c, v, f, msg);
            else
                rc = kj__repeated(c, v, f, msg);
        } else {
            rc = kj__set_one(c, v, f, (char *)msg + f->offset, NULL);
            /* proto2 optional scalars carry a has_ flag. */
            if (rc == 0 && f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset != 0 &&
                f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE)
                KJ_MEMBER(protobuf_c_boolean, msg, f->quantifier_offset) = 1;
        }
        kj__pop(c, old);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static const char *kj__scalar(const yaml_tree_node_t *map, const char *key) {
    const yaml_tree_node_t *v = yaml_tree_mapping_get(map, key);
    return v != NULL && v->type == YAML_TREE_SCALAR && !yaml_tree_is_null(v) ? v->u.scalar.text
                                                                             : NULL;
}

/* One object of desc's kind; a `kind` that names another is refused (hint, when not
 * NULL, says where such objects come from). */
static int kj__object(const yaml_tree_node_t *obj, const char *path,
                      const ProtobufCMessageDescriptor *desc, const char *hint,
                      ProtobufCMessage **out, kube_json_error_t *err) {
    kj_ctx_t c;
    kj__ctx_init(&c, err, path);
    *out = NULL;
    if (obj == NULL || obj->type != YAML_TREE_MAPPING)
        return kj__fail(&c, obj, "expected a mapping (a %s), got %s", desc->short_name,
                        obj != NULL ? kj__type_name(obj) : "nothing");
    const char *kind = kj__scalar(obj, "kind");
    if (kind != NULL && strcmp(kind, desc->short_name) != 0) {
        kj__push_key(&c, "kind");
        return kj__fail(&c, yaml_tree_mapping_get(obj, "kind"), "%s, expected %s%s%s%s", kind,
                        desc->short_name, hint ? " (" : "", hint ? hint : "", hint ? ")" : "");
    }
    ProtobufCMessage *m = kj__new(desc);
    if (m == NULL)
        return kj__nomem(&c);
    int rc = kj__message(&c, obj, m);
    if (rc != 0) {
        protobuf_c_message_free_unpacked(m, NULL);
        return rc;
    }
    *out = m;
    return 0;
}

int kube_json_pod_from_tree(const yaml_tree_node_t *obj, const char *path, k8s_pod_t **out,
                            kube_json_error_t *err) {
    ProtobufCMessage *m;
    int rc = kj__object(obj, path, &k8s__io__api__core__v1__pod__descriptor, NULL, &m, err);
    *out = (k8s_pod_t *)m;
    return rc;
}

int kube_json_node_from_tree(const yaml_tree_node_t *obj, const char *path, k8s_node_t **out,
                             kube_json_error_t *err) {
    ProtobufCMessage *m;
    int rc = kj__object(obj, path, &k8s__io__api__core__v1__node__descriptor, NULL, &m, err);
    *out = (k8s_node_t *)m;
    return rc;
}

static void kj__free_items(ProtobufCMessage **items, size_t count) {
    for (size_t i = 0; i < count; i++)
        protobuf_c_message_free_unpacked(items[i], NULL);
    free(items);
}

/* A v1 List of objects of kind (desc), or one such object, into items[0..count). */
static int kj__list(const char *text, size_t len, const ProtobufCMessageDescriptor *desc,
                    const char *kind, const char *command, ProtobufCMessage ***items_out,
                    size_t *count_out, kube_json_error_t *err) {
    kj_ctx_t c;
    kj__ctx_init(&c, err, NULL);
    *items_out = NULL;
    *count_out = 0;
    yaml_tree_node_t *root = NULL;
    yaml_tree_error_t yerr;
    if (yaml_tree_load(text, len, &root, &yerr) != 0) {
        err->line = yerr.line;
        err->column = yerr.column;
        yaml_tree_error_text(&yerr, false, err->message, sizeof(err->message));
        return FRUGAL_EINVAL;
    }
    int rc = 0;
    ProtobufCMessage **items = NULL;
    size_t count = 0;
    const yaml_tree_node_t *list = NULL, *single = NULL;
    if (root == NULL) {
        err->line = 1;
        err->column = 1;
        snprintf(err->message, sizeof(err->message),
                 "empty document: expected a v1 List of %ss (%s)", kind, command);
        rc = FRUGAL_EINVAL;
        goto done;
    }
    if (root->type != YAML_TREE_MAPPING) {
        rc = kj__fail(&c, root, "expected a v1 List of %ss (%s), got %s", kind, command,
                      kj__type_name(root));
        goto done;
    }
    list = yaml_tree_mapping_get(root, "items");
    const char *k = kj__scalar(root, "kind");
    /* "List" or "PodList" / "NodeList"; a list without a kind is taken as one. */
    bool list_kind =
        k != NULL && (strcmp(k, "List") == 0 || (strncmp(k, kind, strlen(kind)) == 0 &&
                                                 strcmp(k + strlen(kind), "List") == 0));
    if (list == NULL) {
        if (k == NULL || strcmp(k, kind) != 0) {
            rc = kj__fail(&c, root, "expected a v1 List of %ss (%s) or a %s, got %s%s%s", kind,
                          command, kind, k != NULL ? "kind " : "a mapping without items",
                          k != NULL ? k : "", list_kind ? " without items" : "");
            goto done;
        }
        single = root;
    } else if (k != NULL && !list_kind) {
        rc = kj__fail(&c, root, "expected a v1 List of %ss (%s), got kind %s", kind, command, k);
        goto done;
    } else if (!yaml_tree_is_null(list) && list->type != YAML_TREE_SEQUENCE) {
        kj__push_key(&c, "items");
        rc = kj__fail(&c, list, "expected a sequence, got %s", kj__type_name(list));
        goto done;
    }
    size_t n = single != NULL ? 1 : yaml_tree_is_null(list) ? 0 : list->u.sequence.count;
    if (n > 0 && (items = calloc(n, sizeof(*items))) == NULL) {
        rc = kj__nomem(&c);
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        const yaml_tree_node_t *item = single != NULL ? single : list->u.sequence.items[i];
        char path[32] = "";
        if (single == NULL)
            snprintf(path, sizeof(path), "items[%zu]", i);
        rc = kj__object(item, path, desc, command, &items[i], err);
        if (rc != 0)
            goto done;
        count++;
    }
done:
    yaml_tree_free(root);
    if (rc != 0) {
        kj__free_items(items, count);
        return rc;
    }
    *items_out = items;
    *count_out = count;
    return 0;
}

int kube_json_parse_pods(const char *text, size_t len, kube_pod_list_t *out,
                         kube_json_error_t *err) {
    ProtobufCMessage **items;
    size_t count;
    int rc = kj__list(text, len, &k8s__io__api__core__v1__pod__descriptor, "Pod",
                      "kubectl get pods -A -o json", &items, &count, err);
    out->items = (k8s_pod_t **)items;
    out->count = count;
    return rc;
}

int kube_json_parse_nodes(const char *text, size_t len, kube_node_list_t *out,
                          kube_json_error_t *err) {
    ProtobufCMessage **items;
    size_t count;
    int rc = kj__list(text, len, &k8s__io__api__core__v1__node__descriptor, "Node",
                      "kubectl get nodes -o json", &items, &count, err);
    out->items = (k8s_node_t **)items;
    out->count = count;
    return rc;
}

void kube_pod_list_clear(kube_pod_list_t *list) {
    kj__free_items((ProtobufCMessage **)list->items, list->count);
    list->items = NULL;
    list->count = 0;
}

void kube_node_list_clear(kube_node_list_t *list) {
    kj__free_items((ProtobufCMessage **)list->items, list->count);
    list->items = NULL;
    list->count = 0;
}

bool kube_pod_is_pending(const k8s_pod_t *pod) {
    const char *phase = pod->status != NULL ? pod->status->phase : NULL;
    const char *node = pod->spec != NULL ? pod->spec->nodename : NULL;
    /* Gated pods wait for their gates, not for a node, and deleted ones go: CA scales up
     * for neither. */
    bool gated = pod->spec != NULL && pod->spec->n_schedulinggates > 0;
    bool deleted = pod->metadata != NULL && pod->metadata->deletiontimestamp != NULL;
    return phase != NULL && strcmp(phase, "Pending") == 0 && (node == NULL || node[0] == '\0') &&
           !gated && !deleted;
}

const char *kube_pod_controller_kind(const k8s_pod_t *pod) {
    const k8s_object_meta_t *m = pod->metadata;
    if (m == NULL)
        return NULL;
    for (size_t i = 0; i < m->n_ownerreferences; i++) {
        const K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__OwnerReference *o = m->ownerreferences[i];
        if (o->has_controller && o->controller)
            return o->kind;
    }
    return NULL;
}
