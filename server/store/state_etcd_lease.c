/* The etcd backend's leadership: a lease granted and kept alive by its own thread, the
 * election on PREFIX/leader, and how long this replica surely leads (state_etcd.c). */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "clock.h"
#include "etcd/rpc.pb-c.h"
#include "etcd_client.h"
#include "log.h"
#include "metrics.h"
#include "state_etcd_internal.h"

/* Between the start's tries of the first lease, and how long they go on at least (or
 * lease_ttl when longer). */
#define START_GRANT_PAUSE_MS 200
#define START_GRANT_MIN_WAIT_MS 10000

/* Whether this replica leads now: it holds PREFIX/leader on its lease, and its own clock
 * still trusts that lease. */
bool se__leader_now(etcd_backend_t *e) {
    return atomic_load(&e->leader) && clock_mono_ms() < atomic_load(&e->valid_until);
}

/* Tell the lease listener how long this replica surely leads (0: it does not). */
void se__publish_lease(etcd_backend_t *e) {
    pthread_mutex_lock(&e->lease_mu);
    if (e->lease_fn != NULL)
        e->lease_fn(e->lease_arg, se__leader_now(e) ? atomic_load(&e->valid_until) : 0);
    pthread_mutex_unlock(&e->lease_mu);
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
/* P/leader without a lease (put by hand, copied by a mirror) never expires, and no
 * replica could ever lead: delete it, unless it changed since it was read at mod. */
static void se__drop_leaseless(etcd_backend_t *e, const char *key, int64_t mod,
                               const char *holder) {
    Etcdserverpb__Compare same = ETCDSERVERPB__COMPARE__INIT;
    same.result = ETCDSERVERPB__COMPARE__COMPARE_RESULT__EQUAL;
    same.target = ETCDSERVERPB__COMPARE__COMPARE_TARGET__MOD;
    same.key = se__bytes(key);
    same.target_union_case = ETCDSERVERPB__COMPARE__TARGET_UNION_MOD_REVISION;
    same.mod_revision = mod;
    Etcdserverpb__Compare *cmpp = &same;
    Etcdserverpb__DeleteRangeRequest del = ETCDSERVERPB__DELETE_RANGE_REQUEST__INIT;
    del.key = se__bytes(key);
    Etcdserverpb__RequestOp op = ETCDSERVERPB__REQUEST_OP__INIT;
    op.request_case = ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_DELETE_RANGE;
    op.request_delete_range = &del;
    Etcdserverpb__RequestOp *opp = &op;
    Etcdserverpb__TxnRequest req = ETCDSERVERPB__TXN_REQUEST__INIT;
    req.n_compare = 1;
    req.compare = &cmpp;
    req.n_success = 1;
    req.success = &opp;
    Etcdserverpb__TxnResponse *resp = NULL;
    frugal_err_t err = {0};
    log_warn("leader: %s (\"%s\") has no lease, so it would never expire and no replica could "
             "lead: deleting it",
             key, holder);
    if (etcd_client_call(e->client, ETCD_KV_TXN, &req.base, &etcdserverpb__txn_response__descriptor,
                         (ProtobufCMessage **)&resp, ETCD_CALL_IDEMPOTENT, 0, &err) == 0) {
        if (resp->succeeded)
            atomic_store(&e->elect_now, true);
        protobuf_c_message_free_unpacked(&resp->base, NULL);
    } else {
        log_warn("leader: deleting %s failed: %s", key, err.msg);
    }
}

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
    int64_t leaseless = 0; /* the mod_revision of a leader key without a lease */
    char holder[128] = "";
    if (etcd_client_call(e->client, ETCD_KV_TXN, &req.base, &etcdserverpb__txn_response__descriptor,
                         (ProtobufCMessage **)&resp, ETCD_CALL_IDEMPOTENT, 0, &err) == 0) {
        if (resp->succeeded) {
            now = true;
        } else if (resp->n_responses == 1 && resp->responses[0]->response_range != NULL &&
                   resp->responses[0]->response_range->n_kvs == 1) {
            const Mvccpb__KeyValue *kv = resp->responses[0]->response_range->kvs[0];
            now = kv->lease == lease;
            if (kv->lease == 0) {
                leaseless = kv->mod_revision;
                char *text = se__key_text(&kv->value);
                snprintf(holder, sizeof(holder), "%s", text != NULL ? text : "");
                free(text);
            }
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
    if (leaseless > 0)
        se__drop_leaseless(e, key, leaseless, holder);
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

int se__op_lock(state_backend_t *b, frugal_err_t *err) {
    etcd_backend_t *e = b->impl;
    /* A first lease proves the endpoints and credentials before anything is served. An
     * etcd electing a leader (a member just restarted) answers within seconds: until
     * then an unavailable etcd is waited for, not a reason to exit. A grant that etcd
     * applied but did not answer leaves a lease that nothing uses; it expires alone. */
    int64_t wait_ms =
        e->lease_ttl_ms > START_GRANT_MIN_WAIT_MS ? e->lease_ttl_ms : START_GRANT_MIN_WAIT_MS;
    int64_t give_up = clock_mono_ms() + wait_ms;
    int rc;
    while ((rc = se__grant(e, err)) == FRUGAL_EUNAVAIL && clock_mono_ms() < give_up &&
           !atomic_load(&e->stop)) {
        log_warn("%s; trying again for up to %lld ms", err != NULL ? err->msg : "etcd unavailable",
                 (long long)(give_up - clock_mono_ms()));
        frugal_err_clear(err);
        usleep(START_GRANT_PAUSE_MS * 1000);
    }
    if (rc != 0)
        return rc;
    if (pthread_create(&e->lease_thread, NULL, se__lease_main, e) != 0)
        return frugal_err_set(err, FRUGAL_EINTERNAL, "cannot start the etcd lease thread");
    e->lease_thread_started = true;
    return 0;
}

bool se__op_leader(state_backend_t *b) {
    return se__leader_now(b->impl);
}

void se__op_lease(state_backend_t *b, state_lease_fn fn, void *arg) {
    etcd_backend_t *e = b->impl;
    pthread_mutex_lock(&e->lease_mu);
    e->lease_fn = fn;
    e->lease_arg = arg;
    pthread_mutex_unlock(&e->lease_mu);
    se__publish_lease(e);
}
