/* `frugal ctl`'s verbs of the CloudProvider service (externalgrpc.proto) and of health
 * (ctl.h): each builds its request from its arguments, calls the server through ctl_call
 * and prints the reply as a table, or as YAML with -o yaml. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "ctl.h"
#include "duration.h"
#include "externalgrpc.pb-c.h"
#include "health.pb-c.h"
#include "k8s.h"
#include "pod_spec.h"
#include "wire_names.h"

typedef EG(ExternalGrpcNode__LabelsEntry) ctl_label_entry_t;
typedef EG(NodeGroupAutoscalingOptions) ctl_options_t;
typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Duration ctl_legacy_duration_t;
typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Time ctl_legacy_time_t;

/* ------------------------------------------------------------------------------------
 * Small helpers: usage, output (parsing is ctl_args.c's). */

/* Print the usage of one of this file's verbs; returns 2. */
static int ctl__usage_verb(const char *verb) {
    return ctl_usage_verb(ctl_verbs_cloud_provider, ctl_verbs_cloud_provider_count, verb);
}

static const char *ctl__str(const char *s) {
    return s != NULL ? s : "";
}

/* ------------------------------------------------------------------------------------
 * ExternalGrpcNode from "PROVIDER_ID [--name N] [--label k=v]..." */

typedef struct ctl_node_args {
    EG(ExternalGrpcNode) node;
    ctl_label_entry_t *entries;
    ctl_label_entry_t **ptrs;
} ctl_node_args_t;

static void ctl__node_args_init(ctl_node_args_t *a, int argc) {
    EG(ExternalGrpcNode) init = EG_INIT(EXTERNAL_GRPC_NODE);
    a->node = init;
    a->entries = cli_xcalloc((size_t)argc, sizeof(*a->entries));
    a->ptrs = cli_xcalloc((size_t)argc, sizeof(*a->ptrs));
    a->node.labels = a->ptrs;
}

static void ctl__node_args_free(ctl_node_args_t *a) {
    for (size_t i = 0; i < a->node.n_labels; i++) {
        free(a->entries[i].key);
    }
    free(a->entries);
    free(a->ptrs);
}

/* Add "k=v" as a label; false when malformed. */
static bool ctl__node_args_label(ctl_node_args_t *a, const char *kv) {
    size_t key_len;
    if (cli_split_kv(kv, &key_len) == NULL) {
        fprintf(stderr, "frugal ctl: label %s is not KEY=VALUE\n", kv);
        return false;
    }
    ctl_label_entry_t init = EG_INIT(EXTERNAL_GRPC_NODE__LABELS_ENTRY);
    ctl_label_entry_t *e = &a->entries[a->node.n_labels];
    *e = init;
    /* One allocation holds "key\0value". */
    e->key = cli_xstrdup(kv);
    e->key[key_len] = '\0';
    e->value = e->key + key_len + 1;
    a->ptrs[a->node.n_labels++] = e;
    return true;
}

/* ------------------------------------------------------------------------------------
 * Verbs */

static const char *ctl__serving_name(int s) {
    switch (s) {
    case GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING:
        return "SERVING";
    case GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING:
        return "NOT_SERVING";
    case GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVICE_UNKNOWN:
        return "SERVICE_UNKNOWN";
    default:
        return "UNKNOWN";
    }
}

/* health [SERVICE]: exits 1 unless the answer is SERVING, like a probe would. */
static int ctl_verb_health(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    if (argc > 2) {
        return ctl__usage_verb(argv[0]);
    }
    Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    req.service = argc == 2 ? argv[1] : "";
    Grpc__Health__V1__HealthCheckResponse *resp = NULL;
    int rc =
        ctl_call(client, WIRE_HEALTH_CHECK, &req.base,
                 &grpc__health__v1__health_check_response__descriptor, (ProtobufCMessage **)&resp);
    if (rc != 0) {
        return rc;
    }
    const char *name = ctl__serving_name(resp->status);
    if (format == CTL_FORMAT_YAML) {
        cli_yaml_kv(0, "status", name);
    } else {
        printf("%s\n", name);
    }
    if (resp->status != GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING) {
        fprintf(stderr, "health: server answers %s\n", name);
        rc = 1;
    }
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return rc;
}

static void ctl__print_groups(ctl_format_t format, EG(NodeGroup) *const *groups, size_t n) {
    if (format == CTL_FORMAT_YAML) {
        if (n == 0) {
            puts("[]");
        }
        for (size_t i = 0; i < n; i++) {
            cli_yaml_item_kv(0, "id", groups[i]->id);
            printf("  minSize: %d\n  maxSize: %d\n", groups[i]->minsize, groups[i]->maxsize);
            cli_yaml_kv(2, "debug", groups[i]->debug);
        }
        return;
    }
    cli_table_t t = {.ncols = 4};
    cli_table_row(&t, "ID", "MIN", "MAX", "DEBUG");
    for (size_t i = 0; i < n; i++) {
        char min[16], max[16];
        snprintf(min, sizeof(min), "%d", groups[i]->minsize);
        snprintf(max, sizeof(max), "%d", groups[i]->maxsize);
        cli_table_row(&t, groups[i]->id, min, max, ctl__str(groups[i]->debug));
    }
    cli_table_flush(&t, 0);
}

