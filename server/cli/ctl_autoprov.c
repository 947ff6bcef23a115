/* `frugal ctl` verbs of frugal.v1.Autoprovisioning (see ctl.h): machine-types,
 * new-node-group, create, delete, group-info, limits and propose. Tables by default,
 * YAML with -o yaml. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ctl.h"
#include "frugal.pb-c.h"
#include "k8s.h"
#include "pod_file.h"
#include "pod_spec.h"
#include "wire_names.h"
#include "quantity.h"
#include "yaml_tree.h"

/* ------------------------------------------------------------------------------------
 * Output helpers
 * ---------------------------------------------------------------------------------- */

static int ctl_ap__usage(const char *verb, const char *usage) {
    fprintf(stderr, "usage: frugal ctl [OPTIONS] %s %s\n", verb, usage);
    return 2;
}

static const char *ctl_ap__cores(int64_t milli, char *buf, size_t size) {
    if (milli % 1000 == 0)
        snprintf(buf, size, "%" PRId64, milli / 1000);
    else
        snprintf(buf, size, "%.3g", (double)milli / 1000.0);
    return buf;
}

/* "k=v,k=v" of a label map. */
static char *ctl_ap__join_labels(size_t n, char *const *keys, char *const *values) {
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(keys[i]) + strlen(values[i]) + 2;
    char *s = cli_xcalloc(len, 1);
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            strcat(s, ",");
        strcat(s, keys[i]);
        strcat(s, "=");
        strcat(s, values[i]);
    }
    return s;
}

static char *ctl_ap__join_taints(size_t n, AP(Taint) *const *taints) {
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(taints[i]->key) + strlen(taints[i]->value) + strlen(taints[i]->effect) + 3;
    char *s = cli_xcalloc(len, 1);
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            strcat(s, ",");
        strcat(s, taints[i]->key);
        if (taints[i]->value[0] != '\0') {
            strcat(s, "=");
            strcat(s, taints[i]->value);
        }
        strcat(s, ":");
        strcat(s, taints[i]->effect);
    }
    return s;
}

static void ctl_ap__yaml_taints(int indent, size_t n, AP(Taint) *const *taints) {
    if (n == 0) {
        printf("%*staints: []\n", indent, "");
        return;
    }
    printf("%*staints:\n", indent, "");
    for (size_t i = 0; i < n; i++) {
        cli_yaml_item_kv(indent, "key", taints[i]->key);
        cli_yaml_kv(indent + 2, "value", taints[i]->value);
        cli_yaml_kv(indent + 2, "effect", taints[i]->effect);
    }
}

/* ------------------------------------------------------------------------------------
 * machine-types, limits
 * ---------------------------------------------------------------------------------- */

static int ctl_ap_machine_types(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    if (argc != 1)
        return ctl_ap__usage(argv[0], "");
    AP(GetAvailableMachineTypesRequest) req = AP_INIT(GET_AVAILABLE_MACHINE_TYPES_REQUEST);
    AP(GetAvailableMachineTypesResponse) *resp = NULL;
    if (ctl_call(client, WIRE_AP_GET_AVAILABLE_MACHINE_TYPES, &req.base,
                 AP_DESC(get_available_machine_types_response), (ProtobufCMessage **)&resp) != 0)
        return 1;
    char cpu[32], mem[32], gpu[32], price[32];
    if (format == CTL_FORMAT_YAML) {
        printf("machine_types:%s\n", resp->n_machine_types == 0 ? " []" : "");
        for (size_t i = 0; i < resp->n_machine_types; i++) {
            const AP(MachineType) *t = resp->machine_types[i];
            cli_yaml_item_kv(0, "name", t->name);
            printf("  cpu_milli: %" PRId64 "\n  memory_bytes: %" PRId64 "\n  gpu: %d\n",
                   t->cpu_milli, t->memory_bytes, (int)t->gpu);
            if (t->gpu_type[0] != '\0')
                cli_yaml_kv(2, "gpu_type", t->gpu_type);
            printf("  price: %.6f\n", t->price);
        }
    } else {
        cli_table_t t = {5, 0, 0, NULL};
        cli_table_row(&t, "NAME", "CPU", "MEMORY", "GPU", "PRICE/H");
        for (size_t i = 0; i < resp->n_machine_types; i++) {
            const AP(MachineType) *m = resp->machine_types[i];
            snprintf(gpu, sizeof(gpu), "%d%s%s", (int)m->gpu, m->gpu_type[0] ? " " : "",
                     m->gpu_type);
            snprintf(price, sizeof(price), "%.6f", m->price);
            cli_table_row(&t, m->name, ctl_ap__cores(m->cpu_milli, cpu, sizeof(cpu)),
                          quantity_format_bytes(m->memory_bytes, mem, sizeof(mem)), gpu, price);
        }
        cli_table_flush(&t, 0);
    }
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return 0;
}

