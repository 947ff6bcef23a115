#!/usr/bin/env python3
"""Print a TCP port on 127.0.0.1 that nothing listens on, below the kernel's ephemeral
range: a port from that range (bind to port 0) may meanwhile become the source port of
another test's outgoing connection, and then the server cannot bind it."""
import random
import socket


def ephemeral_start():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def main():
    high = max(ephemeral_start() - 1, 10001)
    for _ in range(200):
        port = random.randint(10000, high)
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            s.close()
        print(port)
        return 0
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