static int ctl_verb_node_groups(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    if (argc != 1) {
        return ctl__usage_verb(argv[0]);
    }
    EG(NodeGroupsRequest) req = EG_INIT(NODE_GROUPS_REQUEST);
    EG(NodeGroupsResponse) *resp = NULL;
    int rc = ctl_call(client, WIRE_CP_NODE_GROUPS, &req.base, EG_DESC(node_groups_response),
                      (ProtobufCMessage **)&resp);
    if (rc != 0) {
        return rc;
    }
    ctl__print_groups(format, resp->nodegroups, resp->n_nodegroups);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return 0;
}

/* Parse "PROVIDER_ID [--name N] [--label k=v]..." plus the pricing options when
 * hours/legacy are given; returns 0, or 2 after printing usage. */
static int ctl__parse_node_verb(int argc, char **argv, ctl_node_args_t *a, double *hours,
                                bool *legacy, bool *no_period) {
    const char *provider_id = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--name") == 0) {
            if ((v = ctl_optarg(argc, argv, &i)) == NULL) {
                return ctl__usage_verb(argv[0]);
            }
            a->node.name = (char *)v;
        } else if (strcmp(argv[i], "--label") == 0) {
            if ((v = ctl_optarg(argc, argv, &i)) == NULL || !ctl__node_args_label(a, v)) {
                return ctl__usage_verb(argv[0]);
            }
        } else if (hours != NULL && strcmp(argv[i], "--hours") == 0) {
            if ((v = ctl_optarg(argc, argv, &i)) == NULL || !ctl_parse_hours(v, hours)) {
                return ctl__usage_verb(argv[0]);
            }
        } else if (legacy != NULL && strcmp(argv[i], "--legacy") == 0) {
            *legacy = true;
        } else if (no_period != NULL && strcmp(argv[i], "--no-period") == 0) {
            *no_period = true;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "frugal ctl %s: unknown option %s\n", argv[0], argv[i]);
            return ctl__usage_verb(argv[0]);
        } else if (provider_id == NULL) {
            provider_id = argv[i];
        } else {
            return ctl__usage_verb(argv[0]);
        }
    }
    if (provider_id == NULL) {
        return ctl__usage_verb(argv[0]);
    }
    a->node.providerid = (char *)provider_id;
    return 0;
}

static int ctl_verb_node_group_for_node(rpc_client_t *client, ctl_format_t format, int argc,
                                        char **argv) {
    ctl_node_args_t a;
    ctl__node_args_init(&a, argc);
    int rc = ctl__parse_node_verb(argc, argv, &a, NULL, NULL, NULL);
    if (rc != 0) {
        goto done;
    }
    EG(NodeGroupForNodeRequest) req = EG_INIT(NODE_GROUP_FOR_NODE_REQUEST);
    req.node = &a.node;
    EG(NodeGroupForNodeResponse) *resp = NULL;
    rc = ctl_call(client, WIRE_CP_NODE_GROUP_FOR_NODE, &req.base,
                  EG_DESC(node_group_for_node_response), (ProtobufCMessage **)&resp);
    if (rc != 0) {
        goto done;
    }
    EG(NodeGroup) none = EG_INIT(NODE_GROUP);
    EG(NodeGroup) *g = resp->nodegroup != NULL ? resp->nodegroup : &none;
    if (format == CTL_FORMAT_YAML) {
        cli_yaml_kv(0, "id", g->id);
        printf("minSize: %d\nmaxSize: %d\n", g->minsize, g->maxsize);
        cli_yaml_kv(0, "debug", g->debug);
    } else if (g->id[0] == '\0') {
        printf("(no node group)\n");
    } else {
        ctl__print_groups(format, &g, 1);
    }
    protobuf_c_message_free_unpacked(&resp->base, NULL);
done:
    ctl__node_args_free(&a);
    return rc;
}

static int ctl_verb_target_size(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    if (argc != 2) {
        return ctl__usage_verb(argv[0]);
    }
    EG(NodeGroupTargetSizeRequest) req = EG_INIT(NODE_GROUP_TARGET_SIZE_REQUEST);
    req.id = argv[1];
    EG(NodeGroupTargetSizeResponse) *resp = NULL;
    int rc = ctl_call(client, WIRE_CP_TARGET_SIZE, &req.base,
                      EG_DESC(node_group_target_size_response), (ProtobufCMessage **)&resp);
    if (rc != 0) {
        return rc;
    }
    if (format == CTL_FORMAT_YAML) {
        printf("targetSize: %d\n", resp->targetsize);
    } else {
        printf("%d\n", resp->targetsize);
    }
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return 0;
}

/* Call a method whose reply is empty and print nothing. */
static int ctl__call_empty(rpc_client_t *client, const char *method, const ProtobufCMessage *req,
                           const ProtobufCMessageDescriptor *resp_desc) {
    ProtobufCMessage *resp = NULL;
    int rc = ctl_call(client, method, req, resp_desc, &resp);
    if (rc == 0) {
        protobuf_c_message_free_unpacked(resp, NULL);
    }
    return rc;
}

/* increase ID DELTA / decrease ID DELTA: the delta goes on the wire as given, so
 * `decrease` takes a negative number like CA sends. */