static int ctl_ap_limits(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    if (argc != 1)
        return ctl_ap__usage(argv[0], "");
    AP(GetResourceLimiterRequest) req = AP_INIT(GET_RESOURCE_LIMITER_REQUEST);
    AP(GetResourceLimiterResponse) *resp = NULL;
    if (ctl_call(client, WIRE_AP_GET_RESOURCE_LIMITER, &req.base,
                 AP_DESC(get_resource_limiter_response), (ProtobufCMessage **)&resp) != 0)
        return 1;
    char min[32], max[32];
    if (format == CTL_FORMAT_YAML) {
        printf("limits:\n");
        for (size_t i = 0; i < resp->n_limits; i++) {
            const AP(ResourceLimit) *l = resp->limits[i];
            cli_yaml_item_kv(0, "resource", l->resource);
            printf("  min: %" PRId64 "\n  max: %" PRId64 "\n", l->min, l->max);
        }
    } else {
        cli_table_t t = {3, 0, 0, NULL};
        cli_table_row(&t, "RESOURCE", "MIN", "MAX");
        for (size_t i = 0; i < resp->n_limits; i++) {
            const AP(ResourceLimit) *l = resp->limits[i];
            bool memory = strcmp(l->resource, "memory") == 0;
            if (memory)
                quantity_format_bytes(l->min, min, sizeof(min));
            else
                snprintf(min, sizeof(min), "%" PRId64, l->min);
            if (l->max == INT64_MAX)
                snprintf(max, sizeof(max), "unlimited");
            else if (memory)
                quantity_format_bytes(l->max, max, sizeof(max));
            else
                snprintf(max, sizeof(max), "%" PRId64, l->max);
            cli_table_row(&t, l->resource, min, max);
        }
        cli_table_flush(&t, 0);
    }
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return 0;
}

/* ------------------------------------------------------------------------------------
 * Group verbs
 * ---------------------------------------------------------------------------------- */

static void ctl_ap__print_group(ctl_format_t format, const AP(GroupInfo) * g) {
    if (g == NULL)
        return;
    char **keys = cli_xcalloc(g->n_labels, sizeof(*keys));
    char **values = cli_xcalloc(g->n_labels, sizeof(*values));
    for (size_t i = 0; i < g->n_labels; i++) {
        keys[i] = g->labels[i]->key;
        values[i] = g->labels[i]->value;
    }
    if (format == CTL_FORMAT_YAML) {
        cli_yaml_kv(0, "id", g->id);
        printf("exists: %s\nautoprovisioned: %s\n", g->exists ? "true" : "false",
               g->autoprovisioned ? "true" : "false");
        cli_yaml_kv(0, "machine_type", g->machine_type);
        cli_yaml_kv(0, "zone", g->zone);
        printf("labels:%s\n", g->n_labels == 0 ? " {}" : "");
        for (size_t i = 0; i < g->n_labels; i++)
            cli_yaml_pair(2, keys[i], values[i]);
        ctl_ap__yaml_taints(0, g->n_taints, g->taints);
        printf("min_size: %d\nmax_size: %d\ntarget_size: %d\n", (int)g->min_size, (int)g->max_size,
               (int)g->target_size);
    } else {
        char *labels = ctl_ap__join_labels(g->n_labels, keys, values);
        char *taints = ctl_ap__join_taints(g->n_taints, g->taints);
        char min[16], max[16], target[16];
        snprintf(min, sizeof(min), "%d", (int)g->min_size);
        snprintf(max, sizeof(max), "%d", (int)g->max_size);
        snprintf(target, sizeof(target), "%d", (int)g->target_size);
        cli_table_t t = {10, 0, 0, NULL};
        cli_table_row(&t, "ID", "EXISTS", "AUTOPROVISIONED", "MACHINE TYPE", "ZONE", "MIN", "MAX",
                      "TARGET", "LABELS", "TAINTS");
        cli_table_row(&t, g->id, g->exists ? "yes" : "no", g->autoprovisioned ? "yes" : "no",
                      g->machine_type, g->zone, min, max, target, labels, taints);
        cli_table_flush(&t, 0);
        free(labels);
        free(taints);
    }
    free(keys);
    free(values);
}

