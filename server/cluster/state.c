#include "state.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group_rules.h"
#include "instance_id.h"
#include "k8s_name.h"
#include "strbuf.h"
#include "strmap.h"
#include "utf8.h"

/* ------------------------------------------------------------------------------------
 * Writing
 * ---------------------------------------------------------------------------------- */

/* " key=VALUE" with VALUE percent-encoded. */
static void state__field_str(strbuf_t *b, const char *key, const char *value) {
    static const char hex[] = "0123456789ABCDEF";
    strbuf_printf(b, " %s=", key);
    const unsigned char *start = (const unsigned char *)value;
    const unsigned char *p = start;
    for (; *p != '\0'; p++) {
        if (*p > ' ' && *p < 0x7f && *p != '%')
            continue;
        strbuf_append(b, (const char *)start, (size_t)(p - start));
        char esc[3] = {'%', hex[*p >> 4], hex[*p & 0xf]};
        strbuf_append(b, esc, 3);
        start = p + 1;
    }
    strbuf_append(b, (const char *)start, (size_t)(p - start));
}

static const char *state__instance_state_name(instance_state_t s) {
    switch (s) {
    case INSTANCE_RUNNING:
        return "running";
    case INSTANCE_CREATING:
        return "creating";
    case INSTANCE_DELETING:
        return "deleting";
    }
    return "?";
}

static void state__format_group(strbuf_t *b, const group_t *g) {
    strbuf_puts(b, "group");
    state__field_str(b, "id", g->spec.id);
    strbuf_printf(b, " managed=%d autoprovisioned=%d exists=%d min=%d max=%d target=%d", g->managed,
                  g->autoprovisioned, g->exists, (int)g->min_size, (int)g->max_size,
                  (int)g->target_size);
    strbuf_printf(b, " next_seq=%llu empty_since=%lld", (unsigned long long)g->next_seq,
                  (long long)g->empty_since_ms);
    state__field_str(b, "machine_type", g->spec.machine_type != NULL ? g->spec.machine_type : "");
    if (g->spec.zone != NULL)
        state__field_str(b, "zone", g->spec.zone);
    strbuf_printf(b, " spot=%d spot_price=%.17g\n", g->spec.spot, g->spec.spot_price);
    for (size_t i = 0; i < g->spec.labels.count; i++) {
        strbuf_puts(b, "label");
        state__field_str(b, "key", g->spec.labels.items[i].key);
        state__field_str(b, "value", g->spec.labels.items[i].value);
        strbuf_puts(b, "\n");
    }
    for (size_t i = 0; i < g->spec.taints.count; i++) {
        const taint_t *t = &g->spec.taints.items[i];
        strbuf_puts(b, "taint");
        state__field_str(b, "key", t->key);
        state__field_str(b, "value", t->value != NULL ? t->value : "");
        state__field_str(b, "effect", t->effect != NULL ? t->effect : "");
        strbuf_puts(b, "\n");
    }
    for (size_t i = 0; i < g->spec.extra_resources.count; i++) {
        strbuf_puts(b, "resource");
        state__field_str(b, "key", g->spec.extra_resources.items[i].key);
        state__field_str(b, "value", g->spec.extra_resources.items[i].value);
        strbuf_puts(b, "\n");
    }
    for (size_t i = 0; i < g->instances_count; i++) {
        const instance_t *in = &g->instances[i];
        strbuf_puts(b, "instance");
        state__field_str(b, "id", in->id);
        strbuf_printf(b, " state=%s since=%lld", state__instance_state_name(in->state),
                      (long long)in->state_since_ms);
        if (in->error_code != NULL) {
            state__field_str(b, "error_code", in->error_code);
            state__field_str(b, "error_message",
                             in->error_message != NULL ? in->error_message : "");
            strbuf_printf(b, " error_class=%d", (int)in->error_class);
        }
        strbuf_puts(b, "\n");
    }
}

/* ------------------------------------------------------------------------------------
 * Checksums (format version 2): CRC-32 of each record line and of the whole file
 * ---------------------------------------------------------------------------------- */

/* " crc=XXXXXXXX": the seal at the end of every record line. */
#define STATE_SEAL_LEN 13

/* Table-driven CRC-32, eight bytes a step ("slicing by 8"): table[k][b] is the CRC of
 * byte b followed by k zero bytes. */
