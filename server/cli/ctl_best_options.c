/* `frugal ctl best-options FILE [--legacy]`: build a BestOptionsRequest from a small
 * YAML description, ask the server's expander, and print every option's figures
 * ranked, the winner(s) marked.
 *
 * FILE:
 *   options:
 *     - group: pool-a            # nodeGroupId
 *       node_count: 2
 *       debug: "from CA"         # optional
 *       pods:                    # pod entries as pod_file.h reads them, each
 *                                # `count` pods alike (NAME-0 ..)
 *         - {cpu: 100m, memory: 64Mi, gpu: 0, count: 3,
 *            node_selector: {team: web},
 *            tolerations: [{key: dedicated, operator: Equal, value: web, effect: NoSchedule}]}
 *   nodes:                       # template nodes, by group; a group without one is
 *     - group: pool-a            # sent without a template
 *       machine_type: n1-standard-2
 *       zone: us-central1-a      # optional
 *       labels: {team: web}      # optional
 *       taints: [{key: dedicated, value: web, effect: NoSchedule}]
 *       cpu: 2                   # optional: capacity when the type is not in the
 *       memory: 7.5Gi            # builtin catalog (or to override it)
 *       gpu: 1
 *
 * One call, sent with the `frugal-explain` metadata: the server answers the winners and
 * then every other option, each scored one with its figures (demand-fit's depend on the
 * other options, so each is shown as this decision weighed it). --legacy
 * sends pods under `pod = 4` and templates under `nodeMap = 2`. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "catalog.h"
#include "cli.h"
#include "ctl.h"
#include "expander.pb-c.h"
#include "pod_file.h"
#include "pod_spec.h"
#include "quantity.h"
#include "ranking.h"
#include "template.h"
#include "wire_names.h"
#include "yaml_tree.h"

typedef Grpcplugin__BestOptionsRequest bo_request_t;
typedef Grpcplugin__BestOptionsResponse bo_response_t;
typedef Grpcplugin__Option bo_option_t;

/* --- everything built for one run comes from one arena (a CLI exits on out-of-memory) --- */

/* n zeroed bytes of the run's arena. */
static void *bo_alloc(arena_t *a, size_t n) {
    void *p = arena_calloc(a, n, 1);
    if (!p)
        cli_die_nomem();
    return p;
}

static char *bo_strdup(arena_t *a, const char *s) {
    char *p = arena_strdup(a, s);
    if (!p)
        cli_die_nomem();
    return p;
}

/* --- reading FILE --- */

typedef struct bo_file {
    const char *path;
    arena_t *arena;
    bool failed;
} bo_file_t;

/* Print err's "FILE:LINE:COL: message" and mark the file failed. */
static void bo_report(bo_file_t *f, const frugal_err_t *err) {
    if (err->code == FRUGAL_ENOMEM)
        cli_die_nomem();
    fprintf(stderr, "%s\n", err->msg);
    f->failed = true;
}