static int ctl_verb_increase(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    EG(NodeGroupIncreaseSizeRequest) req = EG_INIT(NODE_GROUP_INCREASE_SIZE_REQUEST);
    if (argc != 3 || !ctl_parse_int32(argv[2], &req.delta)) {
        return ctl__usage_verb(argv[0]);
    }
    req.id = argv[1];
    return ctl__call_empty(client, WIRE_CP_INCREASE_SIZE, &req.base,
                           EG_DESC(node_group_increase_size_response));
}

static int ctl_verb_decrease(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    EG(NodeGroupDecreaseTargetSizeRequest) req = EG_INIT(NODE_GROUP_DECREASE_TARGET_SIZE_REQUEST);
    if (argc != 3 || !ctl_parse_int32(argv[2], &req.delta)) {
        return ctl__usage_verb(argv[0]);
    }
    req.id = argv[1];
    return ctl__call_empty(client, WIRE_CP_DECREASE_TARGET_SIZE, &req.base,
                           EG_DESC(node_group_decrease_target_size_response));
}

/* The node name of a provider id: its last path element ("frugal://g/n" -> "n"). */
static char *ctl__name_of_provider_id(const char *id) {
    const char *slash = strrchr(id, '/');
    return (char *)(slash != NULL ? slash + 1 : id);
}

static int ctl_verb_delete_nodes(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    if (argc < 3) {
        return ctl__usage_verb(argv[0]);
    }
    size_t n = (size_t)argc - 2;
    EG(ExternalGrpcNode) *nodes = cli_xcalloc(n, sizeof(*nodes));
    EG(ExternalGrpcNode) **ptrs = cli_xcalloc(n, sizeof(*ptrs));
    for (size_t i = 0; i < n; i++) {
        EG(ExternalGrpcNode) init = EG_INIT(EXTERNAL_GRPC_NODE);
        nodes[i] = init;
        nodes[i].providerid = argv[i + 2];
        nodes[i].name = ctl__name_of_provider_id(argv[i + 2]);
        ptrs[i] = &nodes[i];
    }
    EG(NodeGroupDeleteNodesRequest) req = EG_INIT(NODE_GROUP_DELETE_NODES_REQUEST);
    req.id = argv[1];
    req.n_nodes = n;
    req.nodes = ptrs;
    int rc = ctl__call_empty(client, WIRE_CP_DELETE_NODES, &req.base,
                             EG_DESC(node_group_delete_nodes_response));
    free(ptrs);
    free(nodes);
    return rc;
}

static const char *ctl__instance_state_name(int s) {
    switch (s) {
    case CLUSTERAUTOSCALER__CLOUDPROVIDER__V1__EXTERNALGRPC__INSTANCE_STATUS__INSTANCE_STATE__instanceRunning:
        return "running";
    case CLUSTERAUTOSCALER__CLOUDPROVIDER__V1__EXTERNALGRPC__INSTANCE_STATUS__INSTANCE_STATE__instanceCreating:
        return "creating";
    case CLUSTERAUTOSCALER__CLOUDPROVIDER__V1__EXTERNALGRPC__INSTANCE_STATUS__INSTANCE_STATE__instanceDeleting:
        return "deleting";
    default:
        return "unspecified";
    }
}

static int ctl_verb_nodes(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    if (argc != 2) {
        return ctl__usage_verb(argv[0]);
    }
    EG(NodeGroupNodesRequest) req = EG_INIT(NODE_GROUP_NODES_REQUEST);
    req.id = argv[1];
    EG(NodeGroupNodesResponse) *resp = NULL;
    int rc = ctl_call(client, WIRE_CP_NODES, &req.base, EG_DESC(node_group_nodes_response),
                      (ProtobufCMessage **)&resp);
    if (rc != 0) {
        return rc;
    }
    cli_table_t t = {.ncols = 5};
    if (format == CTL_FORMAT_YAML && resp->n_instances == 0) {
        puts("[]");
    }
    if (format == CTL_FORMAT_TABLE) {
        cli_table_row(&t, "ID", "STATE", "ERROR", "CLASS", "MESSAGE");
    }
    for (size_t i = 0; i < resp->n_instances; i++) {
        EG(Instance) *in = resp->instances[i];
        const char *state =
            ctl__instance_state_name(in->status != NULL ? (int)in->status->instancestate : 0);
        EG(InstanceErrorInfo) *ei = in->status != NULL ? in->status->errorinfo : NULL;
        if (format == CTL_FORMAT_YAML) {
            cli_yaml_item_kv(0, "id", in->id);
            cli_yaml_kv(2, "state", state);
            if (ei != NULL) {
                printf("  error:\n");
                cli_yaml_kv(4, "code", ei->errorcode);
                cli_yaml_kv(4, "message", ei->errormessage);
                printf("    class: %d\n", ei->instanceerrorclass);
            }
        } else {
            char cls[16] = "";
            if (ei != NULL) {
                snprintf(cls, sizeof(cls), "%d", ei->instanceerrorclass);
            }
            cli_table_row(&t, in->id, state, ei != NULL ? ei->errorcode : "", cls,
                          ei != NULL ? ei->errormessage : "");
        }
    }
    if (format == CTL_FORMAT_TABLE) {
        cli_table_flush(&t, 0);
    }
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return 0;
}

