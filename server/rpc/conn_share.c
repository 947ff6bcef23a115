#include "conn_share.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "hash.h"

/* A slot is one 64-bit word: the connection's key (39 bits of the peer's hash, never
 * 0), a bit set once the connection is closed, and its count (24 bits). 0 is an empty
 * slot. Key, bit and count change together, by compare-and-swap, so a slot is never
 * seen half updated. */
#define COUNT_BITS 24
#define COUNT_MAX ((1L << COUNT_BITS) - 1)
#define CLOSED_BIT (1ULL << COUNT_BITS)
#define KEY_SHIFT (COUNT_BITS + 1)
#define KEY_OF(w) ((w) >> KEY_SHIFT)
#define COUNT_OF(w) ((long)((w)&COUNT_MAX))
/* How far from its home slot a connection may be placed. The table has twice the
 * cap's slots (at most half full) and a keyed hash, so a run this long is not met. */
#define PROBE_WINDOW 32
#define SLOTS_MAX (1u << 16)

/* The limiters (a warning per host, a close per connection): per key, the key above
 * the second of its last event. */
#define ONCE_SLOTS 256
#define ONCE_WINDOW 8
#define ONCE_TIME_BITS 24
#define ONCE_TIME_MASK ((1u << ONCE_TIME_BITS) - 1)
#define WARN_EVERY_S 60
#define CLOSE_EVERY_S 1

struct conn_share {
    long cap;
    long floor;
    uint64_t seed;
    size_t mask; /* slots - 1, slots a power of two */
    atomic_long connections;
    _Atomic uint64_t warned[2][ONCE_SLOTS]; /* by event, by host */
    _Atomic uint64_t closed[ONCE_SLOTS];    /* by connection */
    _Atomic uint32_t *streams;              /* by slot: its calls' streams not seen ended */
    _Atomic uint64_t slots[];
};

/* hash.h's hash keyed with a random seed, so that a client
 * cannot choose addresses that land on another's slot. */
static uint64_t conn_share__hash(uint64_t seed, const char *s, size_t n) {
    uint64_t h = HASH_FNV_OFFSET ^ seed;
    for (size_t i = 0; i < n; i++)
        h = hash_fnv_byte(h, (unsigned char)s[i]);
    return hash_finish(h);
}

static uint64_t conn_share__key(uint64_t h) {
    uint64_t key = h >> KEY_SHIFT;
    return key != 0 ? key : 1;
}

conn_share_t *conn_share_create(long cap, long floor) {
    size_t slots = 64;
    while (slots < SLOTS_MAX && (long)slots < 2 * cap)
        slots *= 2;
    conn_share_t *t = calloc(1, sizeof(*t) + slots * sizeof(t->slots[0]));
    if (t == NULL)
        return NULL;
    t->streams = calloc(slots, sizeof(t->streams[0]));
    if (t->streams == NULL) {
        free(t);
        return NULL;
    }
    t->cap = cap;
    t->floor = floor;
    t->mask = slots - 1;
    if (getrandom(&t->seed, sizeof(t->seed), GRND_NONBLOCK) != (ssize_t)sizeof(t->seed)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        t->seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)(uintptr_t)t;
    }
    for (size_t i = 0; i < ONCE_SLOTS; i++) {
        atomic_init(&t->warned[0][i], 0);
        atomic_init(&t->warned[1][i], 0);
        atomic_init(&t->closed[i], 0);
    }
    for (size_t i = 0; i < slots; i++) {
        atomic_init(&t->slots[i], 0);
        atomic_init(&t->streams[i], 0);
    }
    atomic_init(&t->connections, 0);
    return t;
}

void conn_share_destroy(conn_share_t *t) {
    if (t != NULL)
        free(t->streams);
    free(t);
}

/* Add one to the count in *w's slot while it still holds key, the count is under share
 * and the connection is not closed. 1: counted; 0: refused; -1: the slot no longer holds
 * key. */
static int conn_share__increment(_Atomic uint64_t *slot, uint64_t w, uint64_t key, long share,
                                 long *held, bool *closed) {
    while (KEY_OF(w) == key) {
        long c = COUNT_OF(w);
        *held = c;
        *closed = (w & CLOSED_BIT) != 0;
        if (c >= share || *closed)
            return 0;
        if (atomic_compare_exchange_weak(slot, &w, w + 1)) {
            *held = c + 1;
            return 1;
        }
    }
    return -1;
}

bool conn_share_acquire(conn_share_t *t, const char *peer, conn_share_slot_t *slot,
                        conn_share_use_t *use) {
    uint64_t h = conn_share__hash(t->seed, peer, strlen(peer));
    uint64_t key = conn_share__key(h);
    long connections = atomic_load_explicit(&t->connections, memory_order_relaxed);
    long share = t->cap / (connections + 1);
    if (share < t->floor)
        share = t->floor;
    if (share > COUNT_MAX)
        share = COUNT_MAX;
    conn_share_use_t u = {0, share, connections, false, CONN_SHARE_UNTRACKED};
    bool counted = true;
    *slot = CONN_SHARE_UNTRACKED;
    /* The connection's slot is the first in the window that holds its key: slots are
     * freed at 0, so the scan goes past empty ones. Else the first empty one is claimed;
     * should another call take it first, look again. */
    for (int attempt = 0; attempt < 4 && *slot == CONN_SHARE_UNTRACKED; attempt++) {
        size_t empty = CONN_SHARE_UNTRACKED;
        for (size_t i = 0; i < PROBE_WINDOW && *slot == CONN_SHARE_UNTRACKED; i++) {
            size_t at = (h + i) & t->mask;
            uint64_t w = atomic_load(&t->slots[at]);
            if (w == 0 && empty == CONN_SHARE_UNTRACKED)
                empty = at;
            int rc = conn_share__increment(&t->slots[at], w, key, share, &u.held, &u.closed);
            if (rc == 1)
                *slot = at;
            else if (rc == 0) {
                counted = false;
                u.slot = at;
                goto out;
            }
        }
        if (*slot != CONN_SHARE_UNTRACKED || empty == CONN_SHARE_UNTRACKED)
            break;
        uint64_t zero = 0;
        if (atomic_compare_exchange_strong(&t->slots[empty], &zero, (key << KEY_SHIFT) | 1)) {
            atomic_fetch_add(&t->connections, 1);
            *slot = empty;
            u.held = 1;
        }
    }
out:
    if (counted)
        u.slot = *slot;
    if (use != NULL)
        *use = u;
    return counted;
}