static void bo_error(bo_file_t *f, const yaml_tree_node_t *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Report FILE:LINE:COL: message and mark the file failed. */
static void bo_error(bo_file_t *f, const yaml_tree_node_t *at, const char *fmt, ...) {
    char msg[FRUGAL_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    frugal_err_t err;
    pod_file_error(&err, f->path, at, "%s", msg);
    bo_report(f, &err);
}

static const char *bo_scalar(bo_file_t *f, const yaml_tree_node_t *map, const char *key,
                             bool required) {
    const char *s = NULL;
    frugal_err_t err;
    if (pod_file_scalar(f->path, map, key, &s, &err) != 0)
        bo_report(f, &err);
    else if (!s && required)
        bo_error(f, map, "missing key %s", key);
    return s;
}

static bool bo_int(bo_file_t *f, const yaml_tree_node_t *map, const char *key, long long min,
                   long long *out) {
    const char *s = bo_scalar(f, map, key, false);
    if (!s)
        return !f->failed;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < min || v > INT32_MAX) {
        bo_error(f, yaml_tree_mapping_get(map, key), "%s: expected an integer", key);
        return false;
    }
    *out = v;
    return true;
}

/* Check every key of map is one of keys (NULL-terminated). */
static void bo_keys(bo_file_t *f, const yaml_tree_node_t *map, const char *const *keys) {
    frugal_err_t err;
    if (pod_file_check_keys(f->path, map, keys, &err) != 0)
        bo_report(f, &err);
}

/* A scalar-to-scalar mapping as generated label entries (labels and node selectors
 * share the layout). */
static size_t bo_string_map(bo_file_t *f, const yaml_tree_node_t *map, const char *key,
                            char ***keys, char ***values) {
    const yaml_tree_node_t *m = yaml_tree_mapping_get(map, key);
    *keys = *values = NULL;
    if (!m || yaml_tree_is_null(m))
        return 0;
    if (m->type != YAML_TREE_MAPPING) {
        bo_error(f, m, "%s: expected a mapping", key);
        return 0;
    }
    size_t n = m->u.mapping.count;
    *keys = bo_alloc(f->arena, (n + 1) * sizeof(char *));
    *values = bo_alloc(f->arena, (n + 1) * sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        const yaml_tree_pair_t *p = &m->u.mapping.items[i];
        if (p->key->type != YAML_TREE_SCALAR || p->value->type != YAML_TREE_SCALAR) {
            bo_error(f, p->key, "%s: expected scalar keys and values", key);
            return 0;
        }
        (*keys)[i] = bo_strdup(f->arena, p->key->u.scalar.text);
        (*values)[i] = bo_strdup(f->arena, p->value->u.scalar.text);
    }
    return n;
}

static const yaml_tree_node_t *bo_sequence(bo_file_t *f, const yaml_tree_node_t *map,
                                           const char *key) {
    const yaml_tree_node_t *s = yaml_tree_mapping_get(map, key);
    if (!s || yaml_tree_is_null(s))
        return NULL;
    if (s->type != YAML_TREE_SEQUENCE) {
        bo_error(f, s, "%s: expected a sequence", key);
        return NULL;
    }
    return s;
}

static bool bo_quantity(bo_file_t *f, const yaml_tree_node_t *map, const char *key, bool milli) {
    const char *s;
    frugal_err_t err;
    if (pod_file_quantity(f->path, map, key, milli, &s, &err) != 0) {
        bo_report(f, &err);
        return false;
    }
    return true;
}

/* The pods of one option (pod_file.h), packed into the arena. An unnamed entry k of
 * option i is named pod-i-k; an entry with count N > 1 becomes N pods named NAME-0 ..
 * NAME-(N-1), as propose names them: distinct pods, as CA sends them, so that the
 * server's memory and the pods an option leaves out count each of them. */
static bool bo_pack_pods(bo_file_t *f, const yaml_tree_node_t *option, size_t i,
                         ProtobufCBinaryData **out, size_t *n_out) {
    pod_file_pods_t entries;
    frugal_err_t err;
    if (pod_file_read_pods(f->path, yaml_tree_mapping_get(option, "pods"), &entries, &err) != 0) {
        bo_report(f, &err);
        return false;
    }
    size_t total = 0;
    for (size_t k = 0; k < entries.count; k++)
        total += (size_t)entries.items[k].count;
    ProtobufCBinaryData *bytes = bo_alloc(f->arena, (total + 1) * sizeof(*bytes));
    size_t at = 0;
    for (size_t k = 0; k < entries.count; k++) {
        pod_file_pod_t *e = &entries.items[k];
        char name[64];
        if (!e->spec.name) {
            snprintf(name, sizeof(name), "pod-%zu-%zu", i, k);
            e->spec.name = name;
        }
        for (long c = 0; c < e->count; c++) {
            uint8_t *packed;
            size_t len;
            /* The quantities were checked by the reader: only memory can run out. */
            if (pod_file_pack_copy(e, c, &packed, &len, &err) != 0)
                cli_die_nomem();
            ProtobufCBinaryData b = {len, bo_alloc(f->arena, len + 1)};
            memcpy(b.data, packed, len);
            free(packed);
            bytes[at++] = b;
        }
    }
    pod_file_pods_free(&entries);
    *out = bytes;
    *n_out = total;
    return true;
}

/* The template node the server builds for such a group (template.h), from the machine
 * type of the builtin catalog or the capacity given. */
static bool bo_pack_node(bo_file_t *f, const yaml_tree_node_t *n, char **group,
                         ProtobufCBinaryData *out) {
    static const char *const keys[] = {"group", "machine_type", "zone", "labels", "taints",
                                       "cpu",   "memory",       "gpu",  NULL};
    bo_keys(f, n, keys);
    const char *id = bo_scalar(f, n, "group", true);
    const char *type = bo_scalar(f, n, "machine_type", false);
    const char *zone = bo_scalar(f, n, "zone", false);
    const char *cpu = bo_scalar(f, n, "cpu", false);
    const char *memory = bo_scalar(f, n, "memory", false);
    const char *gpu = bo_scalar(f, n, "gpu", false);
    if (f->failed || !bo_quantity(f, n, "cpu", true) || !bo_quantity(f, n, "memory", false) ||
        !bo_quantity(f, n, "gpu", false))
        return false;
    const catalog_machine_t *m = type ? catalog_find_machine(type) : NULL;
    if ((!cpu || !memory) && !m) {
        bo_error(f, n, "machine type %s is not in the builtin catalog: give cpu and memory",
                 type ? type : "(none)");
        return false;
    }
    /* The quantities were checked above. */
    machine_type_t mt = {.name = (char *)type, .price = -1.0, .spot_price = -1.0};
    int64_t gpus = 0;
    frugal_err_t err = {0};
    if (cpu)
        quantity_parse_milli(cpu, &mt.cpu_milli, &err);
    else
        mt.cpu_milli = (int64_t)m->cpu * 1000;
    if (memory)
        quantity_parse_value(memory, &mt.memory_bytes, &err);
    else
        mt.memory_bytes = catalog_machine_memory_bytes(m);
    if (gpu && (quantity_parse_value(gpu, &gpus, &err) != 0 || gpus > INT32_MAX)) {
        bo_error(f, yaml_tree_mapping_get(n, "gpu"), "invalid quantity %s", gpu);
        return false;
    }
    mt.gpu = (int32_t)gpus;

    group_spec_t spec = {.id = (char *)id, .zone = (char *)zone, .spot_price = -1.0};
    char **uk, **uv;
    size_t nu = bo_string_map(f, n, "labels", &uk, &uv);
    for (size_t i = 0; i < nu; i++)
        if (kv_list_put(&spec.labels, uk[i], uv[i]) == FRUGAL_ENOMEM)
            cli_die_nomem();
    const yaml_tree_node_t *ts = bo_sequence(f, n, "taints");
    size_t nt = ts ? ts->u.sequence.count : 0;
    for (size_t i = 0; i < nt && !f->failed; i++) {
        static const char *const tkeys[] = {"key", "value", "effect", NULL};
        const yaml_tree_node_t *t = ts->u.sequence.items[i];
        bo_keys(f, t, tkeys);
        if (f->failed)
            break;
        const char *key = bo_scalar(f, t, "key", true);
        const char *value = bo_scalar(f, t, "value", false);
        const char *effect = bo_scalar(f, t, "effect", true);
        if (key && effect && taint_list_put(&spec.taints, key, value ? value : "", effect) != 0)
            cli_die_nomem();
    }

    uint8_t *bytes = NULL;
    size_t len = 0;
    bool ok = !f->failed;
    if (ok && template_build_machine(&mt, &spec, &bytes, &len, &err) != 0)
        cli_die_nomem(); /* nothing else can fail: the spec has no extra resources */
    kv_list_clear(&spec.labels);
    taint_list_clear(&spec.taints);
    if (!ok)
        return false;
    *group = bo_strdup(f->arena, id);
    out->len = len;
    out->data = bo_alloc(f->arena, len + 1);
    memcpy(out->data, bytes, len);
    free(bytes);
    return true;
}

/* Build the request described by root; false (errors printed) when it is invalid. */
static bool bo_build(bo_file_t *f, const yaml_tree_node_t *root, bool legacy, bo_request_t *req) {
    static const char *const keys[] = {"options", "nodes", NULL};
    bo_keys(f, root, keys);
    const yaml_tree_node_t *opts = bo_sequence(f, root, "options");
    const yaml_tree_node_t *nodes = bo_sequence(f, root, "nodes");
    if (f->failed)
        return false;
    if (!opts || opts->u.sequence.count == 0) {
        bo_error(f, root, "no options");
        return false;
    }

    size_t no = opts->u.sequence.count;
    bo_option_t *o = bo_alloc(f->arena, no * sizeof(*o));
    bo_option_t **op = bo_alloc(f->arena, no * sizeof(*op));
    for (size_t i = 0; i < no; i++) {
        static const char *const okeys[] = {"group", "node_count", "debug", "pods", NULL};
        const yaml_tree_node_t *y = opts->u.sequence.items[i];
        bo_keys(f, y, okeys);
        if (f->failed)
            return false;
        bo_option_t init = GRPCPLUGIN__OPTION__INIT;
        o[i] = init;
        op[i] = &o[i];
        const char *id = bo_scalar(f, y, "group", true);
        const char *debug = bo_scalar(f, y, "debug", false);
        long long count = 1;
        if (!id || !bo_int(f, y, "node_count", INT32_MIN, &count))
            return false;
        o[i].nodegroupid = bo_strdup(f->arena, id);
        o[i].nodecount = (int32_t)count;
        o[i].debug = bo_strdup(f->arena, debug ? debug : "");

        ProtobufCBinaryData *bytes;
        size_t total;
        if (!bo_pack_pods(f, y, i, &bytes, &total))
            return false;
        if (legacy) {
            o[i].n_pod = total;
            o[i].pod = bytes;
        } else {
            o[i].n_podbytes = total;
            o[i].podbytes = bytes;
        }
    }
    req->n_options = no;
    req->options = op;

    size_t nn = nodes ? nodes->u.sequence.count : 0;
    Grpcplugin__BestOptionsRequest__NodeMapEntry *m = bo_alloc(f->arena, (nn + 1) * sizeof(*m));
    Grpcplugin__BestOptionsRequest__NodeMapEntry **mp = bo_alloc(f->arena, (nn + 1) * sizeof(*mp));
    Grpcplugin__BestOptionsRequest__NodeBytesMapEntry *b =
        bo_alloc(f->arena, (nn + 1) * sizeof(*b));
    Grpcplugin__BestOptionsRequest__NodeBytesMapEntry **bp =
        bo_alloc(f->arena, (nn + 1) * sizeof(*bp));
    for (size_t i = 0; i < nn; i++) {
        char *group;
        ProtobufCBinaryData data;
        if (!bo_pack_node(f, nodes->u.sequence.items[i], &group, &data))
            return false;
        Grpcplugin__BestOptionsRequest__NodeMapEntry me =
            GRPCPLUGIN__BEST_OPTIONS_REQUEST__NODE_MAP_ENTRY__INIT;
        Grpcplugin__BestOptionsRequest__NodeBytesMapEntry be =
            GRPCPLUGIN__BEST_OPTIONS_REQUEST__NODE_BYTES_MAP_ENTRY__INIT;
        me.key = be.key = group;
        me.value = be.value = data;
        m[i] = me;
        b[i] = be;
        mp[i] = &m[i];
        bp[i] = &b[i];
    }
    if (legacy) {
        req->n_nodemap = nn;
        req->nodemap = mp;
    } else {
        req->n_nodebytesmap = nn;
        req->nodebytesmap = bp;
    }
    return true;
}

/* --- calling and printing --- */

typedef struct bo_row {
    const bo_option_t *option;
    size_t index; /* in the request */
    bool scored;
    bool winner;
    ranking_figures_t figures;
} bo_row_t;

/* Winners first (demand-fit may choose another option than the lowest score: the most
 * pods first, docs/ranking.md), then scored ones by score, then the rest. */
static int bo_row_cmp(const void *a, const void *b) {
    const bo_row_t *x = a, *y = b;
    if (x->winner != y->winner)
        return x->winner ? -1 : 1;
    if (x->scored != y->scored)
        return x->scored ? -1 : 1;
    if (x->scored && !ranking_scores_tie(x->figures.score, y->figures.score))
        return x->figures.score < y->figures.score ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index ? 1 : 0;
}

static int bo_call(rpc_client_t *client, const bo_request_t *req, bo_response_t **resp) {
    grpc_metadata explain = {.key = grpc_slice_from_static_string(WIRE_EXPLAIN_METADATA),
                             .value = grpc_slice_from_static_string("all")};
    return ctl_call_metadata(client, WIRE_EXPANDER_BEST_OPTIONS, &explain, 1, &req->base,
                             &grpcplugin__best_options_response__descriptor,
                             (ProtobufCMessage **)resp);
}

/* rows[i] from the answer's option of request option i: won when its figures follow
 * RANKING_DEBUG_SEPARATOR, or when no answered option has figures (none could be scored,
 * so all are answered unchanged). */
static void bo_read_answer(const bo_request_t *req, const bo_response_t *resp, bo_row_t *rows,
                           bool *taken) {
    bool any_figures = false;
    for (size_t k = 0; k < resp->n_options; k++) {
        const char *debug = resp->options[k]->debug ? resp->options[k]->debug : "";
        if (strstr(debug, RANKING_DEBUG_SEPARATOR) || strstr(debug, RANKING_DEBUG_NOT_CHOSEN))
            any_figures = true;
    }
    for (size_t i = 0; i < req->n_options; i++) {
        rows[i].option = req->options[i];
        rows[i].index = i;
        for (size_t k = 0; k < resp->n_options; k++) {
            const bo_option_t *o = resp->options[k];
            if (taken[k] || strcmp(o->nodegroupid, req->options[i]->nodegroupid) != 0 ||
                o->nodecount != req->options[i]->nodecount)
                continue;
            taken[k] = true;
            const char *debug = o->debug ? o->debug : "";
            if (ranking_parse_figures(debug, &rows[i].figures) == 0) {
                rows[i].scored = rows[i].winner = true;
            } else if (ranking_parse_figures_after(debug, RANKING_DEBUG_NOT_CHOSEN,
                                                   &rows[i].figures) == 0) {
                rows[i].scored = true;
            } else {
                rows[i].winner = !any_figures;
            }
            break;
        }
    }
}

static void bo_print(ctl_format_t format, const bo_row_t *rows, size_t n) {
    if (format == CTL_FORMAT_YAML) {
        printf("options:\n");
        for (size_t i = 0; i < n; i++) {
            const bo_row_t *r = &rows[i];
            cli_yaml_item_kv(2, "group", r->option->nodegroupid);
            printf("    node_count: %d\n    winner: %s\n    scored: %s\n", r->option->nodecount,
                   r->winner ? "true" : "false", r->scored ? "true" : "false");
            if (r->scored) {
                const ranking_figures_t *f = &r->figures;
                printf("    rank: %zu\n    node_price: %f\n    pods_price: %f\n    ratio: %f\n"
                       "    unfitness: %f\n    suppressed: %f\n    score: %f\n",
                       i + 1, f->node_price, f->pods_price, f->ratio, f->unfitness, f->suppressed,
                       f->score);
            }
        }
        return;
    }
    cli_table_t t = {.ncols = 10};
    cli_table_row(&t, "RANK", "GROUP", "NODES", "NODE_PRICE", "PODS_PRICE", "RATIO", "UNFITNESS",
                  "SUPPRESSED", "SCORE", "WINNER");
    for (size_t i = 0; i < n; i++) {
        const bo_row_t *r = &rows[i];
        const ranking_figures_t *f = &r->figures;
        char cell[9][64];
        for (size_t c = 0; c < 9; c++)
            snprintf(cell[c], sizeof(cell[c]), "-");
        if (r->scored) {
            snprintf(cell[0], sizeof(cell[0]), "%zu", i + 1);
            const double figure[6] = {f->node_price, f->pods_price, f->ratio,
                                      f->unfitness,  f->suppressed, f->score};
            for (size_t c = 0; c < 6; c++)
                snprintf(cell[3 + c], sizeof(cell[3 + c]), "%f", figure[c]);
        }
        snprintf(cell[2], sizeof(cell[2]), "%d", r->option->nodecount);
        cli_table_row(&t, cell[0], r->option->nodegroupid, cell[2], cell[3], cell[4], cell[5],
                      cell[6], cell[7], cell[8],
                      r->winner   ? "*"
                      : r->scored ? ""
                                  : "not scored");
    }
    cli_table_flush(&t, 0);
}

static int ctl_verb_best_options(rpc_client_t *client, ctl_format_t format, int argc, char **argv) {
    const char *path = NULL;
    bool legacy = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--legacy") == 0)
            legacy = true;
        else if (!path && argv[i][0] != '-')
            path = argv[i];
        else {
            fprintf(stderr, "usage: frugal ctl best-options FILE [--legacy]\n");
            return 2;
        }
    }
    if (!path) {
        fprintf(stderr, "usage: frugal ctl best-options FILE [--legacy]\n");
        return 2;
    }
    yaml_tree_node_t *root = NULL;
    frugal_err_t err;
    int rc = pod_file_load(path, &root, &err);
    if (rc == FRUGAL_ENOMEM)
        cli_die_nomem();
    if (rc != 0) {
        fprintf(stderr, "%s%s\n", rc == FRUGAL_EIO ? "frugal ctl: " : "", err.msg);
        return 2;
    }
    if (!root) {
        fprintf(stderr, "%s: empty file\n", path);
        return 2;
    }

    arena_t arena = ARENA_INIT;
    bo_file_t f = {path, &arena, false};
    bo_request_t req = GRPCPLUGIN__BEST_OPTIONS_REQUEST__INIT;
    bo_row_t *rows = NULL;
    int status = 2;
    if (!bo_build(&f, root, legacy, &req))
        goto done;

    bo_response_t *resp = NULL;
    status = 1;
    if (bo_call(client, &req, &resp) != 0)
        goto done;
    rows = cli_xcalloc(req.n_options ? req.n_options : 1, sizeof(*rows));
    bool *taken = cli_xcalloc(resp->n_options ? resp->n_options : 1, sizeof(*taken));
    bo_read_answer(&req, resp, rows, taken);
    free(taken);
    grpcplugin__best_options_response__free_unpacked(resp, NULL);
    qsort(rows, req.n_options, sizeof(*rows), bo_row_cmp);
    bo_print(format, rows, req.n_options);
    status = 0;

done:
    free(rows);
    arena_free(&arena);
    yaml_tree_free(root);
    return status;
}

const ctl_verb_t ctl_verbs_best_options[] = {
    {"best-options", "FILE [--legacy]", ctl_verb_best_options},
};
const size_t ctl_verbs_best_options_count =
    sizeof(ctl_verbs_best_options) / sizeof(*ctl_verbs_best_options);
