/* The etcd state backend.
 *
 * Keys under the prefix P (docs/state-etcd.md):
 *   P + "schema"        "frugal-state-etcd version=1"
 *   P + "groups/" + ID  one node group in the state file's format (state.h), one group
 *   P + "leader"        the leader's identity, attached to its lease
 * Anything else under P is foreign: the start is refused, naming the key.
 *
 * Every commit is one Txn: for each group it changes, a compare of the group key's
 * mod_revision with the revision this replica last saw (0: absent), then the puts and
 * deletes. Another replica's commit in between fails the compare: FRUGAL_EABORTED, and
 * the cluster retries on the state the Watch brings. Provider work additionally
 * compares P/leader's lease with ours (fencing).
 *
 * Threads: the Watch thread applies other replicas' commits through the cluster's
 * callback; the lease thread grants, keeps alive and re-elects. Lock order: the
 * cluster's write_mu, then this backend's mu; the Watch thread never holds mu while
 * it calls the cluster. */
#include "state_etcd.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "etcd/rpc.pb-c.h"
#include "etcd_client.h"
#include "log.h"
#include "metrics.h"
#include "strmap.h"

#define STATE_ETCD_SCHEMA 1
#define STATE_ETCD_SCHEMA_TEXT "frugal-state-etcd version=1\n"

/* What this replica last saw of one group key. */
typedef struct seen {
    char *id;
    int64_t mod_revision;
    char *text;
} seen_t;

typedef struct etcd_backend {
    etcd_client_t *client;
    char *prefix;
    char *description;
    char *identity; /* host:pid, the leader key's value */
    int64_t lease_ttl_ms;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    strmap_t *seen;          /* id -> seen_t *, under mu */
    int64_t schema_revision; /* mod_revision of P/schema, 0: absent */
    int64_t revision;        /* the store revision the cache holds everything up to */
    int64_t wanted;          /* sync: the revision a conflict showed */
    /* leadership */
    atomic_llong lease_id;    /* 0: none */
    atomic_bool leader;       /* holds P/leader with lease_id */
    atomic_llong valid_until; /* monotonic ms: leadership is trusted until then */
    atomic_bool elect_now;    /* the Watch saw P/leader go: try at once */
    atomic_bool loaded;       /* the prefix was read and is frugal's: it may write P/leader */
    pthread_mutex_t lease_mu; /* guards lease_fn/lease_arg and serialises the reports */
    state_lease_fn lease_fn;
    void *lease_arg;
    atomic_bool stop;
    atomic_bool watch_stop;
    atomic_bool watch_down;    /* the Watch could not be opened: the cache may be stale */
    atomic_bool watch_stuck;   /* open, but keys changed that it did not bring */
    atomic_bool watch_restart; /* reopen the Watch on another endpoint */
    int64_t lag_revision;      /* Watch thread: the cache revision a lag was first seen at */
    int64_t lag_since_ms;      /* ... and when (monotonic ms) */
    int64_t next_check_ms;     /* ... and when to look again */
    atomic_bool unreachable;   /* the last lease renewal reached no endpoint */
    bool lease_thread_started;
    pthread_t lease_thread;
    bool watch_thread_started;
    pthread_t watch_thread;
    state_watch_fn watch_fn;
    void *watch_arg;
} etcd_backend_t;

/* P + suffix, malloc'ed. */
static char *se__key(const etcd_backend_t *e, const char *suffix) {
    size_t n = strlen(e->prefix) + strlen(suffix) + 1;
    char *k = malloc(n);
    if (k != NULL)
        snprintf(k, n, "%s%s", e->prefix, suffix);
    return k;
}

static char *se__group_key(const etcd_backend_t *e, const char *id) {
    size_t n = strlen(e->prefix) + strlen("groups/") + strlen(id) + 1;
    char *k = malloc(n);
    if (k != NULL)
        snprintf(k, n, "%sgroups/%s", e->prefix, id);
    return k;
}

/* The end of the range of every key starting with p: p with its last byte + 1 (p ends
 * with '/', never 0xff). */
static char *se__range_end(const char *p) {
    char *end = strdup(p);
    if (end != NULL)
        end[strlen(end) - 1]++;
    return end;
}

static ProtobufCBinaryData se__bytes(const char *s) {
    return (ProtobufCBinaryData){.len = strlen(s), .data = (uint8_t *)s};
}

static void seen_free(seen_t *s) {
    if (s != NULL) {
        free(s->id);
        free(s->text);
        free(s);
    }
}

static void se__seen_clear(etcd_backend_t *e) {
    size_t pos = 0;
    const char *k;
    void *v;
    while (strmap_next(e->seen, &pos, &k, &v))
        seen_free(v);
    strmap_destroy(e->seen);
    e->seen = NULL;
    strmap_create(64, &e->seen);
}

/* Record text at revision for id (under mu). */
static int se__seen_put(etcd_backend_t *e, const char *id, int64_t revision, const char *text,
                        size_t len) {
    seen_t *s = calloc(1, sizeof(*s));
    if (s == NULL || (s->id = strdup(id)) == NULL || (s->text = strndup(text, len)) == NULL) {
        seen_free(s);
        return FRUGAL_ENOMEM;
    }
    s->mod_revision = revision;
    void *old = NULL;
    if (strmap_put(e->seen, s->id, s, &old) != 0) {
        seen_free(s);
        return FRUGAL_ENOMEM;
    }
    seen_free(old);
    return 0;
}

/* ---- load ---- */

