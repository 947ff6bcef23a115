/* Closing one connection of the gRPC server, found by the peer address gRPC reports for
 * its calls: gRPC 1.51 has no API to close a single connection of a server, and a
 * connection that floods it must be cut off (docs/limits.md). */
#ifndef FRUGAL_PEER_SOCKET_H
#define FRUGAL_PEER_SOCKET_H

#include <stdbool.h>
#include <stddef.h>

struct sockaddr;

/* Whether the socket address addr (AF_INET or AF_INET6, an IPv4-mapped IPv6 address
 * counting as its IPv4 one) is the peer gRPC names "ipv4:A.B.C.D:PORT" or
 * "ipv6:[ADDR]:PORT" (the brackets may be percent-encoded as %5B and %5D). */
bool peer_socket_matches(const char *peer, const struct sockaddr *addr);

/* End every connected TCP socket of this process whose remote end is peer, abortively
 * (a reset; what was received and not read yet is dropped); gRPC then sees the
 * connection end, closes it and cancels its calls. Each socket
 * is checked on a duplicate of its descriptor, so a descriptor closed and reused by
 * another socket meanwhile is left alone. Returns how many were shut down (0: none, or
 * peer is not an IP address). Scans /proc/self/fd: for rare events, not every call. */
int peer_socket_shutdown(const char *peer);

#endif
