"""Attaching to the daemon: the control socket's greeting and its two
descriptors, the region mapped and its header checked (see "Attaching"
in client.py).
"""

import mmap
import os
import socket

from .errors import AttachError, RefusedError
from .layout import parse_header

__all__ = ["DEFAULT_SOCKET"]

DEFAULT_SOCKET = "/run/homa-dpdk/workers.sock"


def _attach(path, timeout):
    """Connect, read the greeting and the two descriptors, map the region.
    Returns (sock, mm, efd, layout)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    fds = []
    try:
        sock.settimeout(timeout)
        try:
            sock.connect(path)
            data, fds, flags, _ = socket.recv_fds(sock, 256, 2)
            while data and not data.endswith(b"\n") and len(data) < 4096 and not fds:
                more = sock.recv(4096)
                if not more:
                    break
                data += more
        except OSError as e:
            raise AttachError(e.errno, f"homa_dpdk: attach to {path}: {e.strerror or e}") from e
        if data == b"refused\n":
            raise RefusedError(f"homa_dpdk: the daemon at {path} refused uid {os.getuid()}, gid {os.getgid()} "
                               f"(allowed: root, workers.allow_uids, and members of workers.allow_gids; "
                               f"the daemon logs why)")
        if data != b"ok\n":
            text = data.decode("utf-8", "replace").strip() or "connection closed without a greeting"
            raise AttachError(f"homa_dpdk: attach to {path}: the daemon says {text!r}")
        if flags & getattr(socket, "MSG_CTRUNC", 0) or len(fds) != 2:
            raise AttachError(f"homa_dpdk: attach to {path}: got {len(fds)} descriptors, want 2 (region, eventfd)")
        for fd in fds:
            os.set_inheritable(fd, False)
        rfd, efd = fds
        size = os.fstat(rfd).st_size
        if size <= 0:
            raise AttachError(f"homa_dpdk: attach to {path}: the region's memfd is empty")
        try:
            # MAP_POPULATE: every page mapped at once (the daemon made them
            # resident), so no read of the pool takes a page fault later.
            mm = mmap.mmap(rfd, size, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                           prot=mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError as e:
            raise AttachError(e.errno, f"homa_dpdk: map the region: {e.strerror or e}") from e
        os.close(rfd)  # the mapping keeps the memory
        fds = [efd]
        try:
            lay = parse_header(mm)
        except Exception:
            mm.close()
            raise
        os.set_blocking(efd, False)
        sock.setblocking(False)
        return sock, mm, efd, lay
    except BaseException:
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
        sock.close()
        raise