static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void state__crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        for (int k = 1; k < 8; k++)
            crc_table[k][i] = (crc_table[k - 1][i] >> 8) ^ crc_table[0][crc_table[k - 1][i] & 0xff];
    }
}

uint32_t state_crc32(uint32_t crc, const void *data, size_t len) {
    pthread_once(&crc_once, state__crc_init);
    const unsigned char *p = data;
    crc = ~crc;
    while (len >= 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                             (uint32_t)p[3] << 24);
        crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
              crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^ crc_table[3][p[4]] ^
              crc_table[2][p[5]] ^ crc_table[1][p[6]] ^ crc_table[0][p[7]];
        p += 8;
        len -= 8;
    }
    while (len-- > 0)
        crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* The line of text[0..len) starting at *pos: *line and its length without the newline;
 * *pos moves past the newline. */
static void state__next_line(const char *text, size_t len, size_t *pos, const char **line,
                             size_t *n) {
    *line = text + *pos;
    const char *nl = memchr(*line, '\n', len - *pos);
    *n = nl != NULL ? (size_t)(nl - *line) : len - *pos;
    *pos += *n + (nl != NULL ? 1 : 0);
}

/* Seal text (version-2 records, one per line, the end record last and unsealed): every
 * record line gets " crc=" and the CRC-32 of the line before it; the end record first
 * gets " sum=" and the CRC-32 of every byte of the file before the end line. Comment
 * and blank lines are covered by the sum only. */
static int state__seal(const char *text, size_t len, strbuf_t *out) {
    size_t pos = 0;
    while (pos < len) {
        const char *line;
        size_t n;
        state__next_line(text, len, &pos, &line, &n);
        if (n == 0 || line[0] == '#') {
            strbuf_append(out, line, n);
            strbuf_puts(out, "\n");
            continue;
        }
        size_t start = out->len;
        strbuf_append(out, line, n);
        if (n >= 4 && memcmp(line, "end ", 4) == 0)
            strbuf_printf(out, " sum=%08x", state_crc32(0, out->data, start));
        if (out->failed)
            return FRUGAL_ENOMEM;
        strbuf_printf(out, " crc=%08x\n", state_crc32(0, out->data + start, out->len - start));
    }
    return out->failed ? FRUGAL_ENOMEM : 0;
}

int state_format(const group_t *const *groups, size_t n, char **out, size_t *len,
                 frugal_err_t *err) {
    strbuf_t b = {0};
    size_t instances = 0;
    strbuf_puts(&b, "# frugal state file: written by the daemon, do not edit while it runs\n");
    strbuf_printf(&b, "frugal-state version=%d\n", STATE_FORMAT_VERSION);
    for (size_t i = 0; i < n; i++) {
        state__format_group(&b, groups[i]);
        instances += groups[i]->instances_count;
    }
    strbuf_printf(&b, "end groups=%zu instances=%zu\n", n, instances);
    strbuf_t sealed = {0};
    if (b.failed || state__seal(b.data, b.len, &sealed) != 0) {
        strbuf_free(&b);
        strbuf_free(&sealed);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory formatting the state");
    }
    strbuf_free(&b);
    *len = sealed.len;
    *out = strbuf_take(&sealed);
    return 0;
}

/* ------------------------------------------------------------------------------------
 * Parsing
 * ---------------------------------------------------------------------------------- */

#define STATE_MAX_FIELDS 24

typedef struct record {
    char *type;
    size_t n;
    char *keys[STATE_MAX_FIELDS];
    char *values[STATE_MAX_FIELDS];
    bool used[STATE_MAX_FIELDS];
} record_t;

typedef struct parser {
    const char *name;
    size_t line;
    frugal_err_t *err;
} parser_t;

