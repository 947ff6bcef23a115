#include "peer_socket.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* peer's address as IPv6 (IPv4 mapped) and its port; false when it is not an IP peer. */
static bool peer_socket__parse(const char *peer, struct in6_addr *ip, unsigned *port) {
    bool v6 = strncmp(peer, "ipv6:", 5) == 0;
    if (!v6 && strncmp(peer, "ipv4:", 5) != 0)
        return false;
    char host[INET6_ADDRSTRLEN + 8];
    size_t n = 0;
    const char *colon = strrchr(peer + 5, ':');
    if (colon == NULL)
        return false;
    for (const char *p = peer + 5; p < colon; p++) {
        if (strncmp(p, "%5B", 3) == 0 || strncmp(p, "%5D", 3) == 0) {
            p += 2;
            continue;
        }
        if (*p == '[' || *p == ']')
            continue;
        if (n + 1 >= sizeof(host))
            return false;
        host[n++] = *p;
    }
    host[n] = '\0';
    char *end;
    unsigned long pn = strtoul(colon + 1, &end, 10);
    if (*end != '\0' || end == colon + 1 || pn > 65535)
        return false;
    *port = (unsigned)pn;
    if (v6)
        return inet_pton(AF_INET6, host, ip) == 1;
    struct in_addr v4;
    if (inet_pton(AF_INET, host, &v4) != 1)
        return false;
    memset(ip, 0, sizeof(*ip));
    ip->s6_addr[10] = ip->s6_addr[11] = 0xff;
    memcpy(&ip->s6_addr[12], &v4, 4);
    return true;
}

bool peer_socket_matches(const char *peer, const struct sockaddr *addr) {
    struct in6_addr want, got;
    unsigned port, got_port;
    if (!peer_socket__parse(peer, &want, &port))
        return false;
    if (addr->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in = (const struct sockaddr_in6 *)addr;
        got = in->sin6_addr;
        got_port = ntohs(in->sin6_port);
    } else if (addr->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)addr;
        memset(&got, 0, sizeof(got));
        got.s6_addr[10] = got.s6_addr[11] = 0xff;
        memcpy(&got.s6_addr[12], &in->sin_addr, 4);
        got_port = ntohs(in->sin_port);
    } else {
        return false;
    }
    return got_port == port && memcmp(&got, &want, sizeof(got)) == 0;
}

/* End the connection of fd now. connect() to AF_UNSPEC dissolves a TCP association: the
 * kernel sends a reset and drops what was received and not read yet, which a shutdown
 * would leave for gRPC to read (megabytes of a flood in the socket's buffer). The
 * descriptor stays open for its owner, who then reads the end. */
static bool peer_socket__abort(int fd) {
    struct sockaddr unspec;
    memset(&unspec, 0, sizeof(unspec));
    unspec.sa_family = AF_UNSPEC;
    if (connect(fd, &unspec, sizeof(unspec)) == 0)
        return true;
    return shutdown(fd, SHUT_RDWR) == 0;
}

int peer_socket_shutdown(const char *peer) {
    struct in6_addr ip;
    unsigned port;
    if (!peer_socket__parse(peer, &ip, &port))
        return 0;
    DIR *dir = opendir("/proc/self/fd");
    if (dir == NULL)
        return 0;
    int self = dirfd(dir), done = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);
        if (*end != '\0' || end == e->d_name || fd == self)
            continue;
        int dup_fd = dup((int)fd);
        if (dup_fd < 0)
            continue;
        struct sockaddr_storage addr;
        socklen_t len = sizeof(addr);
        int type = 0;
        socklen_t type_len = sizeof(type);
        if (getsockopt(dup_fd, SOL_SOCKET, SO_TYPE, &type, &type_len) == 0 && type == SOCK_STREAM &&
            getpeername(dup_fd, (struct sockaddr *)&addr, &len) == 0 &&
            peer_socket_matches(peer, (const struct sockaddr *)&addr) && peer_socket__abort(dup_fd))
            done++;
        close(dup_fd);
    }
    closedir(dir);
    return done;
}