typedef struct ctl_ap_kvs {
    AP(NewNodeGroupRequest__LabelsEntry) * items;
    AP(NewNodeGroupRequest__LabelsEntry) * *ptrs;
    size_t count;
} ctl_ap_kvs_t;

/* Split "k=v" (sep '=') into a new entry; false when there is no separator. The three
 * map entry types of NewNodeGroupRequest share one layout; each gets its descriptor. */
static bool ctl_ap__kv(ctl_ap_kvs_t *l, const ProtobufCMessageDescriptor *desc, char *arg) {
    size_t key_len;
    const char *value = cli_split_kv(arg, &key_len);
    if (value == NULL)
        return false;
    arg[key_len] = '\0';
    AP(NewNodeGroupRequest__LabelsEntry) *e = &l->items[l->count];
    protobuf_c_message_init(desc, e);
    e->key = arg;
    e->value = arg + key_len + 1;
    l->ptrs[l->count] = e;
    l->count++;
    return true;
}

/* "key[=value]:Effect" into a taint. */
static bool ctl_ap__taint(AP(Taint) * t, char *arg) {
    AP(Taint) init = AP_INIT(TAINT);
    *t = init;
    char *colon = strrchr(arg, ':');
    if (colon == NULL || colon == arg || colon[1] == '\0')
        return false;
    *colon = '\0';
    t->effect = colon + 1;
    char *eq = strchr(arg, '=');
    if (eq != NULL) {
        *eq = '\0';
        t->value = eq + 1;
    }
    t->key = arg;
    return t->key[0] != '\0';
}

static const char *const ctl_ap_new_usage =
    "--machine-type T [--label k=v]... [--system-label k=v]... [--taint k=v:Effect]... "
    "[--extra-resource name=qty]... [--zone Z]";