static const char *ctl__quantity(const k8s_quantity_t *q) {
    return q != NULL ? ctl__str(q->string) : "";
}

static void ctl__print_node_yaml(const k8s_node_t *node, size_t info_len, size_t bytes_len) {
    const k8s_object_meta_t *meta = node->metadata;
    const k8s_node_spec_t *spec = node->spec;
    const k8s_node_status_t *st = node->status;
    cli_yaml_kv(0, "name", meta != NULL ? meta->name : "");
    printf("wire:\n  nodeInfo: %zu\n  nodeBytes: %zu\n", info_len, bytes_len);
    if (spec != NULL && spec->providerid != NULL) {
        cli_yaml_kv(0, "providerID", spec->providerid);
    }
    printf("labels:%s\n", meta == NULL || meta->n_labels == 0 ? " {}" : "");
    for (size_t i = 0; meta != NULL && i < meta->n_labels; i++) {
        cli_yaml_pair(2, meta->labels[i]->key, meta->labels[i]->value);
    }
    printf("taints:%s\n", spec == NULL || spec->n_taints == 0 ? " []" : "");
    for (size_t i = 0; spec != NULL && i < spec->n_taints; i++) {
        cli_yaml_item_kv(2, "key", spec->taints[i]->key);
        cli_yaml_kv(4, "value", spec->taints[i]->value);
        cli_yaml_kv(4, "effect", spec->taints[i]->effect);
    }
    printf("capacity:%s\n", st == NULL || st->n_capacity == 0 ? " {}" : "");
    for (size_t i = 0; st != NULL && i < st->n_capacity; i++) {
        cli_yaml_pair(2, st->capacity[i]->key, ctl__quantity(st->capacity[i]->value));
    }
    printf("allocatable:%s\n", st == NULL || st->n_allocatable == 0 ? " {}" : "");
    for (size_t i = 0; st != NULL && i < st->n_allocatable; i++) {
        cli_yaml_pair(2, st->allocatable[i]->key, ctl__quantity(st->allocatable[i]->value));
    }
    printf("conditions:%s\n", st == NULL || st->n_conditions == 0 ? " []" : "");
    for (size_t i = 0; st != NULL && i < st->n_conditions; i++) {
        const k8s_node_condition_t *c = st->conditions[i];
        cli_yaml_item_kv(2, "type", c->type);
        cli_yaml_kv(4, "status", c->status);
        cli_yaml_kv(4, "reason", c->reason);
        cli_yaml_kv(4, "message", c->message);
    }
}

static void ctl__print_node_table(const k8s_node_t *node) {
    const k8s_object_meta_t *meta = node->metadata;
    const k8s_node_spec_t *spec = node->spec;
    const k8s_node_status_t *st = node->status;
    printf("Name:        %s\n", meta != NULL ? ctl__str(meta->name) : "");
    if (spec != NULL && spec->providerid != NULL) {
        printf("ProviderID:  %s\n", spec->providerid);
    }
    printf("Labels:");
    for (size_t i = 0; meta != NULL && i < meta->n_labels; i++) {
        printf("%s%s=%s\n", i == 0 ? "      " : "             ", meta->labels[i]->key,
               ctl__str(meta->labels[i]->value));
    }
    if (meta == NULL || meta->n_labels == 0) {
        printf("      <none>\n");
    }
    printf("Taints:");
    for (size_t i = 0; spec != NULL && i < spec->n_taints; i++) {
        const k8s_taint_t *t = spec->taints[i];
        printf("%s%s=%s:%s\n", i == 0 ? "      " : "             ", ctl__str(t->key),
               ctl__str(t->value), ctl__str(t->effect));
    }
    if (spec == NULL || spec->n_taints == 0) {
        printf("      <none>\n");
    }
    printf("\n");
    cli_table_t t = {.ncols = 3};
    cli_table_row(&t, "RESOURCE", "CAPACITY", "ALLOCATABLE");
    for (size_t i = 0; st != NULL && i < st->n_capacity; i++) {
        const char *alloc = "";
        for (size_t j = 0; j < st->n_allocatable; j++) {
            if (strcmp(st->allocatable[j]->key, st->capacity[i]->key) == 0) {
                alloc = ctl__quantity(st->allocatable[j]->value);
            }
        }
        cli_table_row(&t, st->capacity[i]->key, ctl__quantity(st->capacity[i]->value), alloc);
    }
    cli_table_flush(&t, 0);
    printf("\n");
    t.ncols = 4;
    cli_table_row(&t, "CONDITION", "STATUS", "REASON", "MESSAGE");
    for (size_t i = 0; st != NULL && i < st->n_conditions; i++) {
        const k8s_node_condition_t *c = st->conditions[i];
        cli_table_row(&t, ctl__str(c->type), ctl__str(c->status), ctl__str(c->reason),
                      ctl__str(c->message));
    }
    cli_table_flush(&t, 0);
}

