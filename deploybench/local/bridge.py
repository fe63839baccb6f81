"""The one way from a local machine to the controller's loopback: the ports it was given (the
agent's model endpoint, when that is a server on the controller's 127.0.0.1). A host process
listens on 127.0.0.1:PORT inside the machine's network namespace and relays each connection to
127.0.0.1:PORT of the host's; every other port of the host's loopback stays out of reach
(slirp4netns refuses the host's loopback, see machine.py).

A socket belongs to the network namespace its thread was in when it was made: the listening
sockets are made after joining the machine's namespace, then the thread returns to the host's
before any relay connects out.

    python -m deploybench.local.bridge PID PORT...   (run by machine.py, ended with the machine)"""

from __future__ import annotations

import ctypes
import os
import selectors
import socket
import sys
import threading

CLONE_NEWNET = 0x40000000
CHUNK = 65536


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def listen_inside(pid: int, ports: list[int]) -> list[socket.socket]:
    """Listening sockets on 127.0.0.1:PORT in the network namespace of process pid."""
    host = os.open("/proc/self/ns/net", os.O_RDONLY)
    inside = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
    try:
        _setns(inside)
        try:
            listeners = []
            for port in ports:
                sock = socket.socket()
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("127.0.0.1", port))
                sock.listen(64)
                listeners.append(sock)
        finally:
            _setns(host)
    finally:
        os.close(host)
        os.close(inside)
    return listeners


def _relay(inside: socket.socket, port: int) -> None:
    try:
        outside = socket.create_connection(("127.0.0.1", port), timeout=10)
    except OSError:
        inside.close()
        return
    outside.settimeout(None)
    pair = {inside: outside, outside: inside}
    with selectors.DefaultSelector() as sel:
        for sock in pair:
            sel.register(sock, selectors.EVENT_READ)
        try:
            while pair:
                for key, _ in sel.select():
                    data = key.fileobj.recv(CHUNK)
                    if not data:
                        return
                    pair[key.fileobj].sendall(data)
        except OSError:
            return
        finally:
            inside.close()
            outside.close()


def serve(listeners: list[socket.socket]) -> None:
    with selectors.DefaultSelector() as sel:
        for sock in listeners:
            sel.register(sock, selectors.EVENT_READ)
        while True:
            for key, _ in sel.select():
                conn, _ = key.fileobj.accept()
                port = key.fileobj.getsockname()[1]
                threading.Thread(target=_relay, args=(conn, port), daemon=True).start()


def main(argv: list[str]) -> None:
    pid, ports = int(argv[0]), [int(p) for p in argv[1:]]
    listeners = listen_inside(pid, ports)
    print(f"bridge: 127.0.0.1:{','.join(map(str, ports))} of pid {pid}'s network", flush=True)
    serve(listeners)


if __name__ == "__main__":
    main(sys.argv[1:])
