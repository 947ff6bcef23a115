/* Calls in flight per connection, and each connection's fair share of the server's cap
 * (docs/limits.md): one connection flooding calls must not take the room of the others.
 *
 * A connection is named by its peer address as gRPC reports it ("ipv4:10.0.0.5:41234"),
 * which the port makes unique per TCP connection. The counts live in a fixed table of
 * atomic words (a hash of the peer and its count, packed), so counting a call is a few
 * atomic loads and one compare-and-swap, from any thread, without a lock. An entry is
 * freed when its count returns to 0: the table holds only connections with calls in
 * flight, and those are the connections the cap is shared among. */
#ifndef FRUGAL_CONN_SHARE_H
#define FRUGAL_CONN_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The least share of a connection, however many connections hold calls. */
#define CONN_SHARE_FLOOR 32

typedef struct conn_share conn_share_t;

/* Where a counted call is to be released; CONN_SHARE_UNTRACKED when it was not counted
 * (the table had no room near its peer's place: only the total cap applies to it). */
typedef size_t conn_share_slot_t;
#define CONN_SHARE_UNTRACKED ((conn_share_slot_t)-1)

/* A table for a server whose cap is cap calls in flight; a connection's share is then
 * cap / (connections holding calls + 1), at least floor: the + 1 keeps room for a
 * connection that has none yet, so that a connection alone never fills the cap.
 * NULL when out of memory. */
conn_share_t *conn_share_create(long cap, long floor);
void conn_share_destroy(conn_share_t *t);

typedef struct conn_share_use {
    long held;              /* the connection's calls in flight, this call included if counted */
    long share;             /* its share when the call came */
    long connections;       /* connections holding calls when the call came */
    bool closed;            /* refused because the connection was closed as a flood */
    conn_share_slot_t slot; /* where the connection is counted (for conn_share_mark_closed) */
} conn_share_use_t;

/* Count one more call of the connection peer (a NUL-terminated address) and set *slot,
 * or, when the connection already holds its share or is marked closed, count nothing
 * and return false.
 * use (may be NULL) gets the figures for a message. Safe from any thread. */
bool conn_share_acquire(conn_share_t *t, const char *peer, conn_share_slot_t *slot,
                        conn_share_use_t *use);

/* Release a call counted at slot (CONN_SHARE_UNTRACKED: nothing). */
void conn_share_release(conn_share_t *t, conn_share_slot_t slot);

/* The connection counted at slot is being closed: its further calls are refused, and it
 * no longer counts among the connections the cap is shared by (its calls stay counted
 * until released). False when it was already marked, or slot holds nothing. */
bool conn_share_mark_closed(conn_share_t *t, conn_share_slot_t slot);

/* Streams: of the calls counted at slot, those whose stream frugal has not yet seen
 * end (each an admitted call, its end reported by gRPC when the client resets the
 * stream, its deadline passes or the call completes). A client keeps at most
 * max_concurrent_streams of them open; calls frugal still holds after their stream
 * ended (a change parked past its deadline) are not among them. Each is one atomic add
 * on the slot's counter, which lives as long as the slot holds the connection (every
 * stream counted there is a call counted there). CONN_SHARE_UNTRACKED: nothing, 0. */
/* Count the stream of a call counted at slot; returns the connection's streams, this one
 * included. */
long conn_share_stream_open(conn_share_t *t, conn_share_slot_t slot);
/* The stream counted at slot ended; before its call is released. */
void conn_share_stream_ended(conn_share_t *t, conn_share_slot_t slot);
/* The streams counted at slot, as of now. */
long conn_share_streams(const conn_share_t *t, conn_share_slot_t slot);

/* The calls in flight of the busiest connection, and the connections holding calls, as
 * of now (a scan of the table: for metrics, not for the hot path). */
long conn_share_busiest(const conn_share_t *t);
long conn_share_connections(const conn_share_t *t);

typedef enum conn_share_event { CONN_SHARE_REFUSED, CONN_SHARE_CLOSED } conn_share_event_t;

/* Whether an event of peer (a refusal of its call, the close of its connection) should
 * be logged now (now_s: any monotonic clock in seconds): true at most once a minute per
 * event and host (the address without its port, so a client that reconnects does not
 * get a new line each time), and for at most 256 hosts a minute in all. */
bool conn_share_should_warn(conn_share_t *t, conn_share_event_t what, const char *peer,
                            int64_t now_s);

/* Whether the connection peer should be closed now: true at most once a second per
 * connection (closing it takes a scan of the process's descriptors), for at most 256
 * connections a second in all. */
bool conn_share_should_close(conn_share_t *t, const char *peer, int64_t now_s);

#endif