/* template ID: decodes nodeBytes (field 2), else the legacy nodeInfo (field 1). */
static int ctl_verb_template(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    if (argc != 2) {
        return ctl__usage_verb(argv[0]);
    }
    EG(NodeGroupTemplateNodeInfoRequest) req = EG_INIT(NODE_GROUP_TEMPLATE_NODE_INFO_REQUEST);
    req.id = argv[1];
    EG(NodeGroupTemplateNodeInfoResponse) *resp = NULL;
    int rc = ctl_call(client, WIRE_CP_TEMPLATE_NODE_INFO, &req.base,
                      EG_DESC(node_group_template_node_info_response), (ProtobufCMessage **)&resp);
    if (rc != 0) {
        return rc;
    }
    const ProtobufCBinaryData *src = resp->nodebytes.len > 0 ? &resp->nodebytes : &resp->nodeinfo;
    k8s_node_t *node = NULL;
    if (src->len == 0) {
        fprintf(stderr, "error: the reply carries no template node\n");
        rc = 1;
    } else if ((node = k8s__io__api__core__v1__node__unpack(NULL, src->len, src->data)) == NULL) {
        fprintf(stderr, "error: the template node is not a valid v1.Node\n");
        rc = 1;
    } else if (format == CTL_FORMAT_YAML) {
        ctl__print_node_yaml(node, resp->nodeinfo.len, resp->nodebytes.len);
    } else {
        ctl__print_node_table(node);
    }
    if (node != NULL) {
        k8s__io__api__core__v1__node__free_unpacked(node, NULL);
    }
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return rc;
}

/* Defaults sent by `options`, CA's own defaults unless overridden. */
typedef struct ctl_defaults {
    double util, gpu_util;
    int64_t unneeded_ns, unready_ns, provision_ns;
    bool zero_or_max, ignore_ds, none;
} ctl_defaults_t;

static int ctl__parse_defaults(int argc, char **argv, ctl_defaults_t *d, const char **id) {
    *d = (ctl_defaults_t){.util = 0.5,
                          .gpu_util = 0.5,
                          .unneeded_ns = 600 * DURATION_NS_PER_SEC,
                          .unready_ns = 1200 * DURATION_NS_PER_SEC,
                          .provision_ns = 900 * DURATION_NS_PER_SEC};
    *id = NULL;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = NULL, *want = "a duration such as 10m or 1h30m";
        bool ok = true;
        if (strcmp(o, "--defaults-zero-or-max-node-scaling") == 0) {
            d->zero_or_max = true;
        } else if (strcmp(o, "--defaults-ignore-daemonsets-utilization") == 0) {
            d->ignore_ds = true;
        } else if (strcmp(o, "--no-defaults") == 0) {
            d->none = true;
        } else if (strcmp(o, "--defaults-scale-down-utilization") == 0) {
            want = "a number";
            ok = (v = ctl_optarg(argc, argv, &i)) != NULL && ctl_parse_double(v, &d->util);
        } else if (strcmp(o, "--defaults-scale-down-gpu-utilization") == 0) {
            want = "a number";
            ok = (v = ctl_optarg(argc, argv, &i)) != NULL && ctl_parse_double(v, &d->gpu_util);
        } else if (strcmp(o, "--defaults-scale-down-unneeded") == 0) {
            ok = (v = ctl_optarg(argc, argv, &i)) != NULL && ctl_parse_duration(v, &d->unneeded_ns);
        } else if (strcmp(o, "--defaults-scale-down-unready") == 0) {
            ok = (v = ctl_optarg(argc, argv, &i)) != NULL && ctl_parse_duration(v, &d->unready_ns);
        } else if (strcmp(o, "--defaults-max-provision") == 0) {
            ok =
                (v = ctl_optarg(argc, argv, &i)) != NULL && ctl_parse_duration(v, &d->provision_ns);
        } else if (o[0] == '-' && o[1] != '\0') {
            fprintf(stderr, "frugal ctl %s: unknown option %s\n", argv[0], o);
            ok = false;
        } else if (*id == NULL) {
            *id = o;
        } else {
            fprintf(stderr, "frugal ctl %s: one node group id, not also \"%s\"\n", argv[0], o);
            ok = false;
        }
        if (!ok) {
            if (v != NULL)
                fprintf(stderr, "frugal ctl %s: %s \"%s\": expected %s\n", argv[0], o, v, want);
            return ctl__usage_verb(argv[0]);
        }
    }
    return *id == NULL ? ctl__usage_verb(argv[0]) : 0;
}

static void ctl__set_durations(ctl_legacy_duration_t *legacy, Google__Protobuf__Duration *current,
                               int64_t ns) {
    ctl_legacy_duration_t l = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__DURATION__INIT;
    Google__Protobuf__Duration c = GOOGLE__PROTOBUF__DURATION__INIT;
    *legacy = l;
    legacy->has_duration = true;
    legacy->duration = ns;
    *current = c;
    current->seconds = ns / DURATION_NS_PER_SEC;
    current->nanos = (int32_t)(ns % DURATION_NS_PER_SEC);
}

static void ctl__legacy_text(const ctl_legacy_duration_t *d, char *buf, size_t size) {
    if (d == NULL || !d->has_duration) {
        snprintf(buf, size, "unset");
    } else {
        duration_format(d->duration, buf, size);
    }
}

