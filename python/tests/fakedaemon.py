#!/usr/bin/env python3
"""A fake homa-dpdk daemon in Python, for tests: the control socket and the
engine's side of the shared-memory protocol of shm/doc.go, with a loopback
"network" in which every attached worker is on the same host.

It speaks the real protocol -- "ok\\n" with the memfd and an eventfd over
SCM_RIGHTS, the header of shm/layout.go, the rings of shm/ring.go, the
entries of shm/entry.go, the wake-up protocol -- so Clients cannot tell it
from the daemon, but its engine is a loop that delivers a Send to the
worker that bound the destination port, if the address is one of the
daemon's (by default 127.0.0.1), and fails it otherwise. A client's abort
ends only the client's side, as in Homa (the server's reply is accepted and
dropped), unless abort_ends_server is set: then it ends the server's side
too, as the Go client package's fake does, and the reply is refused (NO_RPC).

In a test:  d = FakeDaemon(path); d.start(); ...; d.stop()
As a process:  python3 fakedaemon.py --socket /tmp/homa.sock [--ip 127.0.0.1]
"""

import argparse
import collections
import mmap
import os
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from homa_dpdk.entry import (COMP_FLAG_RELEASED, PAGE_SIZE, CompOp, Completion, ErrCode, Limits, Op,  # noqa: E402
                             parse_submission)
from homa_dpdk.layout import new_layout  # noqa: E402
from homa_dpdk.ring import Consumer, Producer, init_ring  # noqa: E402

_ONE = (1).to_bytes(8, "little")


class Session:
    """One attached worker: its region, rings, pool pages and RPCs."""

    def __init__(self, daemon, conn, index):
        p = daemon.params
        self.daemon = daemon
        self.conn = conn
        self.index = index
        self.client_port = 0x8000 + index  # the port its client RPCs come from
        self.layout = lay = new_layout(p["sq_entries"], p["cq_entries"], p["arena_size"], p["pool_pages"])
        self.fd = os.memfd_create("homa-fake", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, lay.region_size)
        self.mm = mmap.mmap(self.fd, lay.region_size, flags=mmap.MAP_SHARED,
                            prot=mmap.PROT_READ | mmap.PROT_WRITE)
        lay.write_header(self.mm)
        mv = self.mv = memoryview(self.mm)
        a, b = lay.sq_range()
        init_ring(mv[a:b], lay.sq_entries, p["ring_start"])
        self.sq = Consumer(mv[a:b], lay.sq_entries)
        a, b = lay.cq_range()
        init_ring(mv[a:b], lay.cq_entries, p["ring_start"])
        self.cq = Producer(mv[a:b], lay.cq_entries)
        a, b = lay.arena_range()
        self.arena = mv[a:b]
        a, b = lay.pool_range()
        self.pool = mv[a:b]
        self.efd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
        self.limits = Limits(lay.arena_size, lay.pool_pages, p["max_message"])
        self.pages = bytearray(lay.pool_pages)  # 0 free, 1 held by the worker
        self.outq = collections.deque()  # completion bytes waiting for room in the CQ
        self.pending_requests = collections.deque()  # requests waiting for free pages
        self.client_rpcs = {}  # client id -> Send cookie
        self.server_rpcs = {}  # server id -> (client session, client id, client cookie, port)
        self.bound = set()
        self.closed = False
        self.wakeups = 0
        self.submissions = 0

    def greet(self):
        socket.send_fds(self.conn, [b"ok\n"], [self.fd, self.efd])

    # pages
    def alloc_pages(self, n):
        need = (n + PAGE_SIZE - 1) // PAGE_SIZE
        run = bytes(need)
        i = self.pages.find(run)
        if i < 0:
            return None
        self.pages[i:i + need] = b"\x01" * need
        return i, need

    def complete(self, **kw):
        self.outq.append(Completion(**kw).encode())

    def flush(self):
        pushed = False
        while self.outq and self.cq.push(self.outq[0]):
            self.outq.popleft()
            pushed = True
        if pushed and self.cq.take_waiter():
            self.wakeups += 1
            try:
                os.write(self.efd, _ONE)
            except OSError:
                pass
        return pushed

    def close(self):
        if self.closed:
            return
        self.closed = True
        try:
            self.conn.close()
        except OSError:
            pass
        for v in (self.sq, self.cq):
            v.release()
        for v in (self.arena, self.pool, self.mv):
            v.release()
        self.mm.close()
        os.close(self.fd)
        os.close(self.efd)


