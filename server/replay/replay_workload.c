/* Replay workloads: a YAML mix of pod families or a JSON-lines trace (replay.h,
 * docs/replay.md). Every rejected value names its position. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "fit.h"
#include "kube_json.h"
#include "pod.h"
#include "replay.h"
#include "yaml_tree.h"

static int replay__fail(frugal_err_t *err, const char *path, const yaml_tree_node_t *node,
                        const char *key, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* FRUGAL_EINVAL with `path:LINE:COL: key: message`. */
static int replay__fail(frugal_err_t *err, const char *path, const yaml_tree_node_t *node,
                        const char *key, const char *fmt, ...) {
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (node != NULL)
        return frugal_err_set(err, FRUGAL_EINVAL, "%s:%d:%d: %s%s%s", path, node->line,
                              node->column, key ? key : "", key ? ": " : "", msg);
    return frugal_err_set(err, FRUGAL_EINVAL, "%s: %s%s%s", path, key ? key : "", key ? ": " : "",
                          msg);
}

/* A number, quoted or not (scripts often quote them: "t": "60"). */
static bool replay__number(const yaml_tree_node_t *n, double *out) {
    if (n->type != YAML_TREE_SCALAR || n->u.scalar.len == 0 ||
        isspace((unsigned char)n->u.scalar.text[0]) ||
        strpbrk(n->u.scalar.text, "xX") != NULL) /* strtod's hexadecimal is no JSON number */
        return false;
    char *end;
    errno = 0;
    double v = strtod(n->u.scalar.text, &end);
    if (*end != '\0' || errno == ERANGE || !isfinite(v))
        return false;
    *out = v;
    return true;
}

/* REPLAY__LIFETIME is seconds of at least 1 s, said before rounding (500ms is refused,
 * not taken as 1 s). */
typedef enum {
    REPLAY__CPU,
    REPLAY__BYTES,
    REPLAY__COUNT,
    REPLAY__SECONDS,
    REPLAY__LIFETIME
} replay__unit_t;

