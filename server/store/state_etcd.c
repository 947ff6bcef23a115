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
 * deletes, and a compare of P/schema's. Another replica's commit in between fails the
 * compare: FRUGAL_EABORTED, and the cluster retries on the state the Watch brings.
 * Provider work additionally compares P/leader's lease with ours (fencing). A commit of
 * more than ETCD_TXN_GROUPS_MAX groups (a first start or an import of a large state) is
 * several Txns, each group whole in one.
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
#include <unistd.h>

#include "etcd/rpc.pb-c.h"
#include "etcd_client.h"
#include "metrics.h"
#include "state_etcd_internal.h"
#include "strmap.h"

/* ---- load ---- */

/* One key of a full read: check it and add its group to out. */
static int se__load_kv(etcd_backend_t *e, const Mvccpb__KeyValue *kv, state_t *out, bool *schema,
                       frugal_err_t *err) {
    size_t plen = strlen(e->prefix);
    char *key = se__key_text(&kv->key);
    if (key == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    const char *rest = key + plen;
    int rc = 0;
    if (strcmp(rest, "schema") == 0) {
        unsigned version = 0;
        char why[FRUGAL_ERR_MSG_MAX];
        if (se__schema_problem(key, se__value_data(&kv->value), kv->value.len, &version, why,
                               sizeof(why)))
            rc =
                frugal_err_set(err, FRUGAL_EINVAL, "%s%s", why,
                               version > STATE_ETCD_SCHEMA ? ": upgrade frugal; nothing was written"
                                                           : ": refused, nothing was written");
        else {
            *schema = true;
            e->schema_revision = kv->mod_revision;
        }
    } else if (strcmp(rest, "leader") == 0) {
        /* the election's key, not state */
    } else if (strncmp(rest, "groups/", 7) == 0 && rest[7] != '\0') {
        const char *id = rest + 7;
        state_t one;
        rc = state_parse(key, (const char *)se__value_data(&kv->value), kv->value.len, &one, err);
        if (rc == 0 && (one.count != 1 || strcmp(one.groups[0].spec.id, id) != 0)) {
            rc = frugal_err_set(err, FRUGAL_EINVAL,
                                "etcd key %s holds %zu node groups%s%s, not exactly group %s: "
                                "refused, nothing was written",
                                key, one.count, one.count == 1 ? ": " : "",
                                one.count == 1 ? one.groups[0].spec.id : "", id);
        } else if (rc != 0) {
            char why[FRUGAL_ERR_MSG_MAX];
            snprintf(why, sizeof(why), "%s", err->msg);
            rc = frugal_err_set(err, FRUGAL_EINVAL,
                                "etcd key %s holds corrupt data (%s): refused, "
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
                            "etcd key %s under prefix %s is not frugal's: refused, "
                            "nothing was written (use another prefix, or remove the key)",
                            key, e->prefix);
    }
    free(key);
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
                            "etcd prefix %s holds node groups but no %sschema key (an import "
                            "cut short?): refused, nothing was written",
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

/* At most this many groups per Txn: etcd refuses more than 128 operations, or compares,
 * in one (its --max-txn-ops), and a commit adds three compares and a put of its own. */
#define ETCD_TXN_GROUPS_MAX 120

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
    for (size_t i = 0; i < sc->changed_count + sc->removed_count && rc == 0; i++) {
        const char *id =
            i < sc->changed_count ? sc->changed[i]->spec.id : sc->removed[i - sc->changed_count];
        const seen_t *bad = strmap_get(e->corrupt, id);
        if (bad != NULL) {
            metrics_count(METRICS_ETCD_TXN_REFUSED, "unreadable", NULL, NULL);
            rc = frugal_err_set(err, FRUGAL_EPRECOND,
                                "etcd key %sgroups/%s holds a value this replica refused as "
                                "corrupt (logged when it was written, at revision %" PRId64
                                "): put a valid value back or delete it; the write was refused",
                                e->prefix, id, bad->mod_revision);
        }
    }
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
    if (rc == 0 && e->schema_refused)
        rc = frugal_err_set(err, FRUGAL_EPRECOND,
                            "etcd key %s holds a schema this frugal cannot use (logged when it "
                            "changed): writes are refused until it is frugal's again",
                            schema_key);
    /* t holds one compare and one op per group, in step; each Txn takes a window of them
     * and the compares (and the schema's put) of its own, at the end of t. */
    size_t groups = t.nops;
    size_t chunks = (groups + ETCD_TXN_GROUPS_MAX - 1) / ETCD_TXN_GROUPS_MAX;
    int64_t *revs = calloc(chunks + 1, sizeof(*revs));
    if (rc == 0 && revs == NULL)
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    /* The schema, when absent, comes with the first Txn, or with an import's last: an
     * import cut short leaves groups without a schema, which no start takes for a state.
     * Present, it must not change meanwhile (a newer frugal's migration, a hand edit). */
    size_t schema_chunk = e->schema_revision != 0 ? SIZE_MAX : sc->import ? chunks - 1 : 0;
    int64_t schema_rev = e->schema_revision;
    size_t schema_cmp = t.ncmp, leader_cmp = 0, view_cmp = 0, schema_put = t.nops;
    if (rc == 0 && chunks > 0) {
        txn_compare(&t, schema_key, ETCDSERVERPB__COMPARE__COMPARE_TARGET__MOD, 0);
        txn_put(&t, schema_key, STATE_ETCD_SCHEMA_TEXT);
        if (sc->provider_work) {
            leader_cmp = t.ncmp;
            txn_compare(&t, leader_key, ETCDSERVERPB__COMPARE__COMPARE_TARGET__LEASE, lease);
        }
        char *groups_key = txn_own(&t, se__key(e, "groups/"));
        char *groups_end = txn_own(&t, groups_key != NULL ? se__range_end(groups_key) : NULL);
        if (sc->whole_view && groups_end != NULL) {
            /* The limits counted every group: no group key may have changed after the
             * revision this replica's cache holds (a change of its own that the Watch
             * has not brought back yet fails it too; the retry waits for it). Only the
             * first Txn: the next ones would see its writes. */
            view_cmp = t.ncmp;
            Etcdserverpb__Compare *c = &t.cmp[t.ncmp];
            etcdserverpb__compare__init(c);
            c->result = ETCDSERVERPB__COMPARE__COMPARE_RESULT__LESS;
            c->target = ETCDSERVERPB__COMPARE__COMPARE_TARGET__MOD;
            c->key = se__bytes(groups_key);
            c->range_end = se__bytes(groups_end);
            c->target_union_case = ETCDSERVERPB__COMPARE__TARGET_UNION_MOD_REVISION;
            c->mod_revision = e->revision + 1;
            t.cmpp[t.ncmp++] = c;
        }
    }
    for (size_t chunk = 0; chunk < chunks && rc == 0; chunk++) {
        Etcdserverpb__Compare *cmpv[ETCD_TXN_GROUPS_MAX + 3];
        Etcdserverpb__RequestOp *opv[ETCD_TXN_GROUPS_MAX + 1];
        size_t ncmp = 0, nop = 0;
        size_t from = chunk * ETCD_TXN_GROUPS_MAX;
        size_t to = from + ETCD_TXN_GROUPS_MAX < groups ? from + ETCD_TXN_GROUPS_MAX : groups;
        for (size_t i = from; i < to; i++) {
            cmpv[ncmp++] = t.cmpp[i];
            opv[nop++] = t.opsp[i];
        }
        t.cmp[schema_cmp].mod_revision = schema_rev;
        cmpv[ncmp++] = t.cmpp[schema_cmp];
        if (chunk == schema_chunk)
            opv[nop++] = t.opsp[schema_put];
        if (leader_cmp > 0)
            cmpv[ncmp++] = t.cmpp[leader_cmp];
        if (view_cmp > 0 && chunk == 0)
            cmpv[ncmp++] = t.cmpp[view_cmp];
        Etcdserverpb__TxnRequest req = ETCDSERVERPB__TXN_REQUEST__INIT;
        req.n_compare = ncmp;
        req.compare = cmpv;
        req.n_success = nop;
        req.success = opv;
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
            revs[chunk] = rev;
            if (chunk == schema_chunk)
                schema_rev = rev;
        }
        if (resp != NULL)
            protobuf_c_message_free_unpacked(&resp->base, NULL);
    }
    /* What this replica wrote is its cache only once every Txn is in: the groups of a
     * commit cut short come back through the Watch, as another replica's would. */
    for (size_t i = 0; rc == 0 && i < groups; i++) {
        const Etcdserverpb__RequestOp *op = t.opsp[i];
        int64_t rev = revs[i / ETCD_TXN_GROUPS_MAX];
        if (op->request_case == ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_PUT) {
            const char *key = (const char *)op->request_put->key.data;
            se__seen_put(e, key + strlen(e->prefix) + 7, rev,
                         (const char *)op->request_put->value.data, op->request_put->value.len);
        } else {
            const char *key = (const char *)op->request_delete_range->key.data;
            se__seen_free(strmap_remove(e->seen, key + strlen(e->prefix) + 7));
        }
    }
    if (rc == 0)
        e->schema_revision = schema_rev;
    free(revs);
    pthread_mutex_unlock(&e->mu);
    for (size_t i = 0; texts != NULL && i < n; i++)
        free(texts[i]);
    free(texts);
    txn_build_free(&t);
    return rc;
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
    strmap_destroy(e->corrupt);
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
    .stored = se__op_stored,
    .lock = se__op_lock,
    .leader = se__op_leader,
    .lease = se__op_lease,
    .watch = se__op_watch,
    .sync = se__op_sync,
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
    strmap_create(16, &e->corrupt);
    if (e->prefix == NULL || e->description == NULL || e->identity == NULL || e->seen == NULL ||
        e->corrupt == NULL) {
        etcd_client_destroy(e->client);
        strmap_destroy(e->seen);
        strmap_destroy(e->corrupt);
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
    /* Every series from the start, at 0: a rate over them works before the first refusal. */
    metrics_cell(METRICS_ETCD_TXN_REFUSED, "conflict", NULL, NULL);
    metrics_cell(METRICS_ETCD_TXN_REFUSED, "fenced", NULL, NULL);
    metrics_cell(METRICS_ETCD_TXN_REFUSED, "unreadable", NULL, NULL);
    pthread_mutex_init(&e->mu, NULL);
    pthread_mutex_init(&e->lease_mu, NULL);
    pthread_cond_init(&e->cond, NULL);
    b->ops = &etcd_ops;
    b->impl = e;
    *out = b;
    return 0;
}
