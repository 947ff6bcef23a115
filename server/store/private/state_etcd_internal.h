/* Private to the etcd state backend: state_etcd.c (load, commit and the backend's life),
 * state_etcd_cache.c (keys and what this replica saw of them), state_etcd_watch.c (the
 * Watch that keeps the cache current, and sync) and state_etcd_lease.c (the lease and
 * the leader election). Not for any other module. */
#ifndef FRUGAL_STATE_ETCD_INTERNAL_H
#define FRUGAL_STATE_ETCD_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "etcd/rpc.pb-c.h"
#include "etcd_client.h"
#include "state_backend.h"
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
    strmap_t *corrupt;       /* id -> seen_t * (its revision, no text) of a group key whose
                                value the Watch refused, under mu */
    int64_t schema_revision; /* mod_revision of P/schema, 0: absent */
    bool schema_refused;     /* the Watch brought a P/schema this frugal cannot use */
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

/* state_etcd_cache.c: keys, what this replica saw, the read of the prefix, request
 * timeouts, the staleness gauge. */
/* A key (or value) read from etcd as text, its control bytes written \xNN (a NUL byte
 * must not cut it: groups/web-a\0x is not web-a's key); NULL when out of memory. */
char *se__key_text(const ProtobufCBinaryData *k);
/* A value's bytes: an empty value arrives without data, and is still a value (not a
 * deleted key, nor a NULL for the string functions). */
const uint8_t *se__value_data(const ProtobufCBinaryData *v);
/* Why value is no schema key this frugal can use (to be named with key), or NULL;
 * *version is its version when it reads as one. */
const char *se__schema_problem(const char *key, const uint8_t *value, size_t len, unsigned *version,
                               char *buf, size_t size);
char *se__key(const etcd_backend_t *e, const char *suffix);
char *se__group_key(const etcd_backend_t *e, const char *id);
char *se__range_end(const char *p);
ProtobufCBinaryData se__bytes(const char *s);
void se__seen_free(seen_t *s);
/* Forget what this replica saw, the values it refused too (under mu). */
void se__seen_clear(etcd_backend_t *e);
int se__seen_put(etcd_backend_t *e, const char *id, int64_t revision, const char *text, size_t len);
/* Group id's key holds a value refused at revision; or no longer (under mu). */
void se__corrupt_mark(etcd_backend_t *e, const char *id, int64_t revision);
void se__corrupt_clear(etcd_backend_t *e, const char *id);
int se__range_all(etcd_backend_t *e, Etcdserverpb__RangeResponse **resp, frugal_err_t *err);
int64_t se__timeout_ms(const etcd_backend_t *e, int64_t deadline_ms);
void se__publish_stale(etcd_backend_t *e);

/* state_etcd_watch.c: the state_backend_ops_t slots sync, stored and watch. */
int se__op_sync(state_backend_t *b, int64_t deadline_ms, frugal_err_t *err);
int se__op_stored(state_backend_t *b, const char *id, group_t *out, frugal_err_t *err);
int se__op_watch(state_backend_t *b, state_watch_fn fn, void *arg, frugal_err_t *err);

/* state_etcd_lease.c: the slots lock, leader and lease; whether this replica leads now,
 * and the report of it to the lease listener. */
bool se__leader_now(etcd_backend_t *e);
void se__publish_lease(etcd_backend_t *e);
int se__op_lock(state_backend_t *b, frugal_err_t *err);
bool se__op_leader(state_backend_t *b);
void se__op_lease(state_backend_t *b, state_lease_fn fn, void *arg);

#endif