/* One key of a full read: check it and add its group to out. */
static int se__load_kv(etcd_backend_t *e, const Mvccpb__KeyValue *kv, state_t *out, bool *schema,
                       frugal_err_t *err) {
    size_t plen = strlen(e->prefix);
    char *key = strndup((const char *)kv->key.data, kv->key.len);
    if (key == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    const char *rest = key + plen;
    int rc = 0;
    if (strcmp(rest, "schema") == 0) {
        unsigned version = 0;
        char tail = 0;
        char *text = strndup((const char *)kv->value.data, kv->value.len);
        int got =
            text != NULL ? sscanf(text, "frugal-state-etcd version=%u%c", &version, &tail) : 0;
        /* %u reads "-1" as a huge version and "+1" as 1; there never was a version 0 */
        bool digits = got >= 1 && text[strlen("frugal-state-etcd version=")] >= '1' &&
                      text[strlen("frugal-state-etcd version=")] <= '9';
        free(text);
        if (got < 1 || (got == 2 && tail != '\n') || !digits)
            rc = frugal_err_set(err, FRUGAL_EINVAL,
                                "etcd key %s holds foreign or corrupt data (expected "
                                "\"frugal-state-etcd version=%d\"): refusing to start, nothing "
                                "was written",
                                key, STATE_ETCD_SCHEMA);
        else if (version > STATE_ETCD_SCHEMA)
            rc = frugal_err_set(err, FRUGAL_EINVAL,
                                "etcd key %s: state schema version %u is newer than this "
                                "frugal's %d: upgrade frugal; nothing was written",
                                key, version, STATE_ETCD_SCHEMA);
        else {
            *schema = true;
            e->schema_revision = kv->mod_revision;
        }
    } else if (strcmp(rest, "leader") == 0) {
        /* the election's key, not state */
    } else if (strncmp(rest, "groups/", 7) == 0 && rest[7] != '\0') {
        const char *id = rest + 7;
        state_t one;
        rc = state_parse(key, (const char *)kv->value.data, kv->value.len, &one, err);
        if (rc == 0 && (one.count != 1 || strcmp(one.groups[0].spec.id, id) != 0)) {
            rc = frugal_err_set(err, FRUGAL_EINVAL,
                                "etcd key %s holds %zu node groups%s%s, not exactly group %s: "
                                "refusing to start, nothing was written",
                                key, one.count, one.count == 1 ? ": " : "",
                                one.count == 1 ? one.groups[0].spec.id : "", id);
        } else if (rc != 0) {
            char why[FRUGAL_ERR_MSG_MAX];
            snprintf(why, sizeof(why), "%s", err->msg);
            rc = frugal_err_set(err, FRUGAL_EINVAL,
                                "etcd key %s holds corrupt data (%s): refusing to start, "
                                "nothing was written",
                                key, why);
        }
        if (rc == 0) {
            group_t *g = realloc(out->groups, (out->count + 1) * sizeof(*g));
            if (g == NULL) {
                rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
            } else {
                out->groups = g;
                out->groups[out->count++] = one.groups[0];
                memset(&one.groups[0], 0, sizeof(one.groups[0]));
                if (se__seen_put(e, id, kv->mod_revision, (const char *)kv->value.data,
                                 kv->value.len) != 0)
                    rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
            }
        }
        if (one.groups != NULL || one.count > 0)
            state_free(&one);
    } else {
        rc = frugal_err_set(err, FRUGAL_EINVAL,
                            "etcd key %s under prefix %s is not frugal's: refusing to start, "
                            "nothing was written (use another prefix, or remove the key)",
                            key, e->prefix);
    }
    free(key);
    return rc;
}

/* Read every key under the prefix: *resp (free with protobuf_c_message_free_unpacked). */
static int se__range_all(etcd_backend_t *e, Etcdserverpb__RangeResponse **resp, frugal_err_t *err) {
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

static int etcd_load(state_backend_t *b, state_t *out, frugal_err_t *err) {
    etcd_backend_t *e = b->impl;
    memset(out, 0, sizeof(*out));
    Etcdserverpb__RangeResponse *resp = NULL;
    int rc = se__range_all(e, &resp, err);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&e->mu);
    se__seen_clear(e);
    e->schema_revision = 0;
    bool schema = false;
    /* The schema first: groups written by a newer frugal are refused for their version,
     * not as corrupt data. */
    size_t plen = strlen(e->prefix);
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < resp->n_kvs && rc == 0; i++) {
            const ProtobufCBinaryData *k = &resp->kvs[i]->key;
            bool is_schema = k->len == plen + 6 && memcmp(k->data + plen, "schema", 6) == 0;
            if (is_schema == (pass == 0))
                rc = se__load_kv(e, resp->kvs[i], out, &schema, err);
        }
    }
    if (rc == 0 && !schema && out->count > 0)
        rc = frugal_err_set(err, FRUGAL_EINVAL,
                            "etcd prefix %s holds node groups but no %sschema key: refusing to "
                            "start, nothing was written",
                            e->prefix, e->prefix);
    e->revision = resp->header != NULL ? resp->header->revision : 0;
    if (rc != 0) {
        state_free(out);
        se__seen_clear(e);
    }
    pthread_mutex_unlock(&e->mu);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    /* Only a prefix known to be frugal's (or empty) gets a leader key: elect at once. */
    if (rc == 0 && !atomic_exchange(&e->loaded, true))
        atomic_store(&e->elect_now, true);
    if (rc == 0 && !schema)
        return frugal_err_set(err, FRUGAL_ENOTFOUND, "etcd prefix %s is empty", e->prefix);
    return rc;
}

/* ---- commit ---- */

typedef struct txn_build {
    Etcdserverpb__Compare *cmp;
    Etcdserverpb__Compare **cmpp;
    size_t ncmp;
    Etcdserverpb__RequestOp *ops;
    Etcdserverpb__RequestOp **opsp;
    Etcdserverpb__PutRequest *puts;
    Etcdserverpb__DeleteRangeRequest *dels;
    size_t nops;
    char **owned; /* keys and texts to free */
    size_t nowned;
} txn_build_t;

static void txn_build_free(txn_build_t *t) {
    for (size_t i = 0; i < t->nowned; i++)
        free(t->owned[i]);
    free(t->owned);
    free(t->cmp);
    free(t->cmpp);
    free(t->ops);
    free(t->opsp);
    free(t->puts);
    free(t->dels);
}

static int txn_build_init(txn_build_t *t, size_t n) {
    memset(t, 0, sizeof(*t));
    n += 3;
    t->cmp = calloc(n, sizeof(*t->cmp));
    t->cmpp = calloc(n, sizeof(*t->cmpp));
    t->ops = calloc(n, sizeof(*t->ops));
    t->opsp = calloc(n, sizeof(*t->opsp));
    t->puts = calloc(n, sizeof(*t->puts));
    t->dels = calloc(n, sizeof(*t->dels));
    t->owned = calloc(3 * n + 4, sizeof(*t->owned));
    return t->cmp && t->cmpp && t->ops && t->opsp && t->puts && t->dels && t->owned ? 0
                                                                                    : FRUGAL_ENOMEM;
}

