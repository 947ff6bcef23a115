/* The etcd backend's Watch: one stream from the cache's revision on, other replicas' commits
 * applied through the cluster's callback, a resync when the stream cannot resume, and
 * sync, which waits for the Watch to bring what a conflict showed (state_etcd.c). */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "etcd/rpc.pb-c.h"
#include "etcd_client.h"
#include "log.h"
#include "state_etcd_internal.h"
#include "strmap.h"

/* ---- sync: wait for the Watch to bring what a conflict showed ---- */

int se__op_sync(state_backend_t *b, int64_t deadline_ms, frugal_err_t *err) {
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
        se__seen_free(strmap_remove(e->seen, id));
    pthread_mutex_unlock(&e->mu);
}

/* Deliver one group key's new value (NULL: deleted) at revision, unless this replica
 * wrote it itself. */
static void se__deliver(etcd_backend_t *e, const char *key, const ProtobufCBinaryData *bytes,
                        int64_t revision) {
    const uint8_t *value = bytes != NULL ? se__value_data(bytes) : NULL;
    size_t len = bytes != NULL ? bytes->len : 0;
    const char *rest = key + strlen(e->prefix);
    if (strcmp(rest, "schema") == 0) {
        /* Written by another replica's first commit, or deleted by hand (with the prefix,
         * say: the next commit writes it again). Anything else stops this replica's
         * writes: a newer frugal's schema, or data that is not frugal's. */
        char why[FRUGAL_ERR_MSG_MAX];
        unsigned version = 0;
        const char *problem =
            value != NULL ? se__schema_problem(key, value, len, &version, why, sizeof(why)) : NULL;
        pthread_mutex_lock(&e->mu);
        bool was = e->schema_refused;
        e->schema_revision = value != NULL ? revision : 0;
        e->schema_refused = problem != NULL;
        pthread_mutex_unlock(&e->mu);
        if (problem != NULL)
            log_error("%s (changed at revision %" PRId64 "): this replica refuses every write "
                      "until it is frugal's again, and a restart refuses the prefix",
                      problem, revision);
        else if (was)
            log_info("etcd key %s is frugal's again: writes resume", key);
        return;
    }
    if (strcmp(rest, "leader") == 0)
        return;
    if (strncmp(rest, "groups/", 7) != 0 || rest[7] == '\0') {
        if (value != NULL)
            log_error("etcd key %s under prefix %s is not frugal's (written at revision %" PRId64
                      "): ignored, but a restart refuses the prefix until it is removed",
                      key, e->prefix, revision);
        return;
    }
    const char *id = rest + 7;
    pthread_mutex_lock(&e->mu);
    const seen_t *s = strmap_get(e->seen, id);
    bool known = s != NULL && s->mod_revision >= revision;
    pthread_mutex_unlock(&e->mu);
    if (known)
        return;
    if (value == NULL) {
        pthread_mutex_lock(&e->mu);
        se__corrupt_clear(e, id);
        pthread_mutex_unlock(&e->mu);
        e->watch_fn(e->watch_arg, id, NULL);
        se__forget(e, id, revision);
        return;
    }
    state_t one;
    frugal_err_t err = {0};
    if (state_parse(key, (const char *)value, len, &one, &err) != 0 || one.count != 1 ||
        strcmp(one.groups[0].spec.id, id) != 0) {
        log_error("etcd key %s at revision %" PRId64 " is corrupt (%s): ignored, not overwritten; "
                  "writes to group %s are refused until it holds a valid value or is deleted",
                  key, revision, err.msg[0] ? err.msg : "not exactly its group", id);
        if (err.code == 0)
            state_free(&one);
        pthread_mutex_lock(&e->mu);
        se__corrupt_mark(e, id, revision);
        pthread_mutex_unlock(&e->mu);
        return;
    }
    e->watch_fn(e->watch_arg, id, &one.groups[0]);
    state_free(&one);
    pthread_mutex_lock(&e->mu);
    se__corrupt_clear(e, id);
    se__seen_put(e, id, revision, (const char *)value, len);
    pthread_mutex_unlock(&e->mu);
}

int se__op_stored(state_backend_t *b, const char *id, group_t *out, frugal_err_t *err) {
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
        char *key = keys[i] = se__key_text(&kv->key);
        if (key == NULL)
            continue;
        if (strncmp(key + plen, "groups/", 7) == 0 && present != NULL)
            strmap_put(present, key + plen + 7, (void *)1, NULL);
        se__deliver(e, key, &kv->value, kv->mod_revision);
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
    /* and values refused whose key was deleted meanwhile */
    for (pos = 0; present != NULL && strmap_next(e->corrupt, &pos, &k, &v);)
        if (strmap_get(present, k) == NULL) {
            se__corrupt_clear(e, k);
            pos = 0; /* the map changed: start over */
        }
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
                char *key = se__key_text(&ev->kv->key);
                if (key == NULL)
                    continue;
                bool del = ev->type == MVCCPB__EVENT__EVENT_TYPE__DELETE;
                /* The leader's lease expired or was revoked: elect now, not at the next
                 * renewal (failover in about lease_ttl rather than up to 1.25x). */
                if (del && strcmp(key + strlen(e->prefix), "leader") == 0) {
                    log_info("etcd: %s was deleted (the leader's lease ended, or the key was "
                             "deleted by hand): electing now",
                             key);
                    atomic_store(&e->elect_now, true);
                }
                se__deliver(e, key, del ? NULL : &ev->kv->value, ev->kv->mod_revision);
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

int se__op_watch(state_backend_t *b, state_watch_fn fn, void *arg, frugal_err_t *err) {
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
