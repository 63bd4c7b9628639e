"""Submitting: buffers and addresses checked, payloads staged in the
transmit arena, entries pushed onto the submission ring, and the wait for
a submission's completion. Submitter is a part of Client (client.py),
which sets up the state it uses.
"""

import operator
import socket
import time

from .entry import MAX_SERVER_PORT
from .errors import ArenaFull, HomaError, WaitTimeout, _error_for
from .message import Message
from .pending import _FAILED, _WAITING, _Sub

__all__ = ["Submitter"]


def _byte_view(buf):
    """A fresh 1-D unsigned-byte memoryview of buf's bytes (ours to
    release). Non-contiguous buffers are copied once into bytes."""
    if isinstance(buf, Message):
        buf = buf.data
    try:
        mv = memoryview(buf)
    except TypeError:
        to_numpy = getattr(buf, "numpy", None)  # a CPU torch tensor
        if to_numpy is None:
            raise TypeError(f"homa_dpdk: a message must be a bytes-like object (buffer protocol), "
                            f"not {type(buf).__name__}") from None
        t = buf.detach() if hasattr(buf, "detach") else buf
        mv = memoryview(t.numpy())
    if mv.format == "B" and mv.ndim == 1 and mv.c_contiguous:
        return mv
    try:
        if not mv.c_contiguous:
            raise ValueError("not C-contiguous")
        out = mv.cast("B")
    except (TypeError, ValueError):
        out = memoryview(mv.tobytes())  # the one case with an extra copy
    mv.release()
    return out


def _parse_addr(addr, server):
    """(ip, ip6, port) of addr = (host, port): the entry fields of an IPv4
    host (ip6 zero) or an IPv6 one (ip zero; an IPv4-mapped one is taken
    as IPv4)."""
    try:
        host, port = addr
    except (TypeError, ValueError):
        raise ValueError(f"homa_dpdk: an address is (ip str, port), got {addr!r}") from None
    ip, ip6 = b"\0\0\0\0", bytes(16)
    try:
        ip = socket.inet_pton(socket.AF_INET, host)
    except (OSError, TypeError):
        try:
            ip6 = socket.inet_pton(socket.AF_INET6, host)
        except (OSError, TypeError):
            raise ValueError(f"homa_dpdk: {host!r} is not an IPv4 or IPv6 address") from None
        if ip6[:12] == bytes(10) + b"\xff\xff":
            ip, ip6 = ip6[12:], bytes(16)
    if ip == b"\0\0\0\0" and ip6 == bytes(16):
        raise ValueError(f"homa_dpdk: peer address {host}")
    top = MAX_SERVER_PORT if server else 0xFFFF
    try:
        port = operator.index(port)
    except TypeError:
        raise ValueError(f"homa_dpdk: port {port!r} is not an integer") from None
    if not 0 < port <= top:
        raise ValueError(f"homa_dpdk: port {port!r} not in 1..{top}")
    return ip, ip6, port


class Submitter:
    """Client's submission side: cookies, arena staging, the ring push."""

    def _new_sub(self, kind, **kw):
        cookie = self._next_cookie
        self._next_cookie += 1
        sub = _Sub(kind, cookie, **kw)
        self._subs[cookie] = sub
        return sub

    def _stage(self, *bufs):
        """Copy the bytes of bufs, one after the other, into a free arena
        range: (offset, length)."""
        srcs = []
        try:
            n = 0
            for b in bufs:
                srcs.append(_byte_view(b))
                n += srcs[-1].nbytes
            if n == 0:
                raise ValueError("homa_dpdk: a message has at least 1 byte")
            if n > self._limits.max_message:
                raise ValueError(f"homa_dpdk: message of {n} bytes above the largest, {self._limits.max_message}")
            if n > self._arena.size:
                raise ValueError(f"homa_dpdk: message of {n} bytes larger than the transmit arena "
                                 f"({self._arena.size} bytes)")
            off = self._alloc(n)
            try:
                at = off
                for src in srcs:
                    self._arena_mv[at:at + src.nbytes] = src  # the one copy
                    at += src.nbytes
            except BaseException:
                self._arena.free(off)
                raise
            return off, n
        finally:
            for src in srcs:
                src.release()

    def _alloc(self, n):
        off = self._arena.alloc(n)
        if off is not None:
            return off
        self._stats["arena_waits"] += 1
        got = []

        def room():
            o = self._arena.alloc(n)
            if o is None:
                return False
            got.append(o)
            return True

        if not self._wait_for(room, self._op_timeout):
            raise ArenaFull(f"homa_dpdk: no {n} free bytes in the transmit arena within {self._op_timeout} s "
                            f"({self._arena.free_bytes()} of {self._arena.size} free, largest block "
                            f"{self._arena.largest_free()})")
        return got[0]

    def _submit(self, sub, entry):
        try:
            self._push(entry.encode())
        except BaseException:
            del self._subs[sub.cookie]
            if sub.off is not None:
                self._arena.free(sub.off)
                sub.off = None
            raise

    def _push(self, slot):
        if self._sq.push(slot):
            return
        self._stats["sq_full_waits"] += 1
        deadline = time.perf_counter_ns() + int(self._op_timeout * 1e9)
        while not self._sq.push(slot):
            self._drain()
            if time.perf_counter_ns() > deadline:
                raise HomaError(f"homa_dpdk: the submission ring stayed full for {self._op_timeout} s: "
                                "the daemon is not reading it")
            time.sleep(50e-6)

    def _await(self, sub, what):
        if not self._wait_for(lambda: sub.state != _WAITING, self._op_timeout):
            raise WaitTimeout(f"homa_dpdk: no completion for {what} within {self._op_timeout} s "
                              "(is the daemon's engine running?)")
        if sub.state == _FAILED:
            raise _error_for(sub.err, sub.rpc_id, what)