static char *txn_own(txn_build_t *t, char *s) {
    if (s != NULL)
        t->owned[t->nowned++] = s;
    return s;
}

static void txn_compare(txn_build_t *t, const char *key, Etcdserverpb__Compare__CompareTarget tg,
                        int64_t v) {
    Etcdserverpb__Compare *c = &t->cmp[t->ncmp];
    etcdserverpb__compare__init(c);
    c->result = ETCDSERVERPB__COMPARE__COMPARE_RESULT__EQUAL;
    c->target = tg;
    c->key = se__bytes(key);
    if (tg == ETCDSERVERPB__COMPARE__COMPARE_TARGET__LEASE) {
        c->target_union_case = ETCDSERVERPB__COMPARE__TARGET_UNION_LEASE;
        c->lease = v;
    } else {
        c->target_union_case = ETCDSERVERPB__COMPARE__TARGET_UNION_MOD_REVISION;
        c->mod_revision = v;
    }
    t->cmpp[t->ncmp] = c;
    t->ncmp++;
}

static void txn_put(txn_build_t *t, const char *key, const char *value) {
    Etcdserverpb__PutRequest *p = &t->puts[t->nops];
    etcdserverpb__put_request__init(p);
    p->key = se__bytes(key);
    p->value = se__bytes(value);
    Etcdserverpb__RequestOp *op = &t->ops[t->nops];
    etcdserverpb__request_op__init(op);
    op->request_case = ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_PUT;
    op->request_put = p;
    t->opsp[t->nops] = op;
    t->nops++;
}

static void txn_delete(txn_build_t *t, const char *key) {
    Etcdserverpb__DeleteRangeRequest *d = &t->dels[t->nops];
    etcdserverpb__delete_range_request__init(d);
    d->key = se__bytes(key);
    Etcdserverpb__RequestOp *op = &t->ops[t->nops];
    etcdserverpb__request_op__init(op);
    op->request_case = ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_DELETE_RANGE;
    op->request_delete_range = d;
    t->opsp[t->nops] = op;
    t->nops++;
}

static bool se__leader_now(etcd_backend_t *e) {
    return atomic_load(&e->leader) && clock_mono_ms() < atomic_load(&e->valid_until);
}

/* Tell the lease listener how long this replica surely leads (0: it does not). */
static void se__publish_lease(etcd_backend_t *e) {
    pthread_mutex_lock(&e->lease_mu);
    if (e->lease_fn != NULL)
        e->lease_fn(e->lease_arg, se__leader_now(e) ? atomic_load(&e->valid_until) : 0);
    pthread_mutex_unlock(&e->lease_mu);
}

/* How long a request may take: the client's timeout, or less when the caller's
 * deadline_ms (monotonic; 0: none) comes sooner, at least 1 ms (a budget already spent
 * fails the request as unavailable). */
static int64_t se__timeout_ms(const etcd_backend_t *e, int64_t deadline_ms) {
    int64_t t = etcd_client_timeout_ms(e->client);
    int64_t left = deadline_ms > 0 ? deadline_ms - clock_mono_ms() : t;
    return left < t ? (left > 1 ? left : 1) : t;
}