static void ctl__current_text(const Google__Protobuf__Duration *d, char *buf, size_t size) {
    if (d == NULL) {
        snprintf(buf, size, "unset");
    } else {
        duration_format(d->seconds * DURATION_NS_PER_SEC + d->nanos, buf, size);
    }
}

/* options ID [--defaults-...]: sends defaults in both generations (CA's defaults unless
 * overridden; --no-defaults sends none) and prints every field of both generations;
 * an unset duration prints as "unset". */
static int ctl_verb_options(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    ctl_defaults_t d;
    const char *id;
    int rc = ctl__parse_defaults(argc, argv, &d, &id);
    if (rc != 0) {
        return rc;
    }
    ctl_options_t defaults = EG_INIT(NODE_GROUP_AUTOSCALING_OPTIONS);
    ctl_legacy_duration_t l_unneeded, l_unready, l_provision;
    Google__Protobuf__Duration c_unneeded, c_unready, c_provision;
    defaults.scaledownutilizationthreshold = d.util;
    defaults.scaledowngpuutilizationthreshold = d.gpu_util;
    defaults.zeroormaxnodescaling = d.zero_or_max;
    defaults.ignoredaemonsetsutilization = d.ignore_ds;
    ctl__set_durations(&l_unneeded, &c_unneeded, d.unneeded_ns);
    ctl__set_durations(&l_unready, &c_unready, d.unready_ns);
    ctl__set_durations(&l_provision, &c_provision, d.provision_ns);
    defaults.scaledownunneededtime = &l_unneeded;
    defaults.scaledownunreadytime = &l_unready;
    defaults.maxnodeprovisiontime = &l_provision;
    defaults.scaledownunneededduration = &c_unneeded;
    defaults.scaledownunreadyduration = &c_unready;
    defaults.maxnodeprovisionduration = &c_provision;

    EG(NodeGroupAutoscalingOptionsRequest) req = EG_INIT(NODE_GROUP_AUTOSCALING_OPTIONS_REQUEST);
    req.id = (char *)id;
    req.defaults = d.none ? NULL : &defaults;
    EG(NodeGroupAutoscalingOptionsResponse) *resp = NULL;
    rc = ctl_call(client, WIRE_CP_GET_OPTIONS, &req.base,
                  EG_DESC(node_group_autoscaling_options_response), (ProtobufCMessage **)&resp);
    if (rc != 0) {
        return rc;
    }
    ctl_options_t empty = EG_INIT(NODE_GROUP_AUTOSCALING_OPTIONS);
    const ctl_options_t *o =
        resp->nodegroupautoscalingoptions != NULL ? resp->nodegroupautoscalingoptions : &empty;
    char util[32], gpu[32], v[6][48];
    snprintf(util, sizeof(util), "%.10g", o->scaledownutilizationthreshold);
    snprintf(gpu, sizeof(gpu), "%.10g", o->scaledowngpuutilizationthreshold);
    ctl__legacy_text(o->scaledownunneededtime, v[0], sizeof(v[0]));
    ctl__legacy_text(o->scaledownunreadytime, v[1], sizeof(v[1]));
    ctl__legacy_text(o->maxnodeprovisiontime, v[2], sizeof(v[2]));
    ctl__current_text(o->scaledownunneededduration, v[3], sizeof(v[3]));
    ctl__current_text(o->scaledownunreadyduration, v[4], sizeof(v[4]));
    ctl__current_text(o->maxnodeprovisionduration, v[5], sizeof(v[5]));
    const char *rows[][2] = {
        {"scaleDownUtilizationThreshold", util},
        {"scaleDownGpuUtilizationThreshold", gpu},
        {"zeroOrMaxNodeScaling", o->zeroormaxnodescaling ? "true" : "false"},
        {"ignoreDaemonSetsUtilization", o->ignoredaemonsetsutilization ? "true" : "false"},
        {"scaleDownUnneededTime", v[0]},
        {"scaleDownUnreadyTime", v[1]},
        {"maxNodeProvisionTime", v[2]},
        {"scaleDownUnneededDuration", v[3]},
        {"scaleDownUnreadyDuration", v[4]},
        {"maxNodeProvisionDuration", v[5]},
    };
    cli_table_t t = {.ncols = 2};
    if (format == CTL_FORMAT_TABLE) {
        cli_table_row(&t, "OPTION", "VALUE");
    }
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (format == CTL_FORMAT_YAML) {
            /* Numbers and booleans stay plain; durations are strings. */
            printf("%s: ", rows[i][0]);
            if (i < 4) {
                fputs(rows[i][1], stdout);
            } else {
                cli_yaml_str(rows[i][1]);
            }
            putchar('\n');
        } else {
            cli_table_row(&t, rows[i][0], rows[i][1]);
        }
    }
    if (format == CTL_FORMAT_TABLE) {
        cli_table_flush(&t, 0);
    }
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return 0;
}

/* The pricing period: now .. now + hours, in both time representations. */
typedef struct ctl_period {
    ctl_legacy_time_t l_start, l_end;
    Google__Protobuf__Timestamp c_start, c_end;
} ctl_period_t;

