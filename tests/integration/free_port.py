#!/usr/bin/env python3
"""free_port.py [OWNER_PID]: print a TCP port on 127.0.0.1 that nothing listens on, below
the kernel's ephemeral range: a port from that range (bind to port 0) may meanwhile
become the source port of another test's outgoing connection, and then the server
cannot bind it.

With OWNER_PID (the test's shell), the port is also claimed for that process in a
directory every test shares: tests that run at once never get the same port, even while
one of them has stopped its server for a moment and the port looks free. A claim whose
owner has exited is taken over."""
import os
import random
import socket
import sys
import tempfile

CLAIMS = os.path.join(tempfile.gettempdir(), "frugal-test-ports")


def ephemeral_start():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def claim(port, owner):
    """True when the port is now owner's: unclaimed, or claimed by a process gone."""
    path = os.path.join(CLAIMS, str(port))
    for _ in range(2):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            try:
                with open(path) as f:
                    holder = int(f.read().strip() or "0")
            except (OSError, ValueError):
                holder = 0
            if holder == owner or (holder > 0 and alive(holder)):
                return False
            try:
                os.unlink(path)  # its owner is gone: take it over
            except FileNotFoundError:
                pass
            continue
        with os.fdopen(fd, "w") as f:
            f.write(f"{owner}\n")
        return True
    return False


def main(argv):
    owner = int(argv[1]) if len(argv) > 1 else 0
    if owner:
        os.makedirs(CLAIMS, mode=0o777, exist_ok=True)
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
        if owner and not claim(port, owner):
            continue
        print(port)
        return 0
    return 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