static int ctl_ap_new_node_group(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    AP(NewNodeGroupRequest) req = AP_INIT(NEW_NODE_GROUP_REQUEST);
    size_t max = (size_t)argc;
    ctl_ap_kvs_t labels = {cli_xcalloc(max, sizeof(*labels.items)),
                           cli_xcalloc(max, sizeof(*labels.ptrs)), 0};
    ctl_ap_kvs_t system = {cli_xcalloc(max, sizeof(*system.items)),
                           cli_xcalloc(max, sizeof(*system.ptrs)), 0};
    ctl_ap_kvs_t extra = {cli_xcalloc(max, sizeof(*extra.items)),
                          cli_xcalloc(max, sizeof(*extra.ptrs)), 0};
    AP(Taint) *taints = cli_xcalloc(max, sizeof(*taints));
    AP(Taint) **taint_ptrs = cli_xcalloc(max, sizeof(*taint_ptrs));
    size_t ntaints = 0;
    int rc = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *opt = argv[i];
        if (i + 1 >= argc) {
            fprintf(stderr, "frugal ctl: %s needs a value\n", opt);
            rc = 2;
            break;
        }
        char *val = argv[++i];
        bool ok = true;
        if (strcmp(opt, "--machine-type") == 0)
            req.machine_type = val;
        else if (strcmp(opt, "--zone") == 0)
            req.zone = val;
        else if (strcmp(opt, "--label") == 0)
            ok = ctl_ap__kv(&labels, AP_DESC(new_node_group_request__labels_entry), val);
        else if (strcmp(opt, "--system-label") == 0)
            ok = ctl_ap__kv(&system, AP_DESC(new_node_group_request__system_labels_entry), val);
        else if (strcmp(opt, "--extra-resource") == 0)
            ok = ctl_ap__kv(&extra, AP_DESC(new_node_group_request__extra_resources_entry), val);
        else if (strcmp(opt, "--taint") == 0) {
            ok = ctl_ap__taint(&taints[ntaints], val);
            if (ok) {
                taint_ptrs[ntaints] = &taints[ntaints];
                ntaints++;
            }
        } else {
            fprintf(stderr, "frugal ctl: %s: unknown option %s\n", argv[0], opt);
            rc = 2;
            break;
        }
        if (!ok) {
            fprintf(stderr, "frugal ctl: %s: malformed value \"%s\" for %s\n", argv[0], val, opt);
            rc = 2;
        }
    }
    if (rc == 0 && req.machine_type[0] == '\0') {
        fprintf(stderr, "frugal ctl: %s: --machine-type is required\n", argv[0]);
        rc = 2;
    }
    if (rc == 2) {
        ctl_ap__usage(argv[0], ctl_ap_new_usage);
        goto out;
    }
    req.n_labels = labels.count;
    req.labels = labels.ptrs;
    req.n_system_labels = system.count;
    req.system_labels = (AP(NewNodeGroupRequest__SystemLabelsEntry) **)system.ptrs;
    req.n_extra_resources = extra.count;
    req.extra_resources = (AP(NewNodeGroupRequest__ExtraResourcesEntry) **)extra.ptrs;
    req.n_taints = ntaints;
    req.taints = taint_ptrs;
    AP(NewNodeGroupResponse) *resp = NULL;
    rc = ctl_call(client, WIRE_AP_NEW_NODE_GROUP, &req.base, AP_DESC(new_node_group_response),
                  (ProtobufCMessage **)&resp);
    if (rc == 0) {
        ctl_ap__print_group(format, resp->group);
        protobuf_c_message_free_unpacked(&resp->base, NULL);
    }
out:
    free(labels.items);
    free(labels.ptrs);
    free(system.items);
    free(system.ptrs);
    free(extra.items);
    free(extra.ptrs);
    free(taints);
    free(taint_ptrs);
    return rc;
}

static int ctl_ap_create(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    if (argc != 2)
        return ctl_ap__usage(argv[0], "ID");
    AP(NodeGroupCreateRequest) req = AP_INIT(NODE_GROUP_CREATE_REQUEST);
    req.id = argv[1];
    AP(NodeGroupCreateResponse) *resp = NULL;
    if (ctl_call(client, WIRE_AP_NODE_GROUP_CREATE, &req.base, AP_DESC(node_group_create_response),
                 (ProtobufCMessage **)&resp) != 0)
        return 1;
    ctl_ap__print_group(format, resp->group);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return 0;
}

static int ctl_ap_delete(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    if (argc != 2)
        return ctl_ap__usage(argv[0], "ID");
    AP(NodeGroupDeleteRequest) req = AP_INIT(NODE_GROUP_DELETE_REQUEST);
    req.id = argv[1];
    AP(NodeGroupDeleteResponse) *resp = NULL;
    if (ctl_call(client, WIRE_AP_NODE_GROUP_DELETE, &req.base, AP_DESC(node_group_delete_response),
                 (ProtobufCMessage **)&resp) != 0)
        return 1;
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    if (format == CTL_FORMAT_YAML)
        cli_yaml_kv(0, "deleted", argv[1]);
    else
        printf("deleted %s\n", argv[1]);
    return 0;
}