static void ctl__period_init(ctl_period_t *p, double hours) {
    ctl_legacy_time_t l = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__TIME__INIT;
    Google__Protobuf__Timestamp c = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
    int64_t start = (int64_t)time(NULL);
    int64_t end_ns = start * DURATION_NS_PER_SEC + (int64_t)llround(hours * 3600.0 * 1e9);
    int64_t end_s = end_ns / DURATION_NS_PER_SEC;
    int32_t end_nanos = (int32_t)(end_ns % DURATION_NS_PER_SEC);
    if (end_nanos < 0) {
        end_nanos += (int32_t)DURATION_NS_PER_SEC;
        end_s -= 1;
    }
    p->l_start = l;
    p->l_start.has_seconds = true;
    p->l_start.seconds = start;
    p->l_end = l;
    p->l_end.has_seconds = true;
    p->l_end.seconds = end_s;
    p->l_end.has_nanos = end_nanos != 0;
    p->l_end.nanos = end_nanos;
    p->c_start = c;
    p->c_start.seconds = start;
    p->c_end = c;
    p->c_end.seconds = end_s;
    p->c_end.nanos = end_nanos;
}

static void ctl__print_price(ctl_format_t format, double price) {
    if (format == CTL_FORMAT_YAML) {
        printf("price: %.10g\n", price);
    } else {
        printf("%.10g\n", price);
    }
}

/* node-price PROVIDER_ID [--name N] [--label k=v]... [--hours H] [--legacy] [--no-period] */
static int ctl_verb_node_price(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    ctl_node_args_t a;
    ctl__node_args_init(&a, argc);
    double hours = 1.0;
    bool legacy = false, no_period = false;
    int rc = ctl__parse_node_verb(argc, argv, &a, &hours, &legacy, &no_period);
    if (rc != 0) {
        goto done;
    }
    ctl_period_t p;
    ctl__period_init(&p, hours);
    EG(PricingNodePriceRequest) req = EG_INIT(PRICING_NODE_PRICE_REQUEST);
    req.node = &a.node;
    if (no_period) {
        /* Leave every time field unset. */
    } else if (legacy) {
        req.starttime = &p.l_start;
        req.endtime = &p.l_end;
    } else {
        req.starttimestamp = &p.c_start;
        req.endtimestamp = &p.c_end;
    }
    EG(PricingNodePriceResponse) *resp = NULL;
    rc = ctl_call(client, WIRE_CP_PRICING_NODE_PRICE, &req.base,
                  EG_DESC(pricing_node_price_response), (ProtobufCMessage **)&resp);
    if (rc == 0) {
        ctl__print_price(format, resp->price);
        protobuf_c_message_free_unpacked(&resp->base, NULL);
    }
done:
    ctl__node_args_free(&a);
    return rc;
}

/* pod-price --cpu Q --memory Q [--gpu N] [--hours H] [--legacy] [--no-period]: prices
 * a one-container pod with these requests. */
static int ctl_verb_pod_price(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    const char *cpu = NULL, *memory = NULL, *gpu = NULL;
    double hours = 1.0;
    bool legacy = false, no_period = false;
    for (int i = 1; i < argc; i++) {
        const char **dst = NULL;
        if (strcmp(argv[i], "--cpu") == 0) {
            dst = &cpu;
        } else if (strcmp(argv[i], "--memory") == 0) {
            dst = &memory;
        } else if (strcmp(argv[i], "--gpu") == 0) {
            dst = &gpu;
        } else if (strcmp(argv[i], "--hours") == 0) {
            const char *v = ctl_optarg(argc, argv, &i);
            if (v == NULL || !ctl_parse_hours(v, &hours)) {
                return ctl__usage_verb(argv[0]);
            }
            continue;
        } else if (strcmp(argv[i], "--legacy") == 0) {
            legacy = true;
            continue;
        } else if (strcmp(argv[i], "--no-period") == 0) {
            no_period = true;
            continue;
        } else {
            return ctl__usage_verb(argv[0]);
        }
        if ((*dst = ctl_optarg(argc, argv, &i)) == NULL) {
            return ctl__usage_verb(argv[0]);
        }
    }
    if (cpu == NULL || memory == NULL) {
        return ctl__usage_verb(argv[0]);
    }

    pod_spec_t spec = {.name = "frugal-ctl-pod", .cpu = cpu, .memory = memory, .gpu = gpu};
    uint8_t *pod_buf;
    size_t pod_len;
    frugal_err_t err;
    int packed = pod_spec_pack(&spec, &pod_buf, &pod_len, &err);
    if (packed == FRUGAL_ENOMEM)
        cli_die_nomem();
    if (packed != 0) {
        fprintf(stderr, "frugal ctl: %s: %s\n", argv[0], err.msg);
        return 2; /* the options' values are wrong, as in any usage error */
    }

    ctl_period_t p;
    ctl__period_init(&p, hours);
    EG(PricingPodPriceRequest) req = EG_INIT(PRICING_POD_PRICE_REQUEST);
    if (legacy) {
        req.pod.data = pod_buf;
        req.pod.len = pod_len;
        if (!no_period) {
            req.starttime = &p.l_start;
            req.endtime = &p.l_end;
        }
    } else {
        req.pod_bytes.data = pod_buf;
        req.pod_bytes.len = pod_len;
        if (!no_period) {
            req.starttimestamp = &p.c_start;
            req.endtimestamp = &p.c_end;
        }
    }
    EG(PricingPodPriceResponse) *resp = NULL;
    int rc = ctl_call(client, WIRE_CP_PRICING_POD_PRICE, &req.base,
                      EG_DESC(pricing_pod_price_response), (ProtobufCMessage **)&resp);
    free(pod_buf);
    if (rc == 0) {
        ctl__print_price(format, resp->price);
        protobuf_c_message_free_unpacked(&resp->base, NULL);
    }
    return rc;
}