void conn_share_release(conn_share_t *t, conn_share_slot_t slot) {
    if (slot == CONN_SHARE_UNTRACKED)
        return;
    _Atomic uint64_t *p = &t->slots[slot];
    uint64_t w = atomic_load(p);
    uint64_t next;
    do
        next = COUNT_OF(w) <= 1 ? 0 : w - 1;
    while (!atomic_compare_exchange_weak(p, &w, next));
    if (next == 0 && (w & CLOSED_BIT) == 0)
        atomic_fetch_sub(&t->connections, 1);
}

bool conn_share_mark_closed(conn_share_t *t, conn_share_slot_t slot) {
    if (slot == CONN_SHARE_UNTRACKED)
        return false;
    _Atomic uint64_t *p = &t->slots[slot];
    uint64_t w = atomic_load(p);
    do
        if (w == 0 || (w & CLOSED_BIT) != 0)
            return false;
    while (!atomic_compare_exchange_weak(p, &w, w | CLOSED_BIT));
    atomic_fetch_sub(&t->connections, 1);
    return true;
}

long conn_share_stream_open(conn_share_t *t, conn_share_slot_t slot) {
    if (slot == CONN_SHARE_UNTRACKED)
        return 0;
    return (long)atomic_fetch_add_explicit(&t->streams[slot], 1, memory_order_relaxed) + 1;
}

void conn_share_stream_ended(conn_share_t *t, conn_share_slot_t slot) {
    if (slot != CONN_SHARE_UNTRACKED)
        atomic_fetch_sub_explicit(&t->streams[slot], 1, memory_order_relaxed);
}

long conn_share_streams(const conn_share_t *t, conn_share_slot_t slot) {
    if (slot == CONN_SHARE_UNTRACKED)
        return 0;
    return (long)atomic_load_explicit(&((conn_share_t *)t)->streams[slot], memory_order_relaxed);
}

long conn_share_busiest(const conn_share_t *t) {
    long max = 0;
    for (size_t i = 0; i <= t->mask; i++) {
        long c =
            COUNT_OF(atomic_load_explicit(&((conn_share_t *)t)->slots[i], memory_order_relaxed));
        if (c > max)
            max = c;
    }
    return max;
}

long conn_share_connections(const conn_share_t *t) {
    return atomic_load(&((conn_share_t *)t)->connections);
}

/* Whether the event of the key text[0..n) may happen at now_s: true when it did not
 * within period seconds (and it is recorded), false when it did, or when its window of
 * the table holds other keys' events of the last period (the table bounds the events a
 * period to ONCE_SLOTS). */
static bool conn_share__once(const conn_share_t *t, _Atomic uint64_t *table, const char *text,
                             size_t n, int64_t now_s, unsigned period) {
    uint64_t h = conn_share__hash(t->seed, text, n);
    uint64_t key = (h >> ONCE_TIME_BITS) | 1;
    uint64_t now = (uint64_t)now_s & ONCE_TIME_MASK;
    uint64_t mine = (key << ONCE_TIME_BITS) | now;
    for (size_t i = 0; i < ONCE_WINDOW; i++) {
        _Atomic uint64_t *p = &table[(h + i) % ONCE_SLOTS];
        uint64_t w = atomic_load(p);
        bool expired = ((now - (w & ONCE_TIME_MASK)) & ONCE_TIME_MASK) >= period;
        if ((w >> ONCE_TIME_BITS) == key)
            return expired && atomic_compare_exchange_strong(p, &w, mine);
    }
    for (size_t i = 0; i < ONCE_WINDOW; i++) {
        _Atomic uint64_t *p = &table[(h + i) % ONCE_SLOTS];
        uint64_t w = atomic_load(p);
        bool expired = ((now - (w & ONCE_TIME_MASK)) & ONCE_TIME_MASK) >= period;
        if ((w == 0 || expired) && atomic_compare_exchange_strong(p, &w, mine))
            return true;
    }
    return false;
}

bool conn_share_should_warn(conn_share_t *t, conn_share_event_t what, const char *peer,
                            int64_t now_s) {
    const char *colon = strrchr(peer, ':');
    const char *bracket = strrchr(peer, ']');
    size_t n = colon != NULL && (bracket == NULL || colon > bracket) ? (size_t)(colon - peer)
                                                                     : strlen(peer);
    return conn_share__once(t, t->warned[what == CONN_SHARE_CLOSED], peer, n, now_s, WARN_EVERY_S);
}

bool conn_share_should_close(conn_share_t *t, const char *peer, int64_t now_s) {
    return conn_share__once(t, t->closed, peer, strlen(peer), now_s, CLOSE_EVERY_S);
}