static int ctl_ap_group_info(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    if (argc != 2)
        return ctl_ap__usage(argv[0], "ID");
    AP(NodeGroupInfoRequest) req = AP_INIT(NODE_GROUP_INFO_REQUEST);
    req.id = argv[1];
    AP(NodeGroupInfoResponse) *resp = NULL;
    if (ctl_call(client, WIRE_AP_NODE_GROUP_INFO, &req.base, AP_DESC(node_group_info_response),
                 (ProtobufCMessage **)&resp) != 0)
        return 1;
    ctl_ap__print_group(format, resp->group);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return 0;
}

/* ------------------------------------------------------------------------------------
 * propose PODS_FILE
 *
 * The file is a list of pod entries (pod_file.h), or a mapping with only `pods:`;
 * an entry with count N > 1 becomes N v1.Pods named name-0 .. name-(N-1), an unnamed
 * entry is named pod-<index>.
 * ---------------------------------------------------------------------------------- */

typedef struct ctl_ap_podfile {
    ProtobufCBinaryData *pods;
    size_t count;
} ctl_ap_podfile_t;

/* Read and pack the pods of path into *f; 0, or 2 after printing the error. */
static int ctl_ap__load_pods(const char *path, ctl_ap_podfile_t *f) {
    static const char *const root_keys[] = {"pods", NULL};
    yaml_tree_node_t *root = NULL;
    pod_file_pods_t entries = {NULL, 0};
    frugal_err_t err;
    frugal_err_clear(&err);
    int rc = pod_file_load(path, &root, &err);
    const yaml_tree_node_t *list = root;
    if (rc == 0 && root != NULL && root->type == YAML_TREE_MAPPING) {
        rc = pod_file_check_keys(path, root, root_keys, &err);
        list = yaml_tree_mapping_get(root, "pods");
    }
    if (rc == 0 && (list == NULL || list->type != YAML_TREE_SEQUENCE))
        rc = pod_file_error(&err, path, list != NULL ? list : root,
                            "expected a list of pods (or a mapping with pods:)");
    if (rc == 0)
        rc = pod_file_read_pods(path, list, &entries, &err);
    if (rc == FRUGAL_ENOMEM)
        cli_die_nomem();
    if (rc != 0) {
        fprintf(stderr, "%s%s\n", rc == FRUGAL_EIO ? "frugal ctl: " : "", err.msg);
        yaml_tree_free(root);
        return 2;
    }
    size_t total = 0;
    for (size_t i = 0; i < entries.count; i++)
        total += (size_t)entries.items[i].count;
    f->pods = cli_xcalloc(total, sizeof(*f->pods));
    for (size_t i = 0; i < entries.count; i++) {
        pod_file_pod_t *e = &entries.items[i];
        char base[32];
        if (e->spec.name == NULL) {
            snprintf(base, sizeof(base), "pod-%zu", i);
            e->spec.name = base;
        }
        for (long k = 0; k < e->count; k++) {
            ProtobufCBinaryData *b = &f->pods[f->count];
            /* The quantities were checked by the reader: only memory can run out. */
            if (pod_file_pack_copy(e, k, &b->data, &b->len, &err) != 0)
                cli_die_nomem();
            f->count++;
        }
    }
    pod_file_pods_free(&entries);
    yaml_tree_free(root);
    return 0;
}

