/* The etcd backend's view of its prefix: the keys, what this replica last saw of each
 * group key, the read of the whole prefix, how long a request may take, and whether the
 * cache may be stale. The other state_etcd files build on it; it uses none of them. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "etcd/rpc.pb-c.h"
#include "etcd_client.h"
#include "metrics.h"
#include "state_etcd_internal.h"
#include "strmap.h"

/* P + suffix, malloc'ed. */
char *se__key_text(const ProtobufCBinaryData *k) {
    char *out = malloc(4 * k->len + 1), *at = out;
    for (size_t i = 0; out != NULL && i < k->len; i++) {
        unsigned char c = k->data[i];
        if (c < 0x20 || c == 0x7f)
            at += sprintf(at, "\\x%02x", c);
        else
            *at++ = (char)c;
    }
    if (out != NULL)
        *at = '\0';
    return out;
}

const uint8_t *se__value_data(const ProtobufCBinaryData *v) {
    return v->data != NULL ? v->data : (const uint8_t *)"";
}

const char *se__schema_problem(const char *key, const uint8_t *value, size_t len, unsigned *version,
                               char *buf, size_t size) {
    char tail = 0;
    char *text = strndup((const char *)value, len);
    *version = 0;
    int got = text != NULL ? sscanf(text, "frugal-state-etcd version=%u%c", version, &tail) : 0;
    /* %u reads "-1" as a huge version and "+1" as 1; there never was a version 0 */
    bool digits = got >= 1 && text[strlen("frugal-state-etcd version=")] >= '1' &&
                  text[strlen("frugal-state-etcd version=")] <= '9';
    free(text);
    if (got < 1 || (got == 2 && tail != '\n') || !digits || memchr(value, 0, len) != NULL) {
        *version = 0;
        snprintf(buf, size,
                 "etcd key %s holds foreign or corrupt data (expected \"frugal-state-etcd "
                 "version=%d\")",
                 key, STATE_ETCD_SCHEMA);
        return buf;
    }
    if (*version > STATE_ETCD_SCHEMA) {
        snprintf(buf, size, "etcd key %s: state schema version %u is newer than this frugal's %d",
                 key, *version, STATE_ETCD_SCHEMA);
        return buf;
    }
    return NULL;
}

char *se__key(const etcd_backend_t *e, const char *suffix) {
    size_t n = strlen(e->prefix) + strlen(suffix) + 1;
    char *k = malloc(n);
    if (k != NULL)
        snprintf(k, n, "%s%s", e->prefix, suffix);
    return k;
}

char *se__group_key(const etcd_backend_t *e, const char *id) {
    size_t n = strlen(e->prefix) + strlen("groups/") + strlen(id) + 1;
    char *k = malloc(n);
    if (k != NULL)
        snprintf(k, n, "%sgroups/%s", e->prefix, id);
    return k;
}

/* The end of the range of every key starting with p: p with its last byte + 1 (p ends
 * with '/', never 0xff). */
char *se__range_end(const char *p) {
    char *end = strdup(p);
    if (end != NULL)
        end[strlen(end) - 1]++;
    return end;
}

ProtobufCBinaryData se__bytes(const char *s) {
    return (ProtobufCBinaryData){.len = strlen(s), .data = (uint8_t *)s};
}

void se__seen_free(seen_t *s) {
    if (s != NULL) {
        free(s->id);
        free(s->text);
        free(s);
    }
}

static void se__map_clear(strmap_t **m) {
    size_t pos = 0;
    const char *k;
    void *v;
    while (*m != NULL && strmap_next(*m, &pos, &k, &v))
        se__seen_free(v);
    strmap_destroy(*m);
    *m = NULL;
    strmap_create(64, m);
}

void se__seen_clear(etcd_backend_t *e) {
    se__map_clear(&e->seen);
    se__map_clear(&e->corrupt);
}

void se__corrupt_mark(etcd_backend_t *e, const char *id, int64_t revision) {
    seen_t *s = calloc(1, sizeof(*s));
    void *old = NULL;
    if (s == NULL || (s->id = strdup(id)) == NULL || e->corrupt == NULL ||
        strmap_put(e->corrupt, s->id, s, &old) != 0) {
        se__seen_free(s); /* out of memory: the write's compare still refuses it */
        return;
    }
    s->mod_revision = revision;
    se__seen_free(old);
}

void se__corrupt_clear(etcd_backend_t *e, const char *id) {
    if (e->corrupt != NULL)
        se__seen_free(strmap_remove(e->corrupt, id));
}

/* Record text at revision for id (under mu). */
int se__seen_put(etcd_backend_t *e, const char *id, int64_t revision, const char *text,
                 size_t len) {
    seen_t *s = calloc(1, sizeof(*s));
    if (s == NULL || (s->id = strdup(id)) == NULL || (s->text = strndup(text, len)) == NULL) {
        se__seen_free(s);
        return FRUGAL_ENOMEM;
    }
    s->mod_revision = revision;
    void *old = NULL;
    if (strmap_put(e->seen, s->id, s, &old) != 0) {
        se__seen_free(s);
        return FRUGAL_ENOMEM;
    }
    se__seen_free(old);
    return 0;
}

/* Read every key under the prefix: *resp (free with protobuf_c_message_free_unpacked). */
int se__range_all(etcd_backend_t *e, Etcdserverpb__RangeResponse **resp, frugal_err_t *err) {
    char *end = se__range_end(e->prefix);
    if (end == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    Etcdserverpb__RangeRequest req = ETCDSERVERPB__RANGE_REQUEST__INIT;
    req.key = se__bytes(e->prefix);
    req.range_end = se__bytes(end);
    int rc = etcd_client_call(e->client, ETCD_KV_RANGE, &req.base,
                              &etcdserverpb__range_response__descriptor, (ProtobufCMessage **)resp,
                              ETCD_CALL_IDEMPOTENT, 0, err);
    free(end);
    return rc;
}

/* How long a request may take: the client's timeout, or less when the caller's
 * deadline_ms (monotonic; 0: none) comes sooner, at least 1 ms (a budget already spent
 * fails the request as unavailable). */
int64_t se__timeout_ms(const etcd_backend_t *e, int64_t deadline_ms) {
    int64_t t = etcd_client_timeout_ms(e->client);
    int64_t left = deadline_ms > 0 ? deadline_ms - clock_mono_ms() : t;
    return left < t ? (left > 1 ? left : 1) : t;
}

/* The cache may be stale while the Watch is down or no etcd endpoint answers (a Watch
 * stream to a stopped etcd fails only later, when its connection does). */
void se__publish_stale(etcd_backend_t *e) {
    metrics_state_stale(atomic_load(&e->watch_down) || atomic_load(&e->watch_stuck) ||
                        atomic_load(&e->unreachable));
}