static int etcd_commit(state_backend_t *b, const state_commit_t *sc, frugal_err_t *err) {
    etcd_backend_t *e = b->impl;
    txn_build_t t;
    size_t n = sc->changed_count + sc->removed_count;
    if (txn_build_init(&t, n) != 0) {
        txn_build_free(&t);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    int64_t lease = atomic_load(&e->lease_id);
    if (sc->provider_work && (!se__leader_now(e) || lease == 0)) {
        txn_build_free(&t);
        /* Fenced before etcd is asked: its lease has run out by this replica's clock. */
        metrics_count(METRICS_ETCD_TXN_REFUSED, "fenced", NULL, NULL);
        return frugal_err_set(err, FRUGAL_EPRECOND,
                              "this replica is not the leader: provider work is refused");
    }
    int rc = 0;
    char **texts = calloc(n + 1, sizeof(*texts));
    if (texts == NULL)
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    pthread_mutex_lock(&e->mu);
    char *schema_key = txn_own(&t, se__key(e, "schema"));
    char *leader_key = txn_own(&t, se__key(e, "leader"));
    if (schema_key == NULL || leader_key == NULL)
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    for (size_t i = 0; i < sc->changed_count && rc == 0; i++) {
        const group_t *g = sc->changed[i];
        size_t len = 0;
        if ((rc = state_format(&g, 1, &texts[i], &len, err)) != 0)
            break;
        const seen_t *s = sc->restore ? NULL : strmap_get(e->seen, g->spec.id);
        if (s != NULL && strcmp(s->text, texts[i]) == 0)
            continue; /* stored as it is: nothing to write */
        char *key = txn_own(&t, se__group_key(e, g->spec.id));
        if (key == NULL) {
            rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
            break;
        }
        txn_compare(&t, key, ETCDSERVERPB__COMPARE__COMPARE_TARGET__MOD,
                    s != NULL ? s->mod_revision : 0);
        txn_put(&t, key, texts[i]);
    }
    for (size_t i = 0; i < sc->removed_count && rc == 0; i++) {
        const seen_t *s = strmap_get(e->seen, sc->removed[i]);
        if (s == NULL)
            continue;
        char *key = txn_own(&t, se__group_key(e, sc->removed[i]));
        if (key == NULL) {
            rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
            break;
        }
        txn_compare(&t, key, ETCDSERVERPB__COMPARE__COMPARE_TARGET__MOD, s->mod_revision);
        txn_delete(&t, key);
    }
    if (rc == 0 && t.nops > 0) {
        if (e->schema_revision == 0) {
            txn_compare(&t, schema_key, ETCDSERVERPB__COMPARE__COMPARE_TARGET__MOD, 0);
            txn_put(&t, schema_key, STATE_ETCD_SCHEMA_TEXT);
        }
        if (sc->provider_work)
            txn_compare(&t, leader_key, ETCDSERVERPB__COMPARE__COMPARE_TARGET__LEASE, lease);
        char *groups = txn_own(&t, se__key(e, "groups/"));
        char *groups_end = txn_own(&t, groups != NULL ? se__range_end(groups) : NULL);
        if (sc->whole_view && groups_end != NULL) {
            /* The limits counted every group: no group key may have changed after the
             * revision this replica's cache holds (a change of its own that the Watch
             * has not brought back yet fails it too; the retry waits for it). */
            Etcdserverpb__Compare *c = &t.cmp[t.ncmp];
            etcdserverpb__compare__init(c);
            c->result = ETCDSERVERPB__COMPARE__COMPARE_RESULT__LESS;
            c->target = ETCDSERVERPB__COMPARE__COMPARE_TARGET__MOD;
            c->key = se__bytes(groups);
            c->range_end = se__bytes(groups_end);
            c->target_union_case = ETCDSERVERPB__COMPARE__TARGET_UNION_MOD_REVISION;
            c->mod_revision = e->revision + 1;
            t.cmpp[t.ncmp++] = c;
        }
        Etcdserverpb__TxnRequest req = ETCDSERVERPB__TXN_REQUEST__INIT;
        req.n_compare = t.ncmp;
        req.compare = t.cmpp;
        req.n_success = t.nops;
        req.success = t.opsp;
        Etcdserverpb__TxnResponse *resp = NULL;
        rc = etcd_client_call(e->client, ETCD_KV_TXN, &req.base,
                              &etcdserverpb__txn_response__descriptor, (ProtobufCMessage **)&resp,
                              0, se__timeout_ms(e, sc->deadline_ms), err);
        int64_t rev = rc == 0 && resp->header != NULL ? resp->header->revision : 0;
        if (rc == 0 && !resp->succeeded) {
            e->wanted = rev;
            bool fenced = sc->provider_work && !se__leader_now(e);
            /* The cache held every change up to the store's revision (the Watch waits for
             * mu), yet a compare failed: a key holds a value the cache refused. */
            bool unreadable = !fenced && !sc->provider_work && rev > 0 && rev <= e->revision;
            metrics_count(METRICS_ETCD_TXN_REFUSED,
                          fenced       ? "fenced"
                          : unreadable ? "unreadable"
                                       : "conflict",
                          NULL, NULL);
            if (unreadable)
                rc = frugal_err_set(err, FRUGAL_EPRECOND,
                                    "etcd: a key under %s holds a value this replica refused as "
                                    "corrupt (logged when it was written): put a valid value back "
                                    "or delete it; the write was refused",
                                    e->prefix);
            else if (fenced)
                rc = frugal_err_set(err, FRUGAL_EPRECOND,
                                    "this replica lost the leadership (lease %" PRIx64
                                    "): its write was refused",
                                    (uint64_t)lease);
            else
                rc = frugal_err_set(err, FRUGAL_EABORTED,
                                    "another replica changed %s in etcd first (store revision "
                                    "%" PRId64 ", this replica had %" PRId64 ")",
                                    sc->provider_work ? "the state or the leadership"
                                                      : "the node groups",
                                    rev, e->revision);
        } else if (rc == 0) {
            for (size_t i = 0; i < t.nops; i++) {
                const Etcdserverpb__RequestOp *op = t.opsp[i];
                if (op->request_case == ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_PUT) {
                    const char *key = (const char *)op->request_put->key.data;
                    if (strcmp(key, schema_key) == 0) {
                        e->schema_revision = rev;
                        continue;
                    }
                    se__seen_put(e, key + strlen(e->prefix) + 7, rev,
                                 (const char *)op->request_put->value.data,
                                 op->request_put->value.len);
                } else {
                    const char *key = (const char *)op->request_delete_range->key.data;
                    seen_free(strmap_remove(e->seen, key + strlen(e->prefix) + 7));
                }
            }
        }
        if (resp != NULL)
            protobuf_c_message_free_unpacked(&resp->base, NULL);
    }
    pthread_mutex_unlock(&e->mu);
    for (size_t i = 0; texts != NULL && i < n; i++)
        free(texts[i]);
    free(texts);
    txn_build_free(&t);
    return rc;
}

/* ---- sync: wait for the Watch to bring what a conflict showed ---- */

static int etcd_sync(state_backend_t *b, int64_t deadline_ms, frugal_err_t *err) {
    etcd_backend_t *e = b->impl;
    int64_t until = clock_mono_ms() + se__timeout_ms(e, deadline_ms);
    pthread_mutex_lock(&e->mu);
    while (e->revision < e->wanted && clock_mono_ms() < until) {
        struct timespec ts = clock_timespec_in(CLOCK_REALTIME, 20);
        pthread_cond_timedwait(&e->cond, &e->mu, &ts);
    }
    bool behind = e->revision < e->wanted;
    int64_t have = e->revision, want = e->wanted;
    pthread_mutex_unlock(&e->mu);
    if (behind)
        atomic_store(&e->watch_restart, true); /* its stream may be stuck: reopen it */
    if (behind)
        return frugal_err_set(err, FRUGAL_EUNAVAIL,
                              "etcd: this replica's cache is at revision %" PRId64
                              ", behind %" PRId64 ": the Watch is not current",
                              have, want);
    return 0;
}

/* ---- Watch ---- */

/* Whether key (bytes) is the prefix's schema key. */
static bool se__is_schema(const etcd_backend_t *e, const ProtobufCBinaryData *key) {
    size_t plen = strlen(e->prefix);
    return key->len == plen + 6 && memcmp(key->data, e->prefix, plen) == 0 &&
           memcmp(key->data + plen, "schema", 6) == 0;
}

/* Forget group id, deleted at revision, unless the cache holds a later write of it (the
 * leader's restore of a key deleted by hand, made in the deletion's callback). */
static void se__forget(etcd_backend_t *e, const char *id, int64_t revision) {
    pthread_mutex_lock(&e->mu);
    const seen_t *s = strmap_get(e->seen, id);
    if (s != NULL && s->mod_revision <= revision)
        seen_free(strmap_remove(e->seen, id));
    pthread_mutex_unlock(&e->mu);
}

/* Deliver one group key's new value (NULL: deleted) at revision, unless this replica
 * wrote it itself. */
static void se__deliver(etcd_backend_t *e, const char *key, const uint8_t *value, size_t len,
                        int64_t revision) {
    const char *rest = key + strlen(e->prefix);
    if (strcmp(rest, "schema") == 0) {
        /* Written by another replica's first commit, or deleted by hand (with the prefix,
         * say: the next commit writes it again). */
        pthread_mutex_lock(&e->mu);
        e->schema_revision = value != NULL ? revision : 0;
        pthread_mutex_unlock(&e->mu);
        return;
    }
    if (strncmp(rest, "groups/", 7) != 0)
        return;
    const char *id = rest + 7;
    pthread_mutex_lock(&e->mu);
    const seen_t *s = strmap_get(e->seen, id);
    bool known = s != NULL && s->mod_revision >= revision;
    pthread_mutex_unlock(&e->mu);
    if (known)
        return;
    if (value == NULL) {
        e->watch_fn(e->watch_arg, id, NULL);
        se__forget(e, id, revision);
        return;
    }
    state_t one;
    frugal_err_t err = {0};
    if (state_parse(key, (const char *)value, len, &one, &err) != 0 || one.count != 1 ||
        strcmp(one.groups[0].spec.id, id) != 0) {
        log_error("etcd key %s at revision %" PRId64 " is corrupt (%s): ignored, not overwritten",
                  key, revision, err.msg[0] ? err.msg : "not exactly its group");
        if (err.code == 0)
            state_free(&one);
        return;
    }
    e->watch_fn(e->watch_arg, id, &one.groups[0]);
    state_free(&one);
    pthread_mutex_lock(&e->mu);
    se__seen_put(e, id, revision, (const char *)value, len);
    pthread_mutex_unlock(&e->mu);
}

static int etcd_stored(state_backend_t *b, const char *id, group_t *out, frugal_err_t *err) {
    etcd_backend_t *e = b->impl;
    pthread_mutex_lock(&e->mu);
    const seen_t *s = strmap_get(e->seen, id);
    char *text = s != NULL ? strdup(s->text) : NULL;
    pthread_mutex_unlock(&e->mu);
    if (s == NULL)
        return FRUGAL_ENOTFOUND;
    char *key = se__group_key(e, id);
    state_t one = {0};
    int rc = text == NULL || key == NULL ? frugal_err_set(err, FRUGAL_ENOMEM, "out of memory")
                                         : state_parse(key, text, strlen(text), &one, err);
    if (rc == 0 && (one.count != 1 || strcmp(one.groups[0].spec.id, id) != 0))
        rc = frugal_err_set(err, FRUGAL_EINVAL, "etcd key %s holds not exactly group %s", key, id);
    if (rc == 0) {
        *out = one.groups[0];
        memset(&one.groups[0], 0, sizeof(one.groups[0]));
    }
    state_free(&one);
    free(key);
    free(text);
    return rc;
}

/* After a compaction: read everything and deliver what differs from the cache. */
static void se__resync(etcd_backend_t *e) {
    Etcdserverpb__RangeResponse *resp = NULL;
    frugal_err_t err = {0};
    if (se__range_all(e, &resp, &err) != 0) {
        log_warn("etcd resync failed: %s (retrying)", err.msg);
        return;
    }
    size_t plen = strlen(e->prefix);
    strmap_t *present = NULL; /* its keys point into keys[] */
    char **keys = calloc(resp->n_kvs + 1, sizeof(*keys));
    strmap_create(resp->n_kvs + 1, &present);
    for (size_t i = 0; keys != NULL && i < resp->n_kvs; i++) {
        const Mvccpb__KeyValue *kv = resp->kvs[i];
        char *key = keys[i] = strndup((const char *)kv->key.data, kv->key.len);
        if (key == NULL)
            continue;
        if (strncmp(key + plen, "groups/", 7) == 0 && present != NULL)
            strmap_put(present, key + plen + 7, (void *)1, NULL);
        se__deliver(e, key, kv->value.data, kv->value.len, kv->mod_revision);
    }
    if (keys == NULL || present == NULL) {
        strmap_destroy(present); /* without the full list no group can be called gone */
        present = NULL;
    }
    /* Groups gone meanwhile. */
    char **gone = NULL;
    size_t ngone = 0;
    pthread_mutex_lock(&e->mu);
    size_t pos = 0;
    const char *k;
    void *v;
    gone = calloc(strmap_count(e->seen) + 1, sizeof(*gone));
    while (gone != NULL && present != NULL && strmap_next(e->seen, &pos, &k, &v))
        if (strmap_get(present, k) == NULL)
            gone[ngone++] = strdup(k);
    pthread_mutex_unlock(&e->mu);
    for (size_t i = 0; i < ngone; i++) {
        if (gone[i] == NULL)
            continue;
        e->watch_fn(e->watch_arg, gone[i], NULL);
        se__forget(e, gone[i], resp->header != NULL ? resp->header->revision : INT64_MAX);
        free(gone[i]);
    }
    free(gone);
    strmap_destroy(present);
    for (size_t i = 0; keys != NULL && i < resp->n_kvs; i++)
        free(keys[i]);
    free(keys);
    pthread_mutex_lock(&e->mu);
    if (resp->header != NULL && resp->header->revision > e->revision)
        e->revision = resp->header->revision;
    pthread_cond_broadcast(&e->cond);
    pthread_mutex_unlock(&e->mu);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
}

/* The cache may be stale while the Watch is down or no etcd endpoint answers (a Watch
 * stream to a stopped etcd fails only later, when its connection does). */
static void se__publish_stale(etcd_backend_t *e) {
    metrics_state_stale(atomic_load(&e->watch_down) || atomic_load(&e->watch_stuck) ||
                        atomic_load(&e->unreachable));
}

/* Whether keys under the prefix changed after the revision the cache holds. */
static bool se__keys_after_cache(etcd_backend_t *e, int64_t have, bool *after) {
    char *end = se__range_end(e->prefix);
    Etcdserverpb__RangeRequest req = ETCDSERVERPB__RANGE_REQUEST__INIT;
    req.key = se__bytes(e->prefix);
    req.range_end = se__bytes(end);
    /* Keys, not a count: etcd counts before it applies min_mod_revision. */
    req.keys_only = true;
    req.min_mod_revision = have + 1;
    Etcdserverpb__RangeResponse *resp = NULL;
    frugal_err_t err = {0};
    int rc = end == NULL
                 ? FRUGAL_ENOMEM
                 : etcd_client_call(e->client, ETCD_KV_RANGE, &req.base,
                                    &etcdserverpb__range_response__descriptor,
                                    (ProtobufCMessage **)&resp, ETCD_CALL_IDEMPOTENT, 0, &err);
    free(end);
    if (rc != 0)
        return false;
    *after = resp->n_kvs > 0;
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return true;
}

/* How long keys may stay changed after the cache's revision before the Watch that
 * should have brought them counts as stuck, and how often that is looked at. */
#define SE_WATCH_STUCK_MS 1500
#define SE_WATCH_CHECK_MS 500

/* The Watch's liveness, looked at by the Watch thread itself: keys changed after the
 * cache's revision and still not brought SE_WATCH_STUCK_MS later mean its stream is stuck
 * (a member that hangs keeps it open and silent). True: reopen it on another endpoint;
 * the cache is marked stale until it has caught up. */
static bool se__watch_stuck(etcd_backend_t *e) {
    int64_t now = clock_mono_ms();
    if (now < e->next_check_ms)
        return false;
    e->next_check_ms = now + SE_WATCH_CHECK_MS;
    pthread_mutex_lock(&e->mu);
    int64_t have = e->revision;
    pthread_mutex_unlock(&e->mu);
    bool after = false;
    if (!se__keys_after_cache(e, have, &after))
        return false;
    if (!after) {
        e->lag_revision = 0;
        if (atomic_exchange(&e->watch_stuck, false)) {
            log_info("etcd Watch caught up (revision %" PRId64 ")", have);
            se__publish_stale(e);
        }
        return false;
    }
    if (e->lag_revision != have) {
        e->lag_revision = have; /* maybe on its way: look again */
        e->lag_since_ms = now;
        return false;
    }
    if (now - e->lag_since_ms < SE_WATCH_STUCK_MS)
        return false;
    e->lag_revision = 0;
    if (!atomic_exchange(&e->watch_stuck, true))
        log_warn("etcd Watch stuck: keys changed after revision %" PRId64
                 " and it brought none within %d ms (serving from the cache, marked stale; "
                 "reopening it on another endpoint)",
                 have, SE_WATCH_STUCK_MS);
    se__publish_stale(e);
    return true;
}

static void *se__watch_main(void *arg) {
    etcd_backend_t *e = arg;
    char *end = se__range_end(e->prefix);
    bool warned = false;
    while (!atomic_load(&e->stop) && !atomic_load(&e->watch_stop)) {
        pthread_mutex_lock(&e->mu);
        int64_t from = e->revision + 1;
        pthread_mutex_unlock(&e->mu);
        Etcdserverpb__WatchCreateRequest create = ETCDSERVERPB__WATCH_CREATE_REQUEST__INIT;
        create.key = se__bytes(e->prefix);
        create.range_end = se__bytes(end);
        create.start_revision = from;
        create.progress_notify = true;
        Etcdserverpb__WatchRequest req = ETCDSERVERPB__WATCH_REQUEST__INIT;
        req.request_union_case = ETCDSERVERPB__WATCH_REQUEST__REQUEST_UNION_CREATE_REQUEST;
        req.create_request = &create;
        etcd_watch_t *w = NULL;
        frugal_err_t err = {0};
        if (etcd_watch_open(e->client, &req.base, &w, &err) != 0) {
            if (!warned)
                log_warn("etcd Watch: %s (serving from the cache, marked stale; retrying)",
                         err.msg);
            atomic_store(&e->watch_down, true);
            se__publish_stale(e);
            warned = true;
            for (int i = 0; i < 5 && !atomic_load(&e->watch_stop); i++)
                usleep(100000);
            continue;
        }
        if (warned)
            log_info("etcd Watch restored from revision %" PRId64, from);
        atomic_store(&e->watch_down, false);
        se__publish_stale(e);
        warned = false;
        while (!atomic_load(&e->stop) && !atomic_load(&e->watch_stop)) {
            if (atomic_exchange(&e->watch_restart, false) || se__watch_stuck(e)) {
                etcd_watch_avoid(e->client, w);
                break;
            }
            Etcdserverpb__WatchResponse *resp = NULL;
            if (etcd_watch_next(w, (ProtobufCMessage **)&resp, 200, &err) != 0)
                break;
            if (resp == NULL)
                continue;
            log_debug("etcd Watch: %zu events, created=%d canceled=%d revision %" PRId64,
                      resp->n_events, (int)resp->created, (int)resp->canceled,
                      resp->header != NULL ? resp->header->revision : -1);
            if (resp->compact_revision > 0) {
                log_warn("etcd compacted revision %" PRId64 " this replica's Watch needed "
                         "(it had %" PRId64 "): resyncing from a full read",
                         resp->compact_revision, from - 1);
                protobuf_c_message_free_unpacked(&resp->base, NULL);
                se__resync(e);
                break;
            }
            /* The schema key's events first: a restore that a group's deletion makes
             * must know the schema went with it (a prefix deleted at once lists its keys
             * in order, groups/ before schema). */
            for (size_t pass = 0; pass < 2 * resp->n_events; pass++) {
                const Mvccpb__Event *ev = resp->events[pass % resp->n_events];
                if (ev->kv == NULL || se__is_schema(e, &ev->kv->key) != (pass < resp->n_events))
                    continue;
                char *key = strndup((const char *)ev->kv->key.data, ev->kv->key.len);
                if (key == NULL)
                    continue;
                bool del = ev->type == MVCCPB__EVENT__EVENT_TYPE__DELETE;
                /* The leader's lease expired or was revoked: elect now, not at the next
                 * renewal (failover in about lease_ttl rather than up to 1.25x). */
                if (del && strcmp(key + strlen(e->prefix), "leader") == 0) {
                    log_info("etcd: %s was deleted (the leader's lease ended): electing now", key);
                    atomic_store(&e->elect_now, true);
                }
                se__deliver(e, key, del ? NULL : ev->kv->value.data, ev->kv->value.len,
                            ev->kv->mod_revision);
                free(key);
            }
            bool canceled = resp->canceled;
            pthread_mutex_lock(&e->mu);
            if (resp->header != NULL && resp->header->revision > e->revision && !resp->created)
                e->revision = resp->header->revision;
            pthread_cond_broadcast(&e->cond);
            pthread_mutex_unlock(&e->mu);
            protobuf_c_message_free_unpacked(&resp->base, NULL);
            if (canceled)
                break;
        }
        etcd_watch_close(w);
    }
    free(end);
    return NULL;
}

static int etcd_watch(state_backend_t *b, state_watch_fn fn, void *arg, frugal_err_t *err) {
    etcd_backend_t *e = b->impl;
    if (fn == NULL) {
        if (e->watch_thread_started) {
            atomic_store(&e->watch_stop, true);
            pthread_join(e->watch_thread, NULL);
            e->watch_thread_started = false;
        }
        return 0;
    }
    e->watch_fn = fn;
    e->watch_arg = arg;
    atomic_store(&e->watch_stop, false);
    if (pthread_create(&e->watch_thread, NULL, se__watch_main, e) != 0)
        return frugal_err_set(err, FRUGAL_EINTERNAL, "cannot start the etcd Watch thread");
    e->watch_thread_started = true;
    return 0;
}

/* ---- leadership ---- */

static int se__grant(etcd_backend_t *e, frugal_err_t *err) {
    Etcdserverpb__LeaseGrantRequest req = ETCDSERVERPB__LEASE_GRANT_REQUEST__INIT;
    req.ttl = (e->lease_ttl_ms + 999) / 1000;
    Etcdserverpb__LeaseGrantResponse *resp = NULL;
    int64_t t0 = clock_mono_ms();
    int rc = etcd_client_call(e->client, ETCD_LEASE_GRANT, &req.base,
                              &etcdserverpb__lease_grant_response__descriptor,
                              (ProtobufCMessage **)&resp, 0, 0, err);
    if (rc != 0)
        return rc;
    if (resp->error != NULL && resp->error[0] != '\0') {
        rc = frugal_err_set(err, FRUGAL_EINVAL, "etcd LeaseGrant: %s", resp->error);
    } else {
        atomic_store(&e->lease_id, resp->id);
        atomic_store(&e->valid_until, t0 + resp->ttl * 1000 - e->lease_ttl_ms / 5);
    }
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    return rc;
}

/* Take P/leader when it is free; leader when it holds our lease. */
static void se__elect(etcd_backend_t *e) {
    int64_t lease = atomic_load(&e->lease_id);
    char *key = se__key(e, "leader");
    if (key == NULL)
        return;
    Etcdserverpb__Compare cmp = ETCDSERVERPB__COMPARE__INIT;
    cmp.result = ETCDSERVERPB__COMPARE__COMPARE_RESULT__EQUAL;
    cmp.target = ETCDSERVERPB__COMPARE__COMPARE_TARGET__CREATE;
    cmp.key = se__bytes(key);
    cmp.target_union_case = ETCDSERVERPB__COMPARE__TARGET_UNION_CREATE_REVISION;
    cmp.create_revision = 0;
    Etcdserverpb__Compare *cmpp = &cmp;
    Etcdserverpb__PutRequest put = ETCDSERVERPB__PUT_REQUEST__INIT;
    put.key = se__bytes(key);
    put.value = se__bytes(e->identity);
    put.lease = lease;
    Etcdserverpb__RequestOp op = ETCDSERVERPB__REQUEST_OP__INIT;
    op.request_case = ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_PUT;
    op.request_put = &put;
    Etcdserverpb__RequestOp *opp = &op;
    Etcdserverpb__RangeRequest range = ETCDSERVERPB__RANGE_REQUEST__INIT;
    range.key = se__bytes(key);
    Etcdserverpb__RequestOp fop = ETCDSERVERPB__REQUEST_OP__INIT;
    fop.request_case = ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_RANGE;
    fop.request_range = &range;
    Etcdserverpb__RequestOp *fopp = &fop;
    Etcdserverpb__TxnRequest req = ETCDSERVERPB__TXN_REQUEST__INIT;
    req.n_compare = 1;
    req.compare = &cmpp;
    req.n_success = 1;
    req.success = &opp;
    req.n_failure = 1;
    req.failure = &fopp;
    Etcdserverpb__TxnResponse *resp = NULL;
    frugal_err_t err = {0};
    bool was = atomic_load(&e->leader);
    bool now = false;
    if (etcd_client_call(e->client, ETCD_KV_TXN, &req.base, &etcdserverpb__txn_response__descriptor,
                         (ProtobufCMessage **)&resp, ETCD_CALL_IDEMPOTENT, 0, &err) == 0) {
        if (resp->succeeded) {
            now = true;
        } else if (resp->n_responses == 1 && resp->responses[0]->response_range != NULL &&
                   resp->responses[0]->response_range->n_kvs == 1) {
            now = resp->responses[0]->response_range->kvs[0]->lease == lease;
        }
        protobuf_c_message_free_unpacked(&resp->base, NULL);
    } else {
        now = was; /* unknown: keep it until the lease's own deadline */
    }
    atomic_store(&e->leader, now);
    if (now && !was)
        log_info("leader: %s holds %s (lease %" PRIx64 ")", e->identity, key, (uint64_t)lease);
    else if (!now && was)
        log_warn("leadership lost: %s no longer holds %s", e->identity, key);
    metrics_state_leader(now);
    se__publish_lease(e);
    free(key);
}

/* Renew the lease; false, and no lease (lease_id 0), when etcd answers that it is gone
 * (expired while we were away). */
static bool se__keepalive(etcd_backend_t *e) {
    Etcdserverpb__LeaseKeepAliveRequest req = ETCDSERVERPB__LEASE_KEEP_ALIVE_REQUEST__INIT;
    req.id = atomic_load(&e->lease_id);
    Etcdserverpb__LeaseKeepAliveResponse *resp = NULL;
    frugal_err_t err = {0};
    int64_t t0 = clock_mono_ms();
    if (etcd_client_call(e->client, ETCD_LEASE_KEEPALIVE, &req.base,
                         &etcdserverpb__lease_keep_alive_response__descriptor,
                         (ProtobufCMessage **)&resp, ETCD_CALL_IDEMPOTENT, 0, &err) != 0) {
        atomic_store(&e->unreachable, true);
        se__publish_stale(e);
        return true; /* unreachable: the lease may still hold; valid_until decides */
    }
    atomic_store(&e->unreachable, false);
    se__publish_stale(e);
    bool alive = resp->ttl > 0;
    if (alive)
        atomic_store(&e->valid_until, t0 + resp->ttl * 1000 - e->lease_ttl_ms / 5);
    else
        atomic_store(&e->lease_id, 0);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    se__publish_lease(e);
    return alive;
}

/* With no lease, or after this replica's trusted time ran out: whether it holds a live
 * lease again. Often only its clock ran out (etcd out of reach, or electing a raft leader)
 * and etcd kept the lease: that one is renewed, since a new one would leave P/leader on
 * the old lease, and the cluster without a leader, until etcd expires it. A new lease is
 * granted only once etcd answered that the old one is gone. */
static bool se__regain_lease(etcd_backend_t *e, frugal_err_t *err) {
    if (atomic_load(&e->lease_id) != 0 && se__keepalive(e))
        return clock_mono_ms() < atomic_load(&e->valid_until);
    return se__grant(e, err) == 0; /* none, or etcd answered that it is gone */
}

static void *se__lease_main(void *arg) {
    etcd_backend_t *e = arg;
    while (!atomic_load(&e->stop)) {
        frugal_err_t err = {0};
        if (atomic_load(&e->lease_id) == 0 || clock_mono_ms() >= atomic_load(&e->valid_until)) {
            if (atomic_load(&e->leader))
                log_warn("leadership lost: no keep-alive of %s's lease was confirmed in time",
                         e->identity);
            atomic_store(&e->leader, false);
            metrics_state_leader(false);
            se__publish_lease(e);
            if (!se__regain_lease(e, &err)) {
                usleep(200000);
                continue;
            }
        } else if (!se__keepalive(e)) {
            continue;
        }
        if (atomic_load(&e->loaded))
            se__elect(e);
        /* Until the clock says so, not for a count of steps: after a pause (SIGSTOP, a
         * frozen VM) the next round comes at once, while etcd may still hold the lease. */
        int64_t wake = clock_mono_ms() + e->lease_ttl_ms / 4;
        while (clock_mono_ms() < wake && !atomic_load(&e->stop) &&
               !atomic_exchange(&e->elect_now, false))
            usleep(50000);
    }
    return NULL;
}

static int etcd_lock(state_backend_t *b, frugal_err_t *err) {
    etcd_backend_t *e = b->impl;
    /* A first lease proves the endpoints and credentials before anything is served. */
    int rc = se__grant(e, err);
    if (rc != 0)
        return rc;
    if (pthread_create(&e->lease_thread, NULL, se__lease_main, e) != 0)
        return frugal_err_set(err, FRUGAL_EINTERNAL, "cannot start the etcd lease thread");
    e->lease_thread_started = true;
    return 0;
}

static bool etcd_leader(state_backend_t *b) {
    return se__leader_now(b->impl);
}

static void etcd_lease(state_backend_t *b, state_lease_fn fn, void *arg) {
    etcd_backend_t *e = b->impl;
    pthread_mutex_lock(&e->lease_mu);
    e->lease_fn = fn;
    e->lease_arg = arg;
    pthread_mutex_unlock(&e->lease_mu);
    se__publish_lease(e);
}

static const char *etcd_describe(const state_backend_t *b) {
    const etcd_backend_t *e = b->impl;
    return e->description;
}

static void etcd_destroy(state_backend_t *b) {
    etcd_backend_t *e = b->impl;
    atomic_store(&e->stop, true);
    atomic_store(&e->watch_stop, true);
    if (e->watch_thread_started)
        pthread_join(e->watch_thread, NULL);
    if (e->lease_thread_started)
        pthread_join(e->lease_thread, NULL);
    int64_t lease = atomic_load(&e->lease_id);
    if (lease != 0) {
        /* Hand the leadership over now rather than after lease_ttl. */
        Etcdserverpb__LeaseRevokeRequest req = ETCDSERVERPB__LEASE_REVOKE_REQUEST__INIT;
        req.id = lease;
        ProtobufCMessage *resp = NULL;
        frugal_err_t err = {0};
        if (etcd_client_call(e->client, ETCD_LEASE_REVOKE, &req.base,
                             &etcdserverpb__lease_revoke_response__descriptor, &resp,
                             ETCD_CALL_IDEMPOTENT, 0, &err) == 0)
            protobuf_c_message_free_unpacked(resp, NULL);
    }
    etcd_client_destroy(e->client);
    se__seen_clear(e);
    strmap_destroy(e->seen);
    pthread_mutex_destroy(&e->mu);
    pthread_mutex_destroy(&e->lease_mu);
    pthread_cond_destroy(&e->cond);
    free(e->prefix);
    free(e->description);
    free(e->identity);
    free(e);
    free(b);
}

static const state_backend_ops_t etcd_ops = {
    .kind = "etcd",
    .load = etcd_load,
    .commit = etcd_commit,
    .stored = etcd_stored,
    .lock = etcd_lock,
    .leader = etcd_leader,
    .lease = etcd_lease,
    .watch = etcd_watch,
    .sync = etcd_sync,
    .describe = etcd_describe,
    .destroy = etcd_destroy,
};

int state_etcd_create(const state_config_t *st, state_backend_t **out, frugal_err_t *err) {
    *out = NULL;
    state_backend_t *b = calloc(1, sizeof(*b));
    etcd_backend_t *e = calloc(1, sizeof(*e));
    if (b == NULL || e == NULL) {
        free(b);
        free(e);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    int rc = etcd_client_create(st, &e->client, err);
    if (rc != 0) {
        free(b);
        free(e);
        return rc;
    }
    char host[128] = "";
    gethostname(host, sizeof(host) - 1);
    size_t n = strlen(st->prefix) + 64;
    e->prefix = strdup(st->prefix);
    e->description = malloc(n);
    e->identity = malloc(sizeof(host) + 32);
    strmap_create(64, &e->seen);
    if (e->prefix == NULL || e->description == NULL || e->identity == NULL || e->seen == NULL) {
        etcd_client_destroy(e->client);
        strmap_destroy(e->seen);
        free(e->prefix);
        free(e->description);
        free(e->identity);
        free(e);
        free(b);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    snprintf(e->description, n, "etcd prefix %s", st->prefix);
    snprintf(e->identity, sizeof(host) + 32, "%s:%ld", host, (long)getpid());
    e->lease_ttl_ms = st->lease_ttl_ms;
    /* Both series from the start, at 0: a rate over them works before the first refusal. */
    metrics_cell(METRICS_ETCD_TXN_REFUSED, "conflict", NULL, NULL);
    metrics_cell(METRICS_ETCD_TXN_REFUSED, "fenced", NULL, NULL);
    pthread_mutex_init(&e->mu, NULL);
    pthread_mutex_init(&e->lease_mu, NULL);
    pthread_cond_init(&e->cond, NULL);
    b->ops = &etcd_ops;
    b->impl = e;
    *out = b;
    return 0;
}