static int ctl_ap_propose(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    if (argc != 2)
        return ctl_ap__usage(argv[0], "PODS_FILE");
    ctl_ap_podfile_t f = {NULL, 0};
    int rc = ctl_ap__load_pods(argv[1], &f);
    if (rc != 0)
        goto out;
    AP(ProposeNodeGroupsRequest) req = AP_INIT(PROPOSE_NODE_GROUPS_REQUEST);
    req.n_pods = f.count;
    req.pods = f.pods;
    AP(ProposeNodeGroupsResponse) *resp = NULL;
    rc = ctl_call(client, WIRE_AP_PROPOSE_NODE_GROUPS, &req.base,
                  AP_DESC(propose_node_groups_response), (ProtobufCMessage **)&resp);
    if (rc != 0)
        goto out;
    if (format == CTL_FORMAT_YAML) {
        printf("proposals:%s\n", resp->n_proposals == 0 ? " []" : "");
        for (size_t i = 0; i < resp->n_proposals; i++) {
            const AP(Proposal) *p = resp->proposals[i];
            cli_yaml_item_kv(0, "group_id", p->group_id);
            cli_yaml_kv(2, "machine_type", p->machine_type);
            cli_yaml_kv(2, "zone", p->zone);
            printf("  labels:%s\n", p->n_labels == 0 ? " {}" : "");
            for (size_t j = 0; j < p->n_labels; j++)
                cli_yaml_pair(4, p->labels[j]->key, p->labels[j]->value);
            ctl_ap__yaml_taints(2, p->n_taints, p->taints);
            printf("  node_count: %d\n  score: %.9g\n  exists: %s\n", (int)p->node_count, p->score,
                   p->exists ? "true" : "false");
            printf("  pods:%s\n", p->n_pods == 0 ? " []" : "");
            for (size_t j = 0; j < p->n_pods; j++) {
                printf("  - ");
                cli_yaml_str(p->pods[j]);
                putchar('\n');
            }
        }
        printf("unschedulable_pods:%s\n", resp->n_unschedulable_pods == 0 ? " []" : "");
        for (size_t j = 0; j < resp->n_unschedulable_pods; j++) {
            printf("- ");
            cli_yaml_str(resp->unschedulable_pods[j]);
            putchar('\n');
        }
    } else {
        cli_table_t t = {9, 0, 0, NULL};
        cli_table_row(&t, "GROUP", "MACHINE TYPE", "ZONE", "NODES", "PODS", "SCORE", "EXISTS",
                      "LABELS", "TAINTS");
        for (size_t i = 0; i < resp->n_proposals; i++) {
            const AP(Proposal) *p = resp->proposals[i];
            char **keys = cli_xcalloc(p->n_labels, sizeof(*keys));
            char **values = cli_xcalloc(p->n_labels, sizeof(*values));
            for (size_t j = 0; j < p->n_labels; j++) {
                keys[j] = p->labels[j]->key;
                values[j] = p->labels[j]->value;
            }
            char *labels = ctl_ap__join_labels(p->n_labels, keys, values);
            char *taints = ctl_ap__join_taints(p->n_taints, p->taints);
            char nodes[16], pods[16], score[32];
            snprintf(nodes, sizeof(nodes), "%d", (int)p->node_count);
            snprintf(pods, sizeof(pods), "%zu", p->n_pods);
            snprintf(score, sizeof(score), "%.4f", p->score);
            cli_table_row(&t, p->group_id, p->machine_type, p->zone, nodes, pods, score,
                          p->exists ? "yes" : "no", labels, taints);
            free(labels);
            free(taints);
            free(keys);
            free(values);
        }
        cli_table_flush(&t, 0);
        if (resp->n_unschedulable_pods > 0) {
            printf("unschedulable:");
            for (size_t j = 0; j < resp->n_unschedulable_pods; j++)
                printf(" %s", resp->unschedulable_pods[j]);
            putchar('\n');
        }
    }
    protobuf_c_message_free_unpacked(&resp->base, NULL);
out:
    for (size_t i = 0; i < f.count; i++)
        free(f.pods[i].data);
    free(f.pods);
    return rc;
}

const ctl_verb_t ctl_verbs_autoprov[] = {
    {"machine-types", "", ctl_ap_machine_types},
    {"new-node-group",
     "--machine-type T [--label k=v]... [--system-label k=v]... [--taint k=v:Effect]... "
     "[--extra-resource name=qty]... [--zone Z]",
     ctl_ap_new_node_group},
    {"create", "ID", ctl_ap_create},
    {"delete", "ID", ctl_ap_delete},
    {"group-info", "ID", ctl_ap_group_info},
    {"limits", "", ctl_ap_limits},
    {"propose", "PODS_FILE", ctl_ap_propose},
};
const size_t ctl_verbs_autoprov_count = sizeof(ctl_verbs_autoprov) / sizeof(ctl_verbs_autoprov[0]);