class FakeDaemon:
    def __init__(self, path, ips=("127.0.0.1",), sq_entries=256, cq_entries=1024, arena_size=4 << 20,
                 pool_pages=128, max_message=1_000_000, ring_start=0, release_mode="separate", idle_sleep=100e-6,
                 abort_ends_server=False):
        self.path = path
        self.ips = {socket.inet_aton(ip) for ip in ips}
        self.ip = socket.inet_aton(ips[0])
        self.params = dict(sq_entries=sq_entries, cq_entries=cq_entries, arena_size=arena_size,
                           pool_pages=pool_pages, max_message=max_message, ring_start=ring_start)
        self.release_mode = release_mode  # "separate": Accepted then Released; "flag": Accepted with the flag
        self.idle_sleep = idle_sleep
        self.abort_ends_server = abort_ends_server
        self.sessions = []
        self.ports = {}  # bound port -> Session
        self._next_client = 2
        self._next_server = 1
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = []
        self._nsessions = 0
        self.refuse = False  # answer "refused\n"
        self.paused = False  # the engine does not run (pause, resume)

    # ----- control socket -----
    def start(self):
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        self.ln = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.ln.bind(self.path)
        os.chmod(self.path, 0o660)
        self.ln.listen(16)
        self.ln.settimeout(0.05)
        for fn in (self._accept_loop, self._engine_loop):
            t = threading.Thread(target=fn, daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join(5)
        self.ln.close()
        with self._lock:
            for s in self.sessions:
                s.close()
            self.sessions.clear()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _accept_loop(self):
        while not self._stop.is_set():
            try:
                conn, _ = self.ln.accept()
            except (socket.timeout, OSError):
                continue
            if self.refuse:
                conn.sendall(b"refused\n")
                conn.close()
                continue
            with self._lock:
                self._nsessions += 1
                s = Session(self, conn, self._nsessions)
                s.greet()
                conn.setblocking(False)
                self.sessions.append(s)

    def pause(self):
        """Stop the engine; when this returns it reads and writes no ring."""
        with self._lock:
            self.paused = True

    def resume(self):
        with self._lock:
            self.paused = False

    def session(self, i=-1):
        with self._lock:
            return self.sessions[i]

    def kill(self, s):
        """End session s from the daemon's side (as when the daemon exits)."""
        with self._lock:
            self._end(s)

    def inject(self, s, raw):
        """Queue raw completion bytes (64) for session s: for tests of bad
        completions."""
        with self._lock:
            s.outq.append(bytes(raw))

    # ----- engine -----
    def _engine_loop(self):
        last_check = 0.0
        while not self._stop.is_set():
            busy = False
            with self._lock:
                sessions = [] if self.paused else self.sessions
                for s in list(sessions):
                    if s.closed:
                        continue
                    for _ in range(64):
                        slot = s.sq.pop()
                        if slot is None:
                            break
                        busy = True
                        s.submissions += 1
                        self._handle(s, slot)
                    self._retry_requests(s)
                for s in list(sessions):
                    if not s.closed:
                        busy |= s.flush()
                now = time.monotonic()
                if now - last_check > 0.01:
                    last_check = now
                    for s in list(self.sessions):
                        self._check_conn(s)
            if not busy:
                time.sleep(self.idle_sleep)

    def _check_conn(self, s):
        try:
            data = s.conn.recv(64)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data == b"":
            self._end(s)

    def _end(self, s):
        """The worker went away: abort its RPCs, unbind its ports, free it."""
        if s in self.sessions:
            self.sessions.remove(s)
        for port in s.bound:
            self.ports.pop(port, None)
        # requests it never answered: their clients learn the server is gone
        for (cs, cid, ccookie, _port) in s.server_rpcs.values():
            self._fail_client(cs, cid, ccookie, ErrCode.CLOSED)
        for item in s.pending_requests:
            self._fail_client(item[0], item[1], item[2], ErrCode.CLOSED)
        s.close()

    def _fail_client(self, cs, cid, cookie, code):
        if cs.closed or cs.client_rpcs.get(cid) != cookie:
            return
        del cs.client_rpcs[cid]
        cs.complete(op=CompOp.ERROR, cookie=cookie, rpc_id=cid, err=code)

    def _released(self, s, sub, **kw):
        if self.release_mode == "flag":
            s.complete(op=CompOp.ACCEPTED, cookie=sub.cookie, flags=COMP_FLAG_RELEASED, **kw)
        else:
            s.complete(op=CompOp.ACCEPTED, cookie=sub.cookie, **kw)
            s.complete(op=CompOp.RELEASED, cookie=sub.cookie, offset=sub.offset, length=sub.length)

    def _handle(self, s, slot):
        sub, code = parse_submission(slot, s.limits)
        if code:
            flags = COMP_FLAG_RELEASED if sub.op in (Op.SEND, Op.REPLY) else 0
            s.complete(op=CompOp.ERROR, cookie=sub.cookie, err=code, flags=flags)
            return
        op = sub.op
        if op == Op.BIND:
            if sub.port in self.ports:
                s.complete(op=CompOp.ERROR, cookie=sub.cookie, err=ErrCode.PORT_IN_USE)
            else:
                self.ports[sub.port] = s
                s.bound.add(sub.port)
                s.complete(op=CompOp.ACCEPTED, cookie=sub.cookie, port=sub.port)
        elif op == Op.SEND:
            payload = s.arena[sub.offset:sub.offset + sub.length].tobytes()
            cid = self._next_client
            self._next_client += 2
            s.client_rpcs[cid] = sub.cookie
            self._released(s, sub, rpc_id=cid)
            if sub.peer_ip not in self.ips:
                return self._fail_client(s, cid, sub.cookie, ErrCode.UNREACHABLE)
            srv = self.ports.get(sub.peer_port)
            if srv is None:
                return self._fail_client(s, cid, sub.cookie, ErrCode.PORT_UNREACHABLE)
            srv.pending_requests.append((s, cid, sub.cookie, sub.peer_port, payload))
            self._retry_requests(srv)
        elif op == Op.REPLY:
            rec = s.server_rpcs.get(sub.rpc_id)
            if rec is None or sub.peer_ip != self.ip or sub.peer_port != rec[0].client_port:
                s.complete(op=CompOp.ERROR, cookie=sub.cookie, rpc_id=sub.rpc_id, err=ErrCode.NO_RPC,
                           flags=COMP_FLAG_RELEASED)
                return
            del s.server_rpcs[sub.rpc_id]
            payload = s.arena[sub.offset:sub.offset + sub.length].tobytes()
            self._released(s, sub, rpc_id=sub.rpc_id)
            cs, cid, ccookie, port = rec
            if cs.closed or cs.client_rpcs.get(cid) != ccookie:
                return  # the client aborted or left
            got = cs.alloc_pages(len(payload))
            if got is None:
                return self._fail_client(cs, cid, ccookie, ErrCode.NO_BUFFER_SPACE)
            page, pages = got
            cs.pool[page * PAGE_SIZE:page * PAGE_SIZE + len(payload)] = payload
            del cs.client_rpcs[cid]
            cs.complete(op=CompOp.RESPONSE, cookie=ccookie, rpc_id=cid, peer_ip=self.ip, peer_port=port,
                        length=len(payload), page=page, pages=pages)
        elif op == Op.ABORT:
            cookie = s.client_rpcs.pop(sub.rpc_id, None)
            if cookie is None:
                s.complete(op=CompOp.ERROR, cookie=sub.cookie, rpc_id=sub.rpc_id, err=ErrCode.NO_RPC)
                return
            self._aborted(s, sub.rpc_id, cookie)
            s.complete(op=CompOp.ACCEPTED, cookie=sub.cookie, rpc_id=sub.rpc_id)
            s.complete(op=CompOp.ERROR, cookie=cookie, rpc_id=sub.rpc_id, err=ErrCode.ABORTED)
        elif op == Op.ABORT_ALL:
            for cid, cookie in list(s.client_rpcs.items()):
                self._aborted(s, cid, cookie)
                s.complete(op=CompOp.ERROR, cookie=cookie, rpc_id=cid, err=ErrCode.ABORTED)
            s.client_rpcs.clear()
            s.complete(op=CompOp.ACCEPTED, cookie=sub.cookie)
        elif op == Op.RETURN_PAGES:
            if s.pages.find(0, sub.page, sub.page + sub.pages) != -1:
                s.complete(op=CompOp.ERROR, cookie=sub.cookie, err=ErrCode.BAD_PAGE)
                return
            s.pages[sub.page:sub.page + sub.pages] = bytes(sub.pages)

    def _aborted(self, cs, cid, cookie):
        """Client RPC cid of session cs was aborted: with abort_ends_server,
        the server that holds its request forgets it (a reply gets NO_RPC)."""
        if not self.abort_ends_server:
            return
        for srv in self.sessions:
            for sid, rec in list(srv.server_rpcs.items()):
                if rec[0] is cs and rec[1] == cid and rec[2] == cookie:
                    del srv.server_rpcs[sid]

    def _retry_requests(self, srv):
        while srv.pending_requests:
            cs, cid, ccookie, port, payload = srv.pending_requests[0]
            if cs.closed or cs.client_rpcs.get(cid) != ccookie:
                srv.pending_requests.popleft()
                continue
            got = srv.alloc_pages(len(payload))
            if got is None:
                return
            srv.pending_requests.popleft()
            page, pages = got
            srv.pool[page * PAGE_SIZE:page * PAGE_SIZE + len(payload)] = payload
            sid = self._next_server
            self._next_server += 2
            srv.server_rpcs[sid] = (cs, cid, ccookie, port)
            srv.complete(op=CompOp.REQUEST, port=port, rpc_id=sid, peer_ip=self.ip, peer_port=cs.client_port,
                         length=len(payload), page=page, pages=pages)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--socket", required=True)
    ap.add_argument("--ip", action="append", help="addresses of this host (default 127.0.0.1)")
    ap.add_argument("--arena", type=int, default=4 << 20, help="transmit arena bytes per worker")
    ap.add_argument("--pool-pages", type=int, default=128, help="receive pool pages (64 KB) per worker")
    ap.add_argument("--release-mode", choices=("separate", "flag"), default="separate")
    args = ap.parse_args()
    d = FakeDaemon(args.socket, ips=tuple(args.ip or ["127.0.0.1"]), arena_size=args.arena,
                   pool_pages=args.pool_pages, release_mode=args.release_mode)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    d.start()
    print(f"fakedaemon: listening on {args.socket}", flush=True)
    stop.wait()
    d.stop()


if __name__ == "__main__":
    main()
