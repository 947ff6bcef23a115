/* Node auto-provisioning, the pure part: ids and limits. See autoprov.h. */
#include "autoprov.h"
#include "k8s_name.h"
#include "metrics.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AUTOPROV_FNV_OFFSET 14695981039346656037ULL
#define AUTOPROV_FNV_PRIME 1099511628211ULL

static int64_t autoprov__sat_add(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static int64_t autoprov__sat_mul(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
    return r;
}

void autoprov_totals_add(autoprov_totals_t *t, int64_t count, const resources_t *node) {
    t->cpu_milli = autoprov__sat_add(t->cpu_milli, autoprov__sat_mul(count, node->cpu_milli));
    t->memory_bytes =
        autoprov__sat_add(t->memory_bytes, autoprov__sat_mul(count, node->memory_bytes));
}

/* ------------------------------------------------------------------------------------
 * Ids
 * ---------------------------------------------------------------------------------- */

static int autoprov__strcmp_ptr(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static uint64_t autoprov__fnv(uint64_t h, const char *s) {
    for (; *s != '\0'; s++) {
        h ^= (unsigned char)*s;
        h *= AUTOPROV_FNV_PRIME;
    }
    return h;
}

/* "prefix" + a + sep + b [+ sep2 + c], malloc'ed; NULL when out of memory. */
static char *autoprov__join(const char *prefix, const char *a, const char *sep, const char *b,
                            const char *sep2, const char *c) {
    size_t len = strlen(prefix) + strlen(a) + strlen(sep) + strlen(b) + 1;
    if (sep2 != NULL)
        len += strlen(sep2) + strlen(c);
    char *s = malloc(len);
    if (s != NULL)
        snprintf(s, len, "%s%s%s%s%s%s", prefix, a, sep, b, sep2 != NULL ? sep2 : "",
                 sep2 != NULL ? c : "");
    return s;
}

bool autoprov_shape_hash(const kv_list_t *labels, const taint_list_t *taints,
                         const kv_list_t *extra_resources, char *buf, size_t size) {
    size_t nl = labels != NULL ? labels->count : 0;
    size_t nt = taints != NULL ? taints->count : 0;
    size_t nr = extra_resources != NULL ? extra_resources->count : 0;
    if (size > 0)
        buf[0] = '\0';
    if (nl + nt + nr == 0)
        return false;

    /* Sort each family on its own so that a label-only set hashes exactly as the sorted
     * key=value pairs, whatever order the caller gave them in. */
    char **items = calloc(nl + nt + nr, sizeof(*items));
    uint64_t h = AUTOPROV_FNV_OFFSET;
    bool ok = items != NULL;
    size_t k = 0;
    for (size_t i = 0; ok && i < nl; i++)
        ok = (items[k++] =
                  autoprov__join("", labels->items[i].key, "=",
                                 labels->items[i].value != NULL ? labels->items[i].value : "", NULL,
                                 NULL)) != NULL;
    for (size_t i = 0; ok && i < nt; i++) {
        const taint_t *t = &taints->items[i];
        ok = (items[k++] = autoprov__join("taint:", t->key, "=", t->value != NULL ? t->value : "",
                                          ":", t->effect != NULL ? t->effect : "")) != NULL;
    }
    for (size_t i = 0; ok && i < nr; i++)
        ok = (items[k++] = autoprov__join(
                  "resource:", extra_resources->items[i].key, "=",
                  extra_resources->items[i].value != NULL ? extra_resources->items[i].value : "",
                  NULL, NULL)) != NULL;
    if (ok) {
        qsort(items, nl, sizeof(*items), autoprov__strcmp_ptr);
        qsort(items + nl, nt, sizeof(*items), autoprov__strcmp_ptr);
        qsort(items + nl + nt, nr, sizeof(*items), autoprov__strcmp_ptr);
        for (size_t i = 0; i < k; i++) {
            h = autoprov__fnv(h, items[i]);
            h ^= '\n';
            h *= AUTOPROV_FNV_PRIME;
        }
    } else {
        /* Out of memory: hash in the given order, still deterministic for sorted input. */
        h = AUTOPROV_FNV_OFFSET;
        for (size_t i = 0; i < nl; i++) {
            h = autoprov__fnv(h, labels->items[i].key);
            h = autoprov__fnv(h, "=");
            h = autoprov__fnv(h, labels->items[i].value != NULL ? labels->items[i].value : "");
            h ^= '\n';
            h *= AUTOPROV_FNV_PRIME;
        }
    }
    for (size_t i = 0; items != NULL && i < k; i++)
        free(items[i]);
    free(items);
    uint32_t folded = (uint32_t)(h ^ (h >> 32));
    snprintf(buf, size, "%08" PRIx32, folded);
    return true;
}

/* The first n bytes of s as a DNS label allows them: a-z, 0-9 and '-' kept, A-Z
 * lowered, any other byte '-'; into dst, which has room for n + 1. */
static void autoprov__label_chars(char *dst, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        dst[i] = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ? c : '-';
    }
    dst[n] = '\0';
}

/* The id of a group whose names do not make a DNS label as they are (a machine type
 * m5.large or Standard_D4s_v5, or names too long): the names mapped to label characters
 * and cut to fit, then a hash of the names as given and of the shape, which keeps such
 * groups apart from each other. */
static char *autoprov__mapped_id(const char *prefix, const char *machine_type, const char *zone,
                                 const char *shape) {
    uint64_t h = autoprov__fnv(AUTOPROV_FNV_OFFSET, machine_type);
    h = autoprov__fnv(autoprov__fnv(h, "\n"), zone);
    h = autoprov__fnv(autoprov__fnv(h, "\n"), shape);
    /* The config keeps the prefix to 20 characters, so room is at least 32. */
    size_t fixed = strlen(prefix) + 1 + (zone[0] != '\0') + 1 + AUTOPROV_HASH_LEN;
    size_t room = fixed < K8S_NAME_MAX ? K8S_NAME_MAX - fixed : 0;
    size_t type_len = strlen(machine_type), zone_len = strlen(zone), half = room / 2;
    if (type_len + zone_len > room) {
        if (zone_len <= half)
            type_len = room - zone_len;
        else if (type_len <= half)
            zone_len = room - type_len;
        else
            type_len = half, zone_len = room - half;
    }
    char type_part[K8S_NAME_MAX + 1], zone_part[K8S_NAME_MAX + 1];
    autoprov__label_chars(type_part, machine_type, type_len);
    autoprov__label_chars(zone_part, zone, zone_len);
    size_t len = fixed + type_len + zone_len + 1;
    char *id = malloc(len);
    if (id != NULL)
        snprintf(id, len, "%s-%s%s%s-%08" PRIx32, prefix, type_part, zone[0] != '\0' ? "-" : "",
                 zone_part, (uint32_t)(h ^ (h >> 32)));
    return id;
}

size_t autoprov_offered_count(const autoprov_config_t *ap) {
    return ap->machine_types_count * (ap->zones_count > 0 ? ap->zones_count : 1) *
           (ap->label_sets_count > 0 ? ap->label_sets_count : 1);
}

void autoprov_offered_shape(const autoprov_config_t *ap, size_t k, const char **machine_type,
                            const char **zone, const kv_list_t **labels) {
    static const kv_list_t no_labels = {NULL, 0};
    size_t nzones = ap->zones_count > 0 ? ap->zones_count : 1;
    size_t nsets = ap->label_sets_count > 0 ? ap->label_sets_count : 1;
    *machine_type = ap->machine_types[k / (nzones * nsets)];
    *zone = ap->zones_count > 0 ? ap->zones[k / nsets % nzones] : NULL;
    *labels = ap->label_sets_count > 0 ? &ap->label_sets[k % nsets] : &no_labels;
}

int autoprov_group_id(const char *prefix, const char *machine_type, const char *zone,
                      const kv_list_t *labels, const taint_list_t *taints,
                      const kv_list_t *extra_resources, char **out, frugal_err_t *err) {
    if (machine_type == NULL)
        return frugal_err_set(err, FRUGAL_EINVAL, "autoprovisioned group id: no machine type");
    if (prefix == NULL)
        prefix = "nap";
    if (zone == NULL)
        zone = "";
    char hash[AUTOPROV_HASH_LEN + 1];
    bool hashed = autoprov_shape_hash(labels, taints, extra_resources, hash, sizeof(hash));
    bool zoned = zone[0] != '\0';
    size_t len = strlen(prefix) + 1 + strlen(machine_type) + (zoned ? 1 + strlen(zone) : 0) +
                 (hashed ? 1 + AUTOPROV_HASH_LEN : 0) + 1;
    char *id = malloc(len);
    if (id == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    snprintf(id, len, "%s-%s%s%s%s%s", prefix, machine_type, zoned ? "-" : "", zone,
             hashed ? "-" : "", hash);
    if (!k8s_name_is_dns_label(id)) {
        free(id);
        if ((id = autoprov__mapped_id(prefix, machine_type, zone, hash)) == NULL)
            return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    *out = id;
    return 0;
}

/* ------------------------------------------------------------------------------------
 * Limits
 * ---------------------------------------------------------------------------------- */

/* Cores as an operator writes them: "28", "0.5", "1.25". */
static const char *autoprov__cores(int64_t milli, char *buf, size_t size) {
    if (milli == INT64_MAX)
        snprintf(buf, size, "unlimited");
    else if (milli % 1000 == 0)
        snprintf(buf, size, "%" PRId64, milli / 1000);
    else {
        snprintf(buf, size, "%.3f", (double)milli / 1000.0);
        size_t l = strlen(buf);
        while (l > 0 && buf[l - 1] == '0')
            buf[--l] = '\0';
    }
    return buf;
}

int autoprov_check_increase(const autoprov_config_t *ap, const autoprov_totals_t *totals,
                            const char *group_id, const char *machine_type, const resources_t *node,
                            int32_t delta, frugal_err_t *err) {
    int64_t add_cpu = autoprov__sat_mul(delta, node->cpu_milli);
    int64_t add_mem = autoprov__sat_mul(delta, node->memory_bytes);
    int64_t cpu = autoprov__sat_add(totals->cpu_milli, add_cpu);
    int64_t mem = autoprov__sat_add(totals->memory_bytes, add_mem);
    char a[32], b[32], c[32], d[32];
    if (ap->max_cpu_milli != INT64_MAX && add_cpu > 0 && cpu > ap->max_cpu_milli) {
        metrics_count(METRICS_LIMIT_REFUSALS, "cpu", NULL, NULL);
        return frugal_err_set(
            err, FRUGAL_EEXHAUSTED,
            "increase of %s by %d x %s (%s cores) would bring the cluster to %s cores, over the "
            "max_cpu limit of %s cores (cluster now at %s cores)",
            group_id, (int)delta, machine_type, autoprov__cores(add_cpu, a, sizeof(a)),
            autoprov__cores(cpu, b, sizeof(b)), autoprov__cores(ap->max_cpu_milli, c, sizeof(c)),
            autoprov__cores(totals->cpu_milli, d, sizeof(d)));
    }
    if (ap->max_memory_bytes != INT64_MAX && add_mem > 0 && mem > ap->max_memory_bytes) {
        metrics_count(METRICS_LIMIT_REFUSALS, "memory", NULL, NULL);
        return frugal_err_set(
            err, FRUGAL_EEXHAUSTED,
            "increase of %s by %d x %s (%s memory) would bring the cluster to %s memory, over "
            "the max_memory limit of %s (cluster now at %s)",
            group_id, (int)delta, machine_type, quantity_format_bytes_limit(add_mem, a, sizeof(a)),
            quantity_format_bytes_limit(mem, b, sizeof(b)),
            quantity_format_bytes_limit(ap->max_memory_bytes, c, sizeof(c)),
            quantity_format_bytes_limit(totals->memory_bytes, d, sizeof(d)));
    }
    return 0;
}

int autoprov_check_decrease(const autoprov_config_t *ap, const autoprov_totals_t *totals,
                            const char *group_id, const char *machine_type, const resources_t *node,
                            int32_t n, frugal_err_t *err) {
    int64_t sub_cpu = autoprov__sat_mul(n, node->cpu_milli);
    int64_t sub_mem = autoprov__sat_mul(n, node->memory_bytes);
    int64_t cpu = autoprov__sat_add(totals->cpu_milli, -sub_cpu);
    int64_t mem = autoprov__sat_add(totals->memory_bytes, -sub_mem);
    char a[32], b[32], c[32], d[32];
    if (sub_cpu > 0 && cpu < ap->min_cpu_milli) {
        metrics_count(METRICS_LIMIT_REFUSALS, "cpu", NULL, NULL);
        return frugal_err_set(
            err, FRUGAL_EPRECOND,
            "deleting %d x %s (%s cores) of %s would bring the cluster to %s cores, under the "
            "min_cpu limit of %s cores (cluster now at %s cores)",
            (int)n, machine_type, autoprov__cores(sub_cpu, a, sizeof(a)), group_id,
            autoprov__cores(cpu, b, sizeof(b)), autoprov__cores(ap->min_cpu_milli, c, sizeof(c)),
            autoprov__cores(totals->cpu_milli, d, sizeof(d)));
    }
    if (sub_mem > 0 && mem < ap->min_memory_bytes) {
        metrics_count(METRICS_LIMIT_REFUSALS, "memory", NULL, NULL);
        return frugal_err_set(
            err, FRUGAL_EPRECOND,
            "deleting %d x %s (%s memory) of %s would bring the cluster to %s memory, under the "
            "min_memory limit of %s (cluster now at %s)",
            (int)n, machine_type, quantity_format_bytes_limit(sub_mem, a, sizeof(a)), group_id,
            quantity_format_bytes_limit(mem, b, sizeof(b)),
            quantity_format_bytes_limit(ap->min_memory_bytes, c, sizeof(c)),
            quantity_format_bytes_limit(totals->memory_bytes, d, sizeof(d)));
    }
    return 0;
}

/* How many more nodes of size per_node fit in what is left under max; INT64_MAX when
 * unbounded. Never negative. */
static int64_t autoprov__room(int64_t max, int64_t used, int64_t per_node) {
    if (max == INT64_MAX || per_node <= 0)
        return INT64_MAX;
    if (used >= max)
        return 0;
    return (max - used) / per_node;
}

/* How many nodes of size per_node can go before used falls under min; INT64_MAX when
 * min binds nothing. Never negative. */
static int64_t autoprov__slack(int64_t min, int64_t used, int64_t per_node) {
    if (min <= 0 || per_node <= 0)
        return INT64_MAX;
    if (used <= min)
        return 0;
    return (used - min) / per_node;
}

/* The fewer of the nodes `count` allows by cpu (against cpu_limit) and by memory. */
static int64_t autoprov__fewest(int64_t (*count)(int64_t, int64_t, int64_t), int64_t cpu_limit,
                                int64_t memory_limit, const autoprov_totals_t *totals,
                                const resources_t *node) {
    int64_t by_cpu = count(cpu_limit, totals->cpu_milli, node->cpu_milli);
    int64_t by_memory = count(memory_limit, totals->memory_bytes, node->memory_bytes);
    return by_memory < by_cpu ? by_memory : by_cpu;
}

int32_t autoprov_min_size(const autoprov_config_t *ap, const autoprov_totals_t *totals,
                          const resources_t *node, int32_t target, int32_t min_size) {
    int64_t slack =
        autoprov__fewest(autoprov__slack, ap->min_cpu_milli, ap->min_memory_bytes, totals, node);
    int64_t min = min_size;
    if (slack != INT64_MAX && (int64_t)target - slack > min)
        min = (int64_t)target - slack;
    return (int32_t)min; /* never above target, unless min_size is */
}

bool autoprov_has_maxima(const autoprov_config_t *ap) {
    return ap->max_cpu_milli != INT64_MAX || ap->max_memory_bytes != INT64_MAX;
}

bool autoprov_has_minima(const autoprov_config_t *ap) {
    return ap->min_cpu_milli > 0 || ap->min_memory_bytes > 0;
}

int32_t autoprov_max_size(const autoprov_config_t *ap, const autoprov_totals_t *totals,
                          const resources_t *node, int32_t target, int32_t max_size) {
    int64_t room =
        autoprov__fewest(autoprov__room, ap->max_cpu_milli, ap->max_memory_bytes, totals, node);
    int64_t max = max_size;
    if (room != INT64_MAX && (int64_t)target + room < max)
        max = (int64_t)target + room;
    if (max < target)
        max = target;
    if (max < 0)
        max = 0;
    return (int32_t)max;
}