static int parser_fail(parser_t *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int parser_fail(parser_t *ps, const char *fmt, ...) {
    char msg[FRUGAL_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return frugal_err_set(ps->err, FRUGAL_EINVAL, "%s:%zu: %s", ps->name, ps->line, msg);
}

static int hexval(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decode a percent-encoded value in place. */
static int state__decode(parser_t *ps, const char *key, char *s) {
    char *w = s;
    for (char *r = s; *r != '\0'; r++) {
        if (*r != '%') {
            *w++ = *r;
            continue;
        }
        int hi = hexval(r[1]);
        int lo = hi < 0 ? -1 : hexval(r[2]);
        if (hi < 0 || lo < 0)
            return parser_fail(ps, "%s: bad escape (expected %%XX)", key);
        if (hi == 0 && lo == 0)
            return parser_fail(ps, "%s: NUL byte not allowed", key);
        *w++ = (char)(hi * 16 + lo);
        r += 2;
    }
    *w = '\0';
    return 0;
}

/* Check and strip the seal of line[0..*n) (a record line of a version-2 file ends with
 * " crc=" and 8 lowercase hex digits, the CRC-32 of what precedes it). *sealed tells
 * whether it had one; a seal that does not match is a checksum mismatch. */
static int state__unseal(parser_t *ps, const char *line, size_t *n, bool *sealed, bool verified) {
    *sealed = false;
    if (*n < STATE_SEAL_LEN || memcmp(line + *n - STATE_SEAL_LEN, " crc=", 5) != 0)
        return 0;
    uint32_t want = 0;
    for (size_t i = *n - 8; i < *n; i++) {
        char c = line[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return 0;
        want = want << 4 | (uint32_t)hexval(c);
    }
    if (!verified && state_crc32(0, line, *n - STATE_SEAL_LEN) != want)
        return parser_fail(ps, "checksum mismatch");
    *n -= STATE_SEAL_LEN;
    *sealed = true;
    return 0;
}

/* Before any record is interpreted: when some record line of text carries a valid seal
 * the file is a sealed one (version 2), and then every record line must carry a valid
 * seal and the end record's sum must match the bytes before it; anything else is a
 * checksum mismatch at its line. So a corrupted sealed file is always reported as such,
 * whatever the corruption would otherwise look like. A file without any valid seal
 * (version 1, or not a state file) is left to the parser. */
static int state__verify_seals(parser_t *ps, const char *text, size_t len, bool *verified) {
    for (int pass = 0; pass < 2; pass++) {
        size_t pos = 0;
        size_t last_record = 0;
        bool end_ok = false;
        ps->line = 0;
        while (pos < len) {
            const char *start;
            size_t n;
            state__next_line(text, len, &pos, &start, &n);
            ps->line++;
            if (n > 0 && start[n - 1] == '\r')
                n--;
            const char *lead = start;
            while (lead < start + n && (*lead == ' ' || *lead == '\t'))
                lead++;
            if (lead == start + n || *lead == '#')
                continue;
            bool sealed = false;
            frugal_err_t *keep = ps->err;
            frugal_err_t ignored;
            ps->err = &ignored;
            int rc = state__unseal(ps, start, &n, &sealed, false);
            ps->err = keep;
            if (pass == 0) {
                if (rc == 0 && sealed)
                    break; /* a sealed file: check it all in pass 1 */
                continue;
            }
            if (rc != 0 || !sealed)
                return parser_fail(ps, "checksum mismatch");
            last_record = ps->line;
            end_ok = false;
            if (n >= 18 && memcmp(start, "end ", 4) == 0 &&
                memcmp(start + n - 13, " sum=", 5) == 0) {
                uint32_t want = 0;
                bool hex = true;
                for (size_t i = n - 8; i < n && hex; i++) {
                    int v = hexval(start[i]);
                    hex = v >= 0 && !(start[i] >= 'A' && start[i] <= 'F');
                    want = want << 4 | (uint32_t)(v < 0 ? 0 : v);
                }
                if (!hex || want != state_crc32(0, text, (size_t)(start - text)))
                    return parser_fail(ps, "checksum mismatch (of the whole file)");
                end_ok = true;
            }
        }
        if (pass == 0 && pos >= len) {
            ps->line = 0;
            return 0; /* no valid seal anywhere */
        }
        if (pass == 1 && !end_ok) {
            ps->line = last_record > 0 ? last_record : 1;
            return parser_fail(ps, "checksum mismatch (the last record is not the sealed end)");
        }
    }
    ps->line = 0;
    *verified = true;
    return 0;
}

/* Split a mutable line into its type word and decoded fields. */
static int state__split(parser_t *ps, char *line, record_t *r) {
    memset(r, 0, sizeof(*r));
    char *save = NULL;
    r->type = strtok_r(line, " \t", &save);
    for (char *tok = strtok_r(NULL, " \t", &save); tok != NULL;
         tok = strtok_r(NULL, " \t", &save)) {
        char *eq = strchr(tok, '=');
        if (eq == NULL || eq == tok)
            return parser_fail(ps, "%s: expected key=value, got \"%s\"", r->type, tok);
        *eq = '\0';
        if (r->n == STATE_MAX_FIELDS)
            return parser_fail(ps, "%s: too many fields", r->type);
        for (size_t i = 0; i < r->n; i++) {
            if (strcmp(r->keys[i], tok) == 0)
                return parser_fail(ps, "%s: field %s given twice", r->type, tok);
        }
        int rc = state__decode(ps, tok, eq + 1);
        if (rc != 0)
            return rc;
        r->keys[r->n] = tok;
        r->values[r->n] = eq + 1;
        r->n++;
    }
    return 0;
}

/* The value of field key, NULL when absent (marks it used). */
static const char *rec_get(record_t *r, const char *key) {
    for (size_t i = 0; i < r->n; i++) {
        if (strcmp(r->keys[i], key) == 0) {
            r->used[i] = true;
            return r->values[i];
        }
    }
    return NULL;
}

static int rec_require(parser_t *ps, record_t *r, const char *key, const char **out) {
    *out = rec_get(r, key);
    if (*out == NULL)
        return parser_fail(ps, "%s: missing field %s", r->type, key);
    return 0;
}

static int rec_check_unused(parser_t *ps, const record_t *r) {
    for (size_t i = 0; i < r->n; i++) {
        if (!r->used[i])
            return parser_fail(ps, "%s: unknown field %s", r->type, r->keys[i]);
    }
    return 0;
}

static int rec_int(parser_t *ps, record_t *r, const char *key, bool required, long long lo,
                   long long hi, long long *out) {
    const char *v = rec_get(r, key);
    if (v == NULL) {
        if (required)
            return parser_fail(ps, "%s: missing field %s", r->type, key);
        return 1;
    }
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno != 0 || x < lo || x > hi)
        return parser_fail(ps, "%s: %s: expected an integer in [%lld, %lld], got \"%s\"", r->type,
                           key, lo, hi, v);
    *out = x;
    return 0;
}

static int rec_u64(parser_t *ps, record_t *r, const char *key, uint64_t *out) {
    const char *v = NULL;
    int rc = rec_require(ps, r, key, &v);
    if (rc != 0)
        return rc;
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (*v < '0' || *v > '9' || *end != '\0' || errno != 0)
        return parser_fail(ps, "%s: %s: expected an unsigned integer, got \"%s\"", r->type, key, v);
    *out = x;
    return 0;
}

/* The end record's sum: 8 lowercase hex digits. */
static int state__rec_sum(parser_t *ps, record_t *r, long long *out) {
    const char *v = NULL;
    int rc = rec_require(ps, r, "sum", &v);
    if (rc != 0)
        return rc;
    if (strlen(v) != 8 || strspn(v, "0123456789abcdef") != 8)
        return parser_fail(ps, "checksum mismatch (of the whole file)");
    *out = strtoll(v, NULL, 16);
    return 0;
}

static int rec_bool(parser_t *ps, record_t *r, const char *key, bool *out) {
    long long x = 0;
    int rc = rec_int(ps, r, key, true, 0, 1, &x);
    if (rc != 0)
        return rc;
    *out = x != 0;
    return 0;
}

static int rec_double(parser_t *ps, record_t *r, const char *key, double *out) {
    const char *v = NULL;
    int rc = rec_require(ps, r, key, &v);
    if (rc != 0)
        return rc;
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (*v == '\0' || *end != '\0' || errno != 0 || !isfinite(x))
        return parser_fail(ps, "%s: %s: expected a finite number, got \"%s\"", r->type, key, v);
    *out = x;
    return 0;
}

static int rec_strdup(parser_t *ps, record_t *r, const char *key, bool required, char **out) {
    const char *v = rec_get(r, key);
    *out = NULL;
    if (v == NULL)
        return required ? parser_fail(ps, "%s: missing field %s", r->type, key) : 0;
    *out = strdup(v);
    if (*out == NULL)
        return frugal_err_set(ps->err, FRUGAL_ENOMEM, "out of memory");
    return 0;
}

/* Make room for element count of an array grown geometrically: capacities run
 * 4, 8, 16, ... so the array is reallocated only when count reaches one of them. */
static int state__grow(void **items, size_t count, size_t size) {
    bool full = count == 0 || (count >= 4 && (count & (count - 1)) == 0);
    if (!full)
        return 0;
    size_t cap = count == 0 ? 4 : count * 2;
    void *p = realloc(*items, cap * size);
    if (p == NULL)
        return FRUGAL_ENOMEM;
    *items = p;
    return 0;
}

/* ------------------------------------------------------------------------------------
 * Strict validation: what the config and the services accept, nothing else
 * ---------------------------------------------------------------------------------- */

/* Whether s is well-formed UTF-8 without control characters other than tab and
 * newline. */
static bool state__text_ok(const char *s) {
    if (!utf8_valid(s))
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++)
        if ((*p < 0x20 && *p != '\t' && *p != '\n') || *p == 0x7f)
            return false;
    return true;
}

/* Why id is not a provider id of group, NULL when it is: UTF-8 text on one line; one of
 * frugal's own (frugal://GROUP/NAME) must name the group it is listed under. A hook's
 * real provider id has no further form to check. */
static const char *state__provider_id_problem(const char *id, const char *group) {
    if (!state__text_ok(id) || strpbrk(id, "\t\n") != NULL)
        return "not UTF-8 text on one line";
    if (strncmp(id, INSTANCE_ID_SCHEME, sizeof(INSTANCE_ID_SCHEME) - 1) != 0)
        return NULL;
    const char *name = instance_name_in_group(id, group);
    return name == NULL || name[0] == '\0' ? "does not belong to the group it is listed under"
                                           : NULL;
}

/* A label, taint or resource record's strings, checked as every group's are: text, then
 * the group rules (an operator's groups are kept here: their labels may set what the
 * template sets). */
static int state__check_kv(parser_t *ps, const char *what, const char *key, const char *value,
                           const char *effect) {
    char why[FRUGAL_ERR_MSG_MAX];
    if (!state__text_ok(key) || !state__text_ok(value))
        return parser_fail(ps, "%s %s: not UTF-8 text", what,
                           state__text_ok(key) ? key : "(not UTF-8)");
    group_rule_t rule =
        strcmp(what, "label") == 0      ? group_rules_label(key, value, true, why, sizeof(why))
        : strcmp(what, "resource") == 0 ? group_rules_resource(key, value, why, sizeof(why))
                                        : group_rules_taint(key, value, effect, why, sizeof(why));
    return rule == GROUP_RULE_OK ? 0 : parser_fail(ps, "%s", why);
}

/* Insert (key, value) into a sorted kv list; a duplicate key is an error. */
static int state__kv_insert(parser_t *ps, const char *what, kv_list_t *l, record_t *r) {
    const char *key = NULL;
    const char *value = NULL;
    int rc = rec_require(ps, r, "key", &key);
    if (rc == 0)
        rc = rec_require(ps, r, "value", &value);
    if (rc == 0)
        rc = rec_check_unused(ps, r);
    if (rc == 0)
        rc = state__check_kv(ps, what, key, value, NULL);
    if (rc != 0)
        return rc;
    bool found;
    kv_list_find(l, key, &found);
    char why[FRUGAL_ERR_MSG_MAX];
    if (found && strcmp(what, "label") == 0)
        group_rules_label_twice(key, why, sizeof(why));
    else if (found)
        group_rules_resource_twice(key, why, sizeof(why));
    if (found)
        return parser_fail(ps, "%s", why);
    if (kv_list_put(l, key, value) != 0)
        return frugal_err_set(ps->err, FRUGAL_ENOMEM, "out of memory");
    return 0;
}

static int state__parse_group(parser_t *ps, record_t *r, group_t *g) {
    long long x = 0;
    int rc;
    memset(g, 0, sizeof(*g));
    if ((rc = rec_strdup(ps, r, "id", true, &g->spec.id)) != 0)
        return rc;
    if (!k8s_name_is_dns_label(g->spec.id))
        return parser_fail(ps, "group: id \"%s\" is not a DNS label (1-63 of a-z, 0-9, '-')",
                           state__text_ok(g->spec.id) ? g->spec.id : "(not UTF-8)");
    if ((rc = rec_bool(ps, r, "managed", &g->managed)) != 0 ||
        (rc = rec_bool(ps, r, "autoprovisioned", &g->autoprovisioned)) != 0 ||
        (rc = rec_bool(ps, r, "exists", &g->exists)) != 0)
        return rc;
    if ((rc = rec_int(ps, r, "min", true, 0, INT32_MAX, &x)) != 0)
        return rc;
    g->min_size = (int32_t)x;
    if ((rc = rec_int(ps, r, "max", true, 0, INT32_MAX, &x)) != 0)
        return rc;
    g->max_size = (int32_t)x;
    if (g->min_size > g->max_size)
        return parser_fail(ps, "group %s: min %d > max %d", g->spec.id, (int)g->min_size,
                           (int)g->max_size);
    if ((rc = rec_int(ps, r, "target", true, 0, INT32_MAX, &x)) != 0)
        return rc;
    g->target_size = (int32_t)x;
    if ((rc = rec_u64(ps, r, "next_seq", &g->next_seq)) != 0)
        return rc;
    if ((rc = rec_int(ps, r, "empty_since", true, 0, LLONG_MAX, &x)) != 0)
        return rc;
    g->empty_since_ms = x;
    if ((rc = rec_strdup(ps, r, "machine_type", true, &g->spec.machine_type)) != 0 ||
        (rc = rec_strdup(ps, r, "zone", false, &g->spec.zone)) != 0 ||
        (rc = rec_bool(ps, r, "spot", &g->spec.spot)) != 0 ||
        (rc = rec_double(ps, r, "spot_price", &g->spec.spot_price)) != 0)
        return rc;
    if (!state__text_ok(g->spec.machine_type) ||
        (g->spec.zone != NULL && !state__text_ok(g->spec.zone)))
        return parser_fail(ps, "group %s: machine_type or zone is not UTF-8 text", g->spec.id);
    return rec_check_unused(ps, r);
}

static int state__parse_taint(parser_t *ps, record_t *r, taint_list_t *l) {
    taint_t t = {0};
    int rc;
    if ((rc = rec_strdup(ps, r, "key", true, &t.key)) != 0 ||
        (rc = rec_strdup(ps, r, "value", true, &t.value)) != 0 ||
        (rc = rec_strdup(ps, r, "effect", true, &t.effect)) != 0 ||
        (rc = rec_check_unused(ps, r)) != 0 ||
        (rc = state__check_kv(ps, "taint", t.key, t.value, t.effect)) != 0)
        goto fail;
    if (taint_list_has(l, t.key, t.effect)) {
        char why[FRUGAL_ERR_MSG_MAX];
        group_rules_taint_twice(t.key, t.effect, why, sizeof(why));
        rc = parser_fail(ps, "%s", why);
        goto fail;
    }
    if (state__grow((void **)&l->items, l->count, sizeof(taint_t)) != 0) {
        rc = frugal_err_set(ps->err, FRUGAL_ENOMEM, "out of memory");
        goto fail;
    }
    l->items[l->count++] = t;
    return 0;
fail:
    free(t.key);
    free(t.value);
    free(t.effect);
    return rc;
}

/* The number frugal gave the instance id when it named it in group (frugal://G/G-N);
 * false for an id it did not make so (a provider's). */
static bool state__instance_seq(const char *id, const char *group, uint64_t *seq) {
    const char *name = instance_name_in_group(id, group);
    size_t glen = strlen(group);
    if (name == NULL || strncmp(name, group, glen) != 0 || name[glen] != '-')
        return false;
    const char *digits = name + glen + 1;
    if (*digits < '0' || *digits > '9' || digits[strspn(digits, "0123456789")] != '\0')
        return false;
    errno = 0;
    *seq = strtoull(digits, NULL, 10);
    return errno == 0;
}

static int state__parse_instance(parser_t *ps, record_t *r, group_t *g, strmap_t *seen) {
    instance_t in = {0};
    long long x = 0;
    const char *state = NULL;
    int rc;
    if ((rc = rec_strdup(ps, r, "id", true, &in.id)) != 0)
        goto fail;
    if (in.id[0] == '\0') {
        rc = parser_fail(ps, "instance: empty id");
        goto fail;
    }
    const char *problem = state__provider_id_problem(in.id, g->spec.id);
    if (problem != NULL) {
        rc = parser_fail(ps, "instance %s of group %s: %s",
                         state__text_ok(in.id) ? in.id : "(not UTF-8)", g->spec.id, problem);
        goto fail;
    }
    uint64_t seq, next = g->next_seq > 0 ? g->next_seq : 1;
    if (state__instance_seq(in.id, g->spec.id, &seq) && seq >= next) {
        rc = parser_fail(ps,
                         "instance %s of group %s: numbered %" PRIu64 ", not below the group's "
                         "next_seq %" PRIu64 ": a new instance would be given its id",
                         in.id, g->spec.id, seq, next);
        goto fail;
    }
    if ((rc = rec_require(ps, r, "state", &state)) != 0)
        goto fail;
    if (strcmp(state, "running") == 0) {
        in.state = INSTANCE_RUNNING;
    } else if (strcmp(state, "creating") == 0) {
        in.state = INSTANCE_CREATING;
    } else if (strcmp(state, "deleting") == 0) {
        in.state = INSTANCE_DELETING;
    } else {
        rc = parser_fail(ps, "instance %s: unknown state \"%s\"", in.id, state);
        goto fail;
    }
    if ((rc = rec_int(ps, r, "since", true, 0, LLONG_MAX, &x)) != 0)
        goto fail;
    in.state_since_ms = x;
    if ((rc = rec_strdup(ps, r, "error_code", false, &in.error_code)) != 0 ||
        (rc = rec_strdup(ps, r, "error_message", false, &in.error_message)) != 0)
        goto fail;
    rc = rec_int(ps, r, "error_class", false, INT32_MIN, INT32_MAX, &x);
    if (rc < 0)
        goto fail;
    in.error_class = rc == 0 ? (int32_t)x : 0;
    if ((rc = rec_check_unused(ps, r)) != 0)
        goto fail;
    if ((in.error_code != NULL && !state__text_ok(in.error_code)) ||
        (in.error_message != NULL && !state__text_ok(in.error_message))) {
        rc = parser_fail(ps, "instance %s: error text is not UTF-8", in.id);
        goto fail;
    }
    if (strmap_get(seen, in.id) != NULL) {
        rc = parser_fail(ps, "instance %s listed twice", in.id);
        goto fail;
    }
    if (state__grow((void **)&g->instances, g->instances_count, sizeof(instance_t)) != 0 ||
        strmap_put(seen, in.id, g, NULL) != 0) {
        rc = frugal_err_set(ps->err, FRUGAL_ENOMEM, "out of memory");
        goto fail;
    }
    g->instances[g->instances_count++] = in;
    return 0;
fail:
    instance_clear(&in);
    return rc;
}

void state_free(state_t *s) {
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->count; i++)
        group_clear(&s->groups[i]);
    free(s->groups);
    s->groups = NULL;
    s->count = 0;
}

int state_parse(const char *name, const char *text, size_t len, state_t *out, frugal_err_t *err) {
    parser_t ps = {name, 0, err};
    state_t st = {0};
    strmap_t *seen = NULL;
    strmap_t *ids = NULL;
    char *line = NULL;
    size_t line_cap = 0;
    bool have_header = false;
    bool have_end = false;
    long long version = 0;
    size_t instances = 0;
    int rc;

    memset(out, 0, sizeof(*out));
    bool verified = false;
    if ((rc = state__verify_seals(&ps, text, len, &verified)) != 0)
        return rc;
    if ((rc = strmap_create(64, &seen)) != 0 || (rc = strmap_create(16, &ids)) != 0) {
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        goto fail;
    }
    size_t pos = 0;
    while (pos < len) {
        const char *start;
        size_t n;
        state__next_line(text, len, &pos, &start, &n);
        ps.line++;
        if (n > 0 && start[n - 1] == '\r')
            n--;
        bool sealed = false;
        const char *lead = start;
        while (lead < start + n && (*lead == ' ' || *lead == '\t'))
            lead++;
        bool record = lead < start + n && *lead != '#';
        if (record && (rc = state__unseal(&ps, start, &n, &sealed, verified)) != 0)
            goto fail;
        if (record && have_header && (version >= 2) != sealed) {
            rc = parser_fail(&ps, version >= 2 ? "checksum mismatch (the record has no checksum)"
                                               : "a checksum in a version 1 file");
            goto fail;
        }
        if (memchr(start, '\0', n) != NULL) {
            rc = parser_fail(&ps, "NUL byte in the file");
            goto fail;
        }
        if (n + 1 > line_cap) {
            char *p = realloc(line, n + 1);
            if (p == NULL) {
                rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
                goto fail;
            }
            line = p;
            line_cap = n + 1;
        }
        memcpy(line, start, n);
        line[n] = '\0';
        const char *first = line + strspn(line, " \t");
        if (*first == '\0' || *first == '#')
            continue;
        record_t r;
        if ((rc = state__split(&ps, line, &r)) != 0)
            goto fail;
        if (have_end) {
            rc = parser_fail(&ps, "record after the end record");
            goto fail;
        }
        if (!have_header) {
            if (strcmp(r.type, "frugal-state") != 0) {
                rc = parser_fail(&ps,
                                 "not a frugal state file (expected \"frugal-state version=%d\")",
                                 STATE_FORMAT_VERSION);
                goto fail;
            }
            if ((rc = rec_int(&ps, &r, "version", true, 1, INT_MAX, &version)) != 0 ||
                (rc = rec_check_unused(&ps, &r)) != 0)
                goto fail;
            if (version > STATE_FORMAT_VERSION) {
                rc = parser_fail(
                    &ps, "unsupported state format version %lld (this frugal reads 1 to %d)",
                    version, STATE_FORMAT_VERSION);
                goto fail;
            }
            if ((version >= 2) != sealed) {
                rc = parser_fail(&ps, "checksum mismatch (the header does not match its version)");
                goto fail;
            }
            have_header = true;
            continue;
        }
        group_t *g = st.count > 0 ? &st.groups[st.count - 1] : NULL;
        if (strcmp(r.type, "group") == 0) {
            if (state__grow((void **)&st.groups, st.count, sizeof(group_t)) != 0) {
                rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
                goto fail;
            }
            g = &st.groups[st.count++];
            if ((rc = state__parse_group(&ps, &r, g)) != 0)
                goto fail;
            if (strmap_get(ids, g->spec.id) != NULL) {
                rc = parser_fail(&ps, "group %s listed twice", g->spec.id);
                goto fail;
            }
            if (strmap_put(ids, g->spec.id, g, NULL) != 0) {
                rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
                goto fail;
            }
        } else if (strcmp(r.type, "end") == 0) {
            long long ng = 0;
            long long ni = 0;
            long long sum = 0;
            if ((rc = rec_int(&ps, &r, "groups", true, 0, LLONG_MAX, &ng)) != 0 ||
                (rc = rec_int(&ps, &r, "instances", true, 0, LLONG_MAX, &ni)) != 0 ||
                (version >= 2 && (rc = state__rec_sum(&ps, &r, &sum)) != 0) ||
                (rc = rec_check_unused(&ps, &r)) != 0)
                goto fail;
            if (version >= 2 && !verified &&
                (uint32_t)sum != state_crc32(0, text, (size_t)(start - text))) {
                rc = parser_fail(&ps, "checksum mismatch (of the whole file)");
                goto fail;
            }
            if ((size_t)ng != st.count || (size_t)ni != instances) {
                rc = parser_fail(
                    &ps,
                    "end record counts %lld groups and %lld instances, the file has %zu and %zu",
                    ng, ni, st.count, instances);
                goto fail;
            }
            have_end = true;
        } else if (strcmp(r.type, "label") == 0 || strcmp(r.type, "taint") == 0 ||
                   strcmp(r.type, "resource") == 0 || strcmp(r.type, "instance") == 0) {
            if (g == NULL) {
                rc = parser_fail(&ps, "%s record before any group record", r.type);
                goto fail;
            }
            if (strcmp(r.type, "label") == 0) {
                rc = state__kv_insert(&ps, "label", &g->spec.labels, &r);
            } else if (strcmp(r.type, "resource") == 0) {
                rc = state__kv_insert(&ps, "resource", &g->spec.extra_resources, &r);
            } else if (strcmp(r.type, "taint") == 0) {
                rc = state__parse_taint(&ps, &r, &g->spec.taints);
            } else {
                rc = state__parse_instance(&ps, &r, g, seen);
                instances += rc == 0 ? 1 : 0;
            }
            if (rc != 0)
                goto fail;
        } else {
            rc = parser_fail(&ps, "unknown record type \"%s\"", r.type);
            goto fail;
        }
    }
    if (!have_header) {
        ps.line = ps.line == 0 ? 1 : ps.line;
        rc = parser_fail(&ps, "empty state file (no \"frugal-state\" header)");
        goto fail;
    }
    if (!have_end) {
        rc = parser_fail(&ps, "truncated state file (no end record)");
        goto fail;
    }
    strmap_destroy(seen);
    strmap_destroy(ids);
    free(line);
    st.version = (int)version;
    *out = st;
    return 0;

fail:
    strmap_destroy(seen);
    strmap_destroy(ids);
    free(line);
    state_free(&st);
    return rc;
}