static int ctl_verb_gpu_label(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    if (argc != 1) {
        return ctl__usage_verb(argv[0]);
    }
    EG(GPULabelRequest) req = EG_INIT(GPULABEL_REQUEST);
    EG(GPULabelResponse) *resp = NULL;
    int rc = ctl_call(client, WIRE_CP_GPU_LABEL, &req.base, EG_DESC(gpulabel_response),
                      (ProtobufCMessage **)&resp);
    if (rc != 0) {
        return rc;
    }
    if (format == CTL_FORMAT_YAML) {
        cli_yaml_kv(0, "label", resp->label);
    } else {
        printf("%s\n", resp->label);
    }
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return 0;
}

static int ctl_verb_gpu_types(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    if (argc != 1) {
        return ctl__usage_verb(argv[0]);
    }
    EG(GetAvailableGPUTypesRequest) req = EG_INIT(GET_AVAILABLE_GPUTYPES_REQUEST);
    EG(GetAvailableGPUTypesResponse) *resp = NULL;
    int rc = ctl_call(client, WIRE_CP_GET_AVAILABLE_GPU_TYPES, &req.base,
                      EG_DESC(get_available_gputypes_response), (ProtobufCMessage **)&resp);
    if (rc != 0) {
        return rc;
    }
    cli_table_t t = {.ncols = 2};
    if (format == CTL_FORMAT_TABLE) {
        cli_table_row(&t, "GPU TYPE", "ANY TYPE URL");
    } else if (resp->n_gputypes == 0) {
        puts("{}");
    }
    for (size_t i = 0; i < resp->n_gputypes; i++) {
        const char *url =
            resp->gputypes[i]->value != NULL ? resp->gputypes[i]->value->type_url : "";
        if (format == CTL_FORMAT_YAML) {
            cli_yaml_str(resp->gputypes[i]->key);
            fputs(":\n", stdout);
            cli_yaml_kv(2, "typeUrl", url);
        } else {
            cli_table_row(&t, resp->gputypes[i]->key, url);
        }
    }
    if (format == CTL_FORMAT_TABLE) {
        cli_table_flush(&t, 0);
    }
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return 0;
}

static int ctl_verb_refresh(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    if (argc != 1) {
        return ctl__usage_verb(argv[0]);
    }
    EG(RefreshRequest) req = EG_INIT(REFRESH_REQUEST);
    return ctl__call_empty(client, WIRE_CP_REFRESH, &req.base, EG_DESC(refresh_response));
}

static int ctl_verb_cleanup(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    if (argc != 1) {
        return ctl__usage_verb(argv[0]);
    }
    EG(CleanupRequest) req = EG_INIT(CLEANUP_REQUEST);
    return ctl__call_empty(client, WIRE_CP_CLEANUP, &req.base, EG_DESC(cleanup_response));
}

const ctl_verb_t ctl_verbs_cloud_provider[] = {
    {"health", "[SERVICE]", ctl_verb_health},
    {"node-groups", "", ctl_verb_node_groups},
    {"node-group-for-node", "PROVIDER_ID [--name N] [--label K=V]...",
     ctl_verb_node_group_for_node},
    {"target-size", "ID", ctl_verb_target_size},
    {"increase", "ID DELTA", ctl_verb_increase},
    {"decrease", "ID DELTA   (DELTA < 0, as CA sends it)", ctl_verb_decrease},
    {"delete-nodes", "ID PROVIDER_ID...", ctl_verb_delete_nodes},
    {"nodes", "ID", ctl_verb_nodes},
    {"template", "ID", ctl_verb_template},
    {"options",
     "ID [--defaults-scale-down-utilization F] [--defaults-scale-down-gpu-utilization F]\n"
     "      [--defaults-scale-down-unneeded D] [--defaults-scale-down-unready D]\n"
     "      [--defaults-max-provision D] [--defaults-zero-or-max-node-scaling]\n"
     "      [--defaults-ignore-daemonsets-utilization] [--no-defaults]",
     ctl_verb_options},
    {"node-price", "PROVIDER_ID [--name N] [--label K=V]... [--hours H] [--legacy] [--no-period]",
     ctl_verb_node_price},
    {"pod-price", "--cpu Q --memory Q [--gpu N] [--hours H] [--legacy] [--no-period]",
     ctl_verb_pod_price},
    {"gpu-label", "", ctl_verb_gpu_label},
    {"gpu-types", "", ctl_verb_gpu_types},
    {"refresh", "", ctl_verb_refresh},
    {"cleanup", "", ctl_verb_cleanup},
};
const size_t ctl_verbs_cloud_provider_count =
    sizeof(ctl_verbs_cloud_provider) / sizeof(ctl_verbs_cloud_provider[0]);
