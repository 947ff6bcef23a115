/* `frugal ctl best-options FILE [--legacy]`: build a BestOptionsRequest from a small
 * YAML description, ask the server's expander, and print every option's figures
 * ranked, the winner(s) marked.
 *
 * FILE:
 *   options:
 *     - group: pool-a            # nodeGroupId
 *       node_count: 2
 *       debug: "from CA"         # optional
 *       pods:                    # each entry is `count` identical pods
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
 * The server answers only the winners; the figures of the others come from one more
 * call per option (an option's score does not depend on the other options). --legacy
 * sends pods under `pod = 4` and templates under `nodeMap = 2`. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "cli.h"
#include "ctl.h"
#include "expander.pb-c.h"
#include "pod_spec.h"
#include "quantity.h"
#include "ranking.h"
#include "template.h"
#include "yaml_tree.h"

#define BO_METHOD "/grpcplugin.Expander/BestOptions"

typedef Grpcplugin__BestOptionsRequest bo_request_t;
typedef Grpcplugin__BestOptionsResponse bo_response_t;
typedef Grpcplugin__Option bo_option_t;

/* --- a bump allocator: everything built for one run is freed at once --- */

typedef struct bo_block {
    struct bo_block *next;
    size_t used, cap;
    max_align_t data[];
} bo_block_t;

typedef struct bo_arena {
    bo_block_t *head;
} bo_arena_t;

static void bo_die_nomem(void) {
    fprintf(stderr, "frugal ctl: out of memory\n");
    exit(1);
}

static void *bo_alloc(bo_arena_t *a, size_t n) {
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    if (!a->head || a->head->cap - a->head->used < n) {
        size_t cap = n > 16384 ? n : 16384;
        bo_block_t *b = malloc(sizeof(*b) + cap);
        if (!b)
            bo_die_nomem();
        b->next = a->head;
        b->used = 0;
        b->cap = cap;
        a->head = b;
    }
    void *p = (char *)a->head->data + a->head->used;
    a->head->used += n;
    memset(p, 0, n);
    return p;
}

static char *bo_strdup(bo_arena_t *a, const char *s) {
    size_t n = strlen(s) + 1;
    char *p = bo_alloc(a, n);
    memcpy(p, s, n);
    return p;
}