/* A count (GPUs, pods) is a whole number: "1.5" or "2k" is no count. */
static bool replay__whole(const char *s) {
    if (*s == '\0')
        return false;
    for (; *s != '\0'; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* One scalar in unit: a quantity (cpu in milli, bytes, a count) or a duration (a Go
 * duration or a number of seconds). Negative values are refused. */
static int replay__scalar(const char *path, const yaml_tree_node_t *n, const char *key,
                          replay__unit_t unit, int64_t *out, frugal_err_t *err) {
    if (n->type != YAML_TREE_SCALAR)
        return replay__fail(err, path, n, key, "expected a scalar, got %s",
                            yaml_tree_type_name(n->type));
    const char *s = n->u.scalar.text;
    frugal_err_t e;
    frugal_err_clear(&e);
    if (s[0] == '-')
        return replay__fail(err, path, n, key, "must not be negative, got \"%s\"", s);
    int rc;
    if (unit == REPLAY__SECONDS || unit == REPLAY__LIFETIME) {
        double v;
        int64_t ns;
        if (!replay__number(n, &v)) {
            if ((rc = duration_parse(s, &ns, &e)) != 0)
                return replay__fail(err, path, n, key, "%s", e.msg);
            v = (double)ns / DURATION_NS_PER_SEC;
        }
        if (v > REPLAY_SECONDS_MAX)
            return replay__fail(err, path, n, key, "must be at most %d days, got \"%s\"",
                                REPLAY_SECONDS_MAX / 86400, s);
        if (unit == REPLAY__LIFETIME && v < 1)
            return replay__fail(err, path, n, key, "must be at least 1s, got \"%s\"", s);
        *out = (int64_t)ceil(v);
        return 0;
    } else if (unit == REPLAY__COUNT && !replay__whole(s)) {
        return replay__fail(err, path, n, key, "expected a whole number, got \"%s\"", s);
    } else if (unit == REPLAY__CPU) {
        rc = quantity_parse_milli(s, out, &e);
    } else {
        rc = quantity_parse_value(s, out, &e);
    }
    if (rc != 0)
        return replay__fail(err, path, n, key, "%s", e.msg);
    return 0;
}

/* A value or a range: `1`, or `[min, max]` with min <= max. */
static int replay__range(const char *path, const yaml_tree_node_t *n, const char *key,
                         replay__unit_t unit, replay_range_t *out, frugal_err_t *err) {
    if (n->type == YAML_TREE_SEQUENCE) {
        if (n->u.sequence.count != 2)
            return replay__fail(err, path, n, key, "expected [min, max], got %zu items",
                                n->u.sequence.count);
        int rc = replay__scalar(path, n->u.sequence.items[0], key, unit, &out->min, err);
        if (rc == 0)
            rc = replay__scalar(path, n->u.sequence.items[1], key, unit, &out->max, err);
        if (rc == 0 && out->min > out->max)
            rc = replay__fail(err, path, n, key, "min is above max");
        return rc;
    }
    int rc = replay__scalar(path, n, key, unit, &out->min, err);
    out->max = out->min;
    return rc;
}

static int replay__double(const char *path, const yaml_tree_node_t *n, const char *key, double lo,
                          double hi, double *out, frugal_err_t *err) {
    if (!replay__number(n, out))
        return replay__fail(err, path, n, key, "expected a number");
    if (*out < 0)
        return replay__fail(err, path, n, key, "must not be negative, got %s", n->u.scalar.text);
    if (*out < lo || *out > hi)
        return replay__fail(err, path, n, key, "must be within [%g, %g], got %s", lo, hi,
                            n->u.scalar.text);
    return 0;
}

static int replay__family(const char *path, const yaml_tree_node_t *n, size_t index,
                          replay_family_t *f, frugal_err_t *err) {
    char key[96];
    if (n->type != YAML_TREE_MAPPING)
        return replay__fail(err, path, n, "families", "item %zu: expected a mapping", index);
    f->weight = 1.0;
    f->burst = (replay_range_t){1, 1};
    const yaml_tree_node_t *pod = NULL;
    bool have_cpu = false, have_mem = false, have_life = false;
    for (size_t i = 0; i < n->u.mapping.count; i++) {
        const yaml_tree_node_t *k = n->u.mapping.items[i].key, *v = n->u.mapping.items[i].value;
        const char *name = k->type == YAML_TREE_SCALAR ? k->u.scalar.text : "";
        snprintf(key, sizeof(key), "families[%zu].%s", index, name);
        int rc = 0;
        if (strcmp(name, "name") == 0) {
            if (v->type != YAML_TREE_SCALAR || v->u.scalar.len == 0)
                return replay__fail(err, path, v, key, "expected a non-empty string");
            free(f->name);
            if ((f->name = strdup(v->u.scalar.text)) == NULL)
                return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        } else if (strcmp(name, "weight") == 0) {
            rc = replay__double(path, v, key, 1e-9, 1e9, &f->weight, err);
        } else if (strcmp(name, "cpu") == 0) {
            rc = replay__range(path, v, key, REPLAY__CPU, &f->cpu_milli, err);
            have_cpu = true;
        } else if (strcmp(name, "memory") == 0) {
            rc = replay__range(path, v, key, REPLAY__BYTES, &f->memory_bytes, err);
            have_mem = true;
        } else if (strcmp(name, "gpu") == 0) {
            rc = replay__range(path, v, key, REPLAY__COUNT, &f->gpu, err);
        } else if (strcmp(name, "lifetime") == 0) {
            rc = replay__range(path, v, key, REPLAY__LIFETIME, &f->lifetime_s, err);
            have_life = true;
        } else if (strcmp(name, "burst") == 0) {
            rc = replay__range(path, v, key, REPLAY__COUNT, &f->burst, err);
            if (rc == 0 && (f->burst.min < 1 || f->burst.max > REPLAY_INITIAL_MAX))
                rc = replay__fail(err, path, v, key, "must be within [1, %d]", REPLAY_INITIAL_MAX);
        } else if (strcmp(name, "initial") == 0) {
            rc = replay__scalar(path, v, key, REPLAY__COUNT, &f->initial, err);
            if (rc == 0 && f->initial > REPLAY_INITIAL_MAX)
                rc = replay__fail(err, path, v, key, "must be at most %d", REPLAY_INITIAL_MAX);
        } else if (strcmp(name, "owner") == 0) {
            if (v->type != YAML_TREE_SCALAR || v->u.scalar.len == 0)
                return replay__fail(err, path, v, key, "expected a controller kind");
            if (pod_kind_per_node(v->u.scalar.text)) /* as a trace leaves such pods out */
                return replay__fail(err, path, v, key,
                                    "%s pods come with every node, whatever the strategy: "
                                    "they are no family of a mix",
                                    v->u.scalar.text);
            free(f->owner);
            if ((f->owner = strdup(v->u.scalar.text)) == NULL)
                return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        } else if (strcmp(name, "pod") == 0) {
            if (v->type != YAML_TREE_MAPPING)
                return replay__fail(err, path, v, key, "expected a Pod mapping");
            pod = v;
        } else {
            return replay__fail(err, path, k, key, "unknown family field");
        }
        if (rc != 0)
            return rc;
    }
    snprintf(key, sizeof(key), "families[%zu]", index);
    if (f->name == NULL)
        return replay__fail(err, path, n, key, "name is required");
    if (!have_cpu || !have_mem || !have_life)
        return replay__fail(err, path, n, key, "cpu, memory and lifetime are required");
    if (f->owner == NULL && (f->owner = strdup("ReplicaSet")) == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    /* The Pod fragment (nodeSelector, affinity, tolerations) the family's pods share. */
    yaml_tree_node_t empty = {.type = YAML_TREE_MAPPING, .line = n->line, .column = n->column};
    kube_json_error_t je;
    snprintf(key, sizeof(key), "families[%zu].pod", index);
    int rc = kube_json_pod_from_tree(pod ? pod : &empty, key, &f->pod, &je);
    if (rc == FRUGAL_EINVAL)
        return frugal_err_set(err, rc, "%s:%d:%d: %s", path, je.line, je.column, je.message);
    if (rc != 0)
        return frugal_err_set(err, rc, "out of memory");
    return 0;
}

/* Whether the n bytes at name are one of a mix's top-level keys. */
static bool replay__mix_key(const char *name, size_t n) {
    static const char *const keys[] = {"families", "arrivals_per_hour", "diurnal", "description"};
    for (size_t k = 0; k < sizeof(keys) / sizeof(*keys); k++)
        if (n == strlen(keys[k]) && memcmp(name, keys[k], n) == 0)
            return true;
    return false;
}

static int replay__load_mix(const char *path, const char *text, size_t len, replay_workload_t *w,
                            frugal_err_t *err) {
    yaml_tree_node_t *root = NULL;
    yaml_tree_error_t ye;
    char why[sizeof(ye.message) + 40];
    if (yaml_tree_load(text, len, &root, &ye) != 0)
        return frugal_err_set(err, FRUGAL_EINVAL, "%s:%d:%d: %s", path, ye.line, ye.column,
                              yaml_tree_error_text(&ye, false, why, sizeof(why)));
    int rc = 0;
    const yaml_tree_node_t *fams = NULL, *rate = NULL;
    if (root == NULL || root->type != YAML_TREE_MAPPING) {
        rc = replay__fail(err, path, root, NULL, "a workload mix is a mapping");
        goto done;
    }
    for (size_t i = 0; i < root->u.mapping.count && rc == 0; i++) {
        const yaml_tree_node_t *k = root->u.mapping.items[i].key,
                               *v = root->u.mapping.items[i].value;
        const char *name = k->type == YAML_TREE_SCALAR ? k->u.scalar.text : "";
        if (strcmp(name, "families") == 0) {
            fams = v;
        } else if (strcmp(name, "arrivals_per_hour") == 0) {
            rate = v;
            rc = replay__double(path, v, name, 1e-9, 1e7, &w->arrivals_per_hour, err);
        } else if (strcmp(name, "diurnal") == 0) {
            rc = replay__double(path, v, name, 0, 0.99, &w->diurnal, err);
        } else if (!replay__mix_key(name, strlen(name))) { /* description: free text */
            rc = replay__fail(err, path, k, name, "unknown key");
        }
    }
    if (rc != 0)
        goto done;
    if (rate == NULL) {
        rc = replay__fail(err, path, root, "arrivals_per_hour", "is required");
        goto done;
    }
    if (fams == NULL || fams->type != YAML_TREE_SEQUENCE || fams->u.sequence.count == 0) {
        rc = replay__fail(err, path, fams ? fams : root, "families",
                          "at least one family is required");
        goto done;
    }
    w->families = calloc(fams->u.sequence.count, sizeof(*w->families));
    if (w->families == NULL) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < fams->u.sequence.count && rc == 0; i++) {
        w->families_count++;
        rc = replay__family(path, fams->u.sequence.items[i], i, &w->families[i], err);
    }
done:
    yaml_tree_free(root);
    return rc;
}

/* One trace line's "t" or "duration": seconds (a number) or a Go duration. */
static int replay__trace_time(const char *path, size_t line, const yaml_tree_node_t *obj,
                              const char *key, int64_t *out, frugal_err_t *err) {
    const yaml_tree_node_t *v = yaml_tree_mapping_get(obj, key);
    if (v == NULL)
        return frugal_err_set(err, FRUGAL_EINVAL, "%s:%zu:%d: \"%s\" is required", path, line,
                              obj->column, key);
    frugal_err_t e;
    frugal_err_clear(&e);
    if (replay__scalar("", v, key, REPLAY__SECONDS, out, &e) != 0) {
        /* e.msg is ":1:COL: key: reason" within the line's own text. */
        const char *col = strchr(e.msg + 1, ':');
        return frugal_err_set(err, FRUGAL_EINVAL, "%s:%zu%s", path, line, col ? col : e.msg);
    }
    return 0;
}

static int replay__trace_cmp(const void *a, const void *b) {
    const replay_trace_pod_t *x = a, *y = b;
    if (x->t_s != y->t_s)
        return (x->t_s > y->t_s) - (x->t_s < y->t_s);
    return (x->line > y->line) - (x->line < y->line);
}

/* The code unit of the six-byte escape \uXXXX at s, -1 when there is none. */
static long replay__escape_unit(const char *s) {
    if (s[0] != '\\' || s[1] != 'u')
        return -1;
    long v = 0;
    for (int i = 2; i < 6; i++) {
        int c = (unsigned char)s[i];
        int d = isdigit(c) ? c - '0' : isxdigit(c) ? tolower(c) - 'a' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* Surrogate pairs (\ud83d\ude00, as Python's json.dumps writes characters beyond
 * U+FFFF) as the UTF-8 bytes of their character: the YAML parser that reads the line
 * refuses them. Into out (len + 1 bytes); returns its length. Other escapes stay as they
 * are. */
static size_t replay__join_surrogates(const char *s, size_t len, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        long hi = i + 12 <= len ? replay__escape_unit(s + i) : -1;
        long lo = hi >= 0xD800 && hi <= 0xDBFF ? replay__escape_unit(s + i + 6) : -1;
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
            long cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
            out[o++] = (char)(0xF0 | (cp >> 18));
            out[o++] = (char)(0x80 | ((cp >> 12) & 0x3F));
            out[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            out[o++] = (char)(0x80 | (cp & 0x3F));
            i += 11;
            continue;
        }
        out[o++] = s[i];
        if (s[i] == '\\' && i + 1 < len) /* an escaped character, an escaped backslash included */
            out[o++] = s[++i];
    }
    out[o] = '\0';
    return o;
}

static int replay__load_trace(const char *path, const char *text, size_t len, replay_workload_t *w,
                              frugal_err_t *err) {
    size_t cap = 0, line = 0;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl : end;
        line++;
        const char *q = p;
        while (q < stop && isspace((unsigned char)*q))
            q++;
        const char *at = p;
        p = nl ? nl + 1 : end;
        if (q == stop || *q == '#')
            continue; /* a blank line or a comment */
        yaml_tree_node_t *obj = NULL;
        yaml_tree_error_t ye;
        size_t n = (size_t)(stop - at);
        bool escapes = false;
        for (const char *c = at; c + 1 < stop && !escapes; c++)
            escapes = c[0] == '\\' && c[1] == 'u';
        bool tabs = memchr(at, '\t', (size_t)(q - at)) != NULL;
        char *copy = escapes || tabs ? malloc(n + 1) : NULL;
        if (copy != NULL) {
            if (escapes)
                n = replay__join_surrogates(at, n, copy);
            else
                memcpy(copy, at, n);
            /* A tab before the object is JSON's whitespace, not YAML's indentation: a space
             * in its place keeps the columns. */
            for (size_t k = 0; k < (size_t)(q - at); k++)
                copy[k] = copy[k] == '\t' ? ' ' : copy[k];
        }
        int loaded = yaml_tree_load(copy != NULL ? copy : at, n, &obj, &ye);
        free(copy);
        if (loaded != 0) { /* the parser saw this one line */
            char problem[sizeof(ye.message) + 40];
            return frugal_err_set(err, FRUGAL_EINVAL,
                                  "%s:%zu:%d: malformed trace line: %s (a trace holds one JSON "
                                  "object per line: `jq -c` writes them so)",
                                  path, line, ye.column,
                                  yaml_tree_error_text(&ye, true, problem, sizeof(problem)));
        }
        int rc = 0;
        if (obj == NULL || obj->type != YAML_TREE_MAPPING) {
            rc = frugal_err_set(err, FRUGAL_EINVAL,
                                "%s:%zu:%d: malformed trace line: expected {\"t\", \"pod\", "
                                "\"duration\"}",
                                path, line, obj != NULL ? obj->column : (int)(q - at) + 1);
            goto next;
        }
        for (size_t i = 0; i < obj->u.mapping.count; i++) {
            const yaml_tree_node_t *key = obj->u.mapping.items[i].key;
            if (key->type != YAML_TREE_SCALAR) {
                rc = frugal_err_set(err, FRUGAL_EINVAL,
                                    "%s:%zu:%d: malformed trace line: a field name is %s, not "
                                    "a string",
                                    path, line, key->column, yaml_tree_type_name(key->type));
                goto next;
            }
            const char *k = key->u.scalar.text;
            if (strcmp(k, "t") != 0 && strcmp(k, "pod") != 0 && strcmp(k, "duration") != 0) {
                rc = frugal_err_set(err, FRUGAL_EINVAL, "%s:%zu:%d: unknown trace field \"%s\"",
                                    path, line, obj->u.mapping.items[i].key->column, k);
                goto next;
            }
            for (size_t j = 0; j < i; j++)
                if (strcmp(obj->u.mapping.items[j].key->u.scalar.text, k) == 0) {
                    rc = frugal_err_set(err, FRUGAL_EINVAL,
                                        "%s:%zu:%d: duplicate trace field \"%s\"", path, line,
                                        obj->u.mapping.items[i].key->column, k);
                    goto next;
                }
        }
        if (w->trace_count == cap) {
            size_t ncap = cap ? cap * 2 : 256;
            replay_trace_pod_t *np = realloc(w->trace, ncap * sizeof(*np));
            if (np == NULL) {
                rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
                goto next;
            }
            w->trace = np;
            cap = ncap;
        }
        replay_trace_pod_t *tp = &w->trace[w->trace_count];
        memset(tp, 0, sizeof(*tp));
        tp->line = line;
        if ((rc = replay__trace_time(path, line, obj, "t", &tp->t_s, err)) != 0 ||
            (rc = replay__trace_time(path, line, obj, "duration", &tp->duration_s, err)) != 0)
            goto next;
        const yaml_tree_node_t *pod = yaml_tree_mapping_get(obj, "pod");
        kube_json_error_t je;
        if (pod == NULL) {
            rc = frugal_err_set(err, FRUGAL_EINVAL, "%s:%zu:%d: \"pod\" is required", path, line,
                                obj->column);
            goto next;
        }
        if ((rc = kube_json_pod_from_tree(pod, "pod", &tp->pod, &je)) != 0) {
            if (rc == FRUGAL_EINVAL)
                frugal_err_set(err, rc, "%s:%zu:%d: %s", path, line, je.column, je.message);
            else
                frugal_err_set(err, rc, "out of memory");
            goto next;
        }
        char why[160];
        if (!fit_node_affinity_valid(tp->pod->spec, why, sizeof(why))) {
            k8s__io__api__core__v1__pod__free_unpacked(tp->pod, NULL);
            tp->pod = NULL;
            rc = frugal_err_set(err, FRUGAL_EINVAL, "%s:%zu:%d: pod: %s", path, line, pod->column,
                                why);
            goto next;
        }
        if (pod_kind_per_node(kube_pod_controller_kind(tp->pod))) {
            k8s__io__api__core__v1__pod__free_unpacked(tp->pod, NULL);
            tp->pod = NULL;
            w->trace_per_node++;
            goto next;
        }
        w->trace_count++;
        frugal_err_t pe;
        frugal_err_clear(&pe);
        if ((rc = pod_effective_request(tp->pod, &tp->request, &pe)) != 0)
            frugal_err_set(err, rc, "%s:%zu:%d: %s", path, line, pod->column, pe.msg);
        /* A pod of duration 0 still waits for a node: the trace lasts past its arrival. */
        int64_t until = tp->t_s + (tp->duration_s > 0 ? tp->duration_s : 1);
        if (until > w->trace_span_s)
            w->trace_span_s = until;
    next:
        yaml_tree_free(obj);
        if (rc != 0)
            return rc;
    }
    if (w->trace_count == 0)
        return frugal_err_set(err, FRUGAL_EINVAL, "%s: the trace holds no pod%s", path,
                              w->trace_per_node > 0 ? " but DaemonSet and static pods" : "");
    qsort(w->trace, w->trace_count, sizeof(*w->trace), replay__trace_cmp);
    return 0;
}

/* Whether text, which starts with "{", is a mix written as JSON (a script's json.dump):
 * its first key is one of a mix's. A trace line's first key is "t", "pod" or "duration",
 * and any other key stays a trace's error, named on its line. */
static bool replay__mix_in_braces(const char *text, size_t len) {
    size_t i = 1;
    while (i < len && isspace((unsigned char)text[i]))
        i++;
    char quote = i < len && (text[i] == '"' || text[i] == '\'') ? text[i++] : '\0';
    size_t start = i;
    while (i < len && text[i] != quote && text[i] != ':' && !isspace((unsigned char)text[i]))
        i++;
    return replay__mix_key(text + start, i - start);
}

int replay_workload_load(const char *path, const char *text, size_t len, replay_workload_t *out,
                         frugal_err_t *err) {
    memset(out, 0, sizeof(*out));
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    /* prod.week1.jsonl is prod.week1: only a known extension goes. */
    size_t n = strlen(base);
    for (const char *const *ext = (const char *const[]){".jsonl", ".json", ".yaml", ".yml", NULL};
         *ext != NULL; ext++) {
        size_t e = strlen(*ext);
        if (n > e && strcmp(base + n - e, *ext) == 0) {
            n -= e;
            break;
        }
    }
    if ((out->name = strndup(base, n)) == NULL || (out->path = strdup(path)) == NULL) {
        replay_workload_free(out);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
        text += 3, len -= 3; /* a UTF-8 byte order mark, as some editors write */
    if (len >= 2 && (memcmp(text, "\xff\xfe", 2) == 0 || memcmp(text, "\xfe\xff", 2) == 0)) {
        replay_workload_free(out);
        return frugal_err_set(err, FRUGAL_EINVAL,
                              "%s: UTF-16 text (as Windows PowerShell's > writes it): save it as "
                              "UTF-8",
                              path);
    }
    size_t i = 0;
    while (i < len && (isspace((unsigned char)text[i]) || text[i] == '#')) {
        if (text[i] == '#') /* a comment line: a trace's first object decides */
            while (i < len && text[i] != '\n')
                i++;
        else
            i++;
    }
    if (i == len) {
        replay_workload_free(out);
        return frugal_err_set(err, FRUGAL_EINVAL,
                              "%s: empty (expected a workload mix or a JSON-lines trace)", path);
    }
    out->is_trace = text[i] == '{' && !replay__mix_in_braces(text + i, len - i);
    int rc = out->is_trace ? replay__load_trace(path, text, len, out, err)
                           : replay__load_mix(path, text, len, out, err);
    if (rc != 0)
        replay_workload_free(out);
    return rc;
}

void replay_workload_free(replay_workload_t *w) {
    for (size_t i = 0; i < w->families_count; i++) {
        free(w->families[i].name);
        free(w->families[i].owner);
        if (w->families[i].pod)
            k8s__io__api__core__v1__pod__free_unpacked(w->families[i].pod, NULL);
    }
    for (size_t i = 0; i < w->trace_count; i++)
        k8s__io__api__core__v1__pod__free_unpacked(w->trace[i].pod, NULL);
    free(w->families);
    free(w->trace);
    free(w->name);
    free(w->path);
    memset(w, 0, sizeof(*w));
}