static void bo_arena_free(bo_arena_t *a) {
    for (bo_block_t *b = a->head, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    a->head = NULL;
}

/* --- reading FILE --- */

typedef struct bo_file {
    const char *path;
    bo_arena_t *arena;
    bool failed;
} bo_file_t;

static void bo_error(bo_file_t *f, const yaml_tree_node_t *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Report FILE:LINE:COL: message and mark the file failed. */
static void bo_error(bo_file_t *f, const yaml_tree_node_t *at, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s:%d:%d: ", f->path, at ? at->line : 0, at ? at->column : 0);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    f->failed = true;
}

static const char *bo_scalar(bo_file_t *f, const yaml_tree_node_t *map, const char *key,
                             bool required) {
    const yaml_tree_node_t *v = yaml_tree_mapping_get(map, key);
    if (!v) {
        if (required)
            bo_error(f, map, "missing key %s", key);
        return NULL;
    }
    if (v->type != YAML_TREE_SCALAR) {
        bo_error(f, v, "%s: expected a scalar", key);
        return NULL;
    }
    return v->u.scalar.text;
}

static bool bo_int(bo_file_t *f, const yaml_tree_node_t *map, const char *key, long long min,
                   long long *out) {
    const char *s = bo_scalar(f, map, key, false);
    if (!s)
        return true;
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
    if (map->type != YAML_TREE_MAPPING) {
        bo_error(f, map, "expected a mapping");
        return;
    }
    for (size_t i = 0; i < map->u.mapping.count; i++) {
        const yaml_tree_node_t *k = map->u.mapping.items[i].key;
        bool known = false;
        for (size_t j = 0; keys[j] && k->type == YAML_TREE_SCALAR; j++)
            known = known || strcmp(k->u.scalar.text, keys[j]) == 0;
        if (!known)
            bo_error(f, k, "unknown key %s", k->type == YAML_TREE_SCALAR ? k->u.scalar.text : "?");
    }
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
    const char *s = bo_scalar(f, map, key, false);
    int64_t v;
    frugal_err_t err = {0};
    if (!s)
        return true;
    if ((milli ? quantity_parse_milli(s, &v, &err) : quantity_parse_value(s, &v, &err)) != 0 ||
        v < 0) {
        bo_error(f, yaml_tree_mapping_get(map, key), "invalid quantity %s", s);
        return false;
    }
    return true;
}

static ProtobufCBinaryData bo_pack_pod(bo_file_t *f, const yaml_tree_node_t *p, const char *name) {
    static const char *const keys[] = {"cpu",         "memory", "gpu",  "node_selector",
                                       "tolerations", "count",  "name", NULL};
    ProtobufCBinaryData out = {0, NULL};
    bo_keys(f, p, keys);
    if (f->failed || !bo_quantity(f, p, "cpu", true) || !bo_quantity(f, p, "memory", false) ||
        !bo_quantity(f, p, "gpu", false))
        return out;

    pod_spec_t spec = {.name = name};
    spec.cpu = bo_scalar(f, p, "cpu", false);
    spec.memory = bo_scalar(f, p, "memory", false);
    spec.gpu = bo_scalar(f, p, "gpu", false);
    char **sk, **sv;
    size_t ns = bo_string_map(f, p, "node_selector", &sk, &sv);
    for (size_t i = 0; i < ns; i++)
        if (kv_list_put(&spec.node_selector, sk[i], sv[i]) == FRUGAL_ENOMEM)
            bo_die_nomem();

    const yaml_tree_node_t *tols = bo_sequence(f, p, "tolerations");
    size_t nt = tols ? tols->u.sequence.count : 0;
    pod_toleration_t *tol = bo_alloc(f->arena, (nt + 1) * sizeof(*tol));
    for (size_t i = 0; i < nt; i++) {
        static const char *const tkeys[] = {"key", "operator", "value", "effect", NULL};
        const yaml_tree_node_t *t = tols->u.sequence.items[i];
        bo_keys(f, t, tkeys);
        if (f->failed)
            break;
        tol[i].key = bo_scalar(f, t, "key", false);
        tol[i].operator_ = bo_scalar(f, t, "operator", false);
        tol[i].value = bo_scalar(f, t, "value", false);
        tol[i].effect = bo_scalar(f, t, "effect", false);
    }
    spec.tolerations = tol;
    spec.n_tolerations = nt;

    uint8_t *bytes;
    size_t len;
    frugal_err_t err;
    if (!f->failed) {
        /* The quantities were checked above: only memory can run out. */
        if (pod_spec_pack(&spec, &bytes, &len, &err) != 0)
            bo_die_nomem();
        out.len = len;
        out.data = bo_alloc(f->arena, len + 1);
        memcpy(out.data, bytes, len);
        free(bytes);
    }
    kv_list_clear(&spec.node_selector);
    return out;
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
            bo_die_nomem();
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
            bo_die_nomem();
    }

    uint8_t *bytes = NULL;
    size_t len = 0;
    bool ok = !f->failed;
    if (ok && template_build_machine(&mt, &spec, &bytes, &len, &err) != 0)
        bo_die_nomem(); /* nothing else can fail: the spec has no extra resources */
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

        const yaml_tree_node_t *pods = bo_sequence(f, y, "pods");
        size_t total = 0, np = pods ? pods->u.sequence.count : 0;
        long long *counts = bo_alloc(f->arena, (np + 1) * sizeof(*counts));
        for (size_t k = 0; k < np; k++) {
            counts[k] = 1;
            if (!bo_int(f, pods->u.sequence.items[k], "count", 0, &counts[k]))
                return false;
            total += (size_t)counts[k];
        }
        ProtobufCBinaryData *bytes = bo_alloc(f->arena, (total + 1) * sizeof(*bytes));
        size_t at = 0;
        for (size_t k = 0; k < np; k++) {
            const yaml_tree_node_t *p = pods->u.sequence.items[k];
            const char *pname = bo_scalar(f, p, "name", false);
            char name[256];
            snprintf(name, sizeof(name), "%s", pname ? pname : "");
            if (!pname)
                snprintf(name, sizeof(name), "pod-%zu-%zu", i, k);
            ProtobufCBinaryData b = bo_pack_pod(f, p, bo_strdup(f->arena, name));
            if (f->failed)
                return false;
            for (long long c = 0; c < counts[k]; c++)
                bytes[at++] = b;
        }
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

static int bo_row_cmp(const void *a, const void *b) {
    const bo_row_t *x = a, *y = b;
    if (x->scored != y->scored)
        return x->scored ? -1 : 1;
    if (x->scored && !ranking_scores_tie(x->figures.score, y->figures.score))
        return x->figures.score < y->figures.score ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index ? 1 : 0;
}

static int bo_call(rpc_client_t *client, const bo_request_t *req, bo_response_t **resp) {
    return ctl_call(client, BO_METHOD, &req->base, &grpcplugin__best_options_response__descriptor,
                    (ProtobufCMessage **)resp);
}

static void bo_print(ctl_format_t format, const bo_row_t *rows, size_t n) {
    if (format == CTL_FORMAT_YAML) {
        printf("options:\n");
        for (size_t i = 0; i < n; i++) {
            const bo_row_t *r = &rows[i];
            printf("  - group: ");
            cli_yaml_str(r->option->nodegroupid);
            printf("\n    node_count: %d\n    winner: %s\n    scored: %s\n", r->option->nodecount,
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
    static const char *const head[] = {"RANK",       "GROUP", "NODES",     "NODE_PRICE",
                                       "PODS_PRICE", "RATIO", "UNFITNESS", "SUPPRESSED",
                                       "SCORE",      "WINNER"};
    enum { COLS = 10 };
    char(*cells)[COLS][64] = calloc(n + 1, sizeof(*cells));
    if (!cells) {
        fprintf(stderr, "frugal ctl: out of memory\n");
        return;
    }
    size_t width[COLS] = {0};
    for (size_t c = 0; c < COLS; c++)
        snprintf(cells[0][c], sizeof(cells[0][c]), "%s", head[c]);
    for (size_t i = 0; i < n; i++) {
        const bo_row_t *r = &rows[i];
        char(*row)[64] = cells[i + 1];
        const ranking_figures_t *f = &r->figures;
        if (r->scored)
            snprintf(row[0], 64, "%zu", i + 1);
        else
            snprintf(row[0], 64, "-");
        snprintf(row[1], 64, "%s", r->option->nodegroupid);
        snprintf(row[2], 64, "%d", r->option->nodecount);
        if (r->scored) {
            snprintf(row[3], 64, "%f", f->node_price);
            snprintf(row[4], 64, "%f", f->pods_price);
            snprintf(row[5], 64, "%f", f->ratio);
            snprintf(row[6], 64, "%f", f->unfitness);
            snprintf(row[7], 64, "%f", f->suppressed);
            snprintf(row[8], 64, "%f", f->score);
        } else {
            for (size_t c = 3; c < 9; c++)
                snprintf(row[c], 64, "-");
        }
        snprintf(row[9], 64, "%s", r->winner ? "*" : r->scored ? "" : "not scored");
    }
    for (size_t i = 0; i <= n; i++)
        for (size_t c = 0; c < COLS; c++)
            if (strlen(cells[i][c]) > width[c])
                width[c] = strlen(cells[i][c]);
    for (size_t i = 0; i <= n; i++) {
        for (size_t c = 0; c < COLS; c++) {
            if (c == COLS - 1)
                printf("%s\n", cells[i][c]);
            else
                printf("%-*s  ", (int)width[c], cells[i][c]);
        }
    }
    free(cells);
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
    size_t len = 0;
    char *text = NULL;
    int err = cli_read_file(path, &text, &len);
    if (err != 0) {
        fprintf(stderr, "frugal ctl: %s: %s\n", path, strerror(err));
        return 2;
    }
    yaml_tree_node_t *root = NULL;
    yaml_tree_error_t yerr;
    int rc = yaml_tree_load(text, len, &root, &yerr);
    free(text);
    if (rc != 0) {
        fprintf(stderr, "%s:%d:%d: %s\n", path, yerr.line, yerr.column, yerr.message);
        return 2;
    }
    if (!root) {
        fprintf(stderr, "%s: empty file\n", path);
        return 2;
    }

    bo_arena_t arena = {0};
    bo_file_t f = {path, &arena, false};
    bo_request_t req = GRPCPLUGIN__BEST_OPTIONS_REQUEST__INIT;
    bo_row_t *rows = NULL;
    int status = 2;
    if (!bo_build(&f, root, legacy, &req))
        goto done;

    /* The answer, then every option alone for its figures. */
    bo_response_t *resp = NULL;
    status = 1;
    if (bo_call(client, &req, &resp) != 0)
        goto done;
    rows = calloc(req.n_options, sizeof(*rows));
    if (!rows) {
        grpcplugin__best_options_response__free_unpacked(resp, NULL);
        goto done;
    }
    for (size_t i = 0; i < req.n_options; i++) {
        rows[i].option = req.options[i];
        rows[i].index = i;
        for (size_t k = 0; k < resp->n_options; k++)
            if (strcmp(resp->options[k]->nodegroupid, req.options[i]->nodegroupid) == 0)
                rows[i].winner = true;
    }
    grpcplugin__best_options_response__free_unpacked(resp, NULL);

    for (size_t i = 0; i < req.n_options; i++) {
        bo_request_t one = req;
        one.n_options = 1;
        one.options = &req.options[i];
        if (bo_call(client, &one, &resp) != 0)
            goto done;
        if (resp->n_options == 1 &&
            ranking_parse_figures(resp->options[0]->debug, &rows[i].figures) == 0)
            rows[i].scored = true;
        grpcplugin__best_options_response__free_unpacked(resp, NULL);
    }
    qsort(rows, req.n_options, sizeof(*rows), bo_row_cmp);
    bo_print(format, rows, req.n_options);
    status = 0;

done:
    free(rows);
    bo_arena_free(&arena);
    yaml_tree_free(root);
    return status;
}

const ctl_verb_t ctl_verbs_best_options[] = {
    {"best-options", "FILE [--legacy]", ctl_verb_best_options},
};
const size_t ctl_verbs_best_options_count =
    sizeof(ctl_verbs_best_options) / sizeof(*ctl_verbs_best_options);
