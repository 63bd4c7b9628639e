"""Completions: the entries of the completion ring validated and applied
(see client.py on what is checked), and the outcomes they yield: the
ready queue that receive() reads, the RPC outcomes that wait() claims.
CompletionHandlers is a part of Client (client.py), which sets up the
state it uses.
"""

from .entry import COMP_FLAG_RELEASED, Op, err_name, parse_completion
from .errors import _error_for
from .message import Message
from .pending import _ACCEPTED, _FAILED, _RETURN_TAG, _RPC, _WAITING

__all__ = ["CompletionHandlers"]


class CompletionHandlers:
    """Client's completion side: drain the ring, one handler per CompOp."""

    def _has_ready(self):
        r = self._ready
        while r:
            head = r[0]
            if not isinstance(head, _RPC) or not head.claimed:
                return True
            r.popleft()
        return False

    def _claim(self, rpc):
        rpc.claimed = True
        self._rpcs.pop(rpc.id, None)
        out, rpc.outcome = rpc.outcome, None  # a stale entry in _ready must not keep the Message alive
        if isinstance(out, Exception):
            raise out
        return out

    def _drop(self, rpc):
        rpc.claimed = True
        self._rpcs.pop(rpc.id, None)
        out, rpc.outcome = rpc.outcome, None
        if isinstance(out, Message):
            out._drop_view()

    def _drain(self):
        cq = self._cq
        n = 0
        while True:
            slot = cq.pop()
            if slot is None:
                return n
            n += 1
            try:
                self._handle(slot)
            except Exception as e:  # never let a completion crash the worker
                self._bad(f"handler raised {type(e).__name__}: {e}", None)

    def _handle(self, slot):
        c, code = parse_completion(slot, self._limits)
        if code:
            return self._bad(err_name(code), c)
        self._handlers[c.op](c)

    def _bad(self, why, c):
        self._stats["bad_completions"] += 1
        self.last_bad = f"bad completion ({why}): {c!r}"

    def _unexpected(self, why, c):
        self._stats["unexpected_completions"] += 1
        self.last_bad = f"unexpected completion ({why}): {c!r}"

    def _settle(self, sub):
        if sub.state != _WAITING and sub.off is None:
            self._subs.pop(sub.cookie, None)

    def _free_range(self, sub):
        self._arena.free(sub.off)
        sub.off = None

    def _on_accepted(self, c):
        sub = None if c.cookie & _RETURN_TAG else self._subs.get(c.cookie)
        if sub is None or sub.state != _WAITING:
            return self._unexpected("no submission waits for this cookie", c)
        kind = sub.kind
        if kind == Op.BIND:
            if c.port != sub.port:
                return self._bad(f"bind of port {sub.port} accepted for port {c.port}", c)
        elif kind == Op.SEND:
            rid = c.rpc_id
            if rid == 0 or rid & 1 or rid in self._rpcs:
                return self._bad(f"send accepted with RPC id {rid} (want a new even id)", c)
            self._rpcs[rid] = _RPC(rid, c.cookie, sub.peer)
            sub.rpc_id = rid
        elif kind in (Op.REPLY, Op.ABORT):
            if c.rpc_id != sub.rpc_id:
                return self._bad(f"{kind.name.lower()} of RPC {sub.rpc_id} accepted for RPC {c.rpc_id}", c)
        if c.flags & COMP_FLAG_RELEASED and sub.off is not None:
            self._free_range(sub)
        sub.state = _ACCEPTED
        if sub.detached and kind == Op.REPLY:
            self._stats["replies"] += 1
        self._settle(sub)

    def _on_released(self, c):
        sub = None if c.cookie & _RETURN_TAG else self._subs.get(c.cookie)
        if sub is None or sub.off is None:
            return self._unexpected("no arena range held under this cookie", c)
        if c.offset != sub.off or c.length != sub.length:
            return self._bad(f"released [{c.offset}, +{c.length}) but the message is at [{sub.off}, +{sub.length})",
                             c)
        self._free_range(sub)
        self._settle(sub)

    def _on_error(self, c):
        if c.cookie & _RETURN_TAG:
            self._stats["page_return_errors"] += 1
            self.last_bad = f"page return refused ({err_name(c.err)}): {c!r}"
            return
        sub = self._subs.get(c.cookie)
        if sub is not None and sub.state == _WAITING:
            sub.state = _FAILED
            sub.err = c.err
            if c.flags & COMP_FLAG_RELEASED and sub.off is not None:
                self._free_range(sub)
            self._settle(sub)
            if sub.detached:  # a reply_async or send_async refused: its failure goes to receive()
                self._stats["rpc_errors"] += 1
                what = "send_async" if sub.kind == Op.SEND else "reply_async"
                self._stats[what[:-6] + "_refused"] += 1
                ip, port = sub.peer
                self._ready.append(_error_for(c.err, sub.rpc_id, f"{what} to {ip}:{port}", sub.peer))
            return
        rpc = self._rpcs.get(c.rpc_id) if c.rpc_id else None
        if rpc is not None and rpc.cookie == c.cookie and rpc.outcome is None and not rpc.claimed:
            if c.flags & COMP_FLAG_RELEASED and sub is not None and sub.off is not None:
                self._free_range(sub)
                self._settle(sub)
            self._stats["rpc_errors"] += 1
            self._finish(rpc, _error_for(c.err, c.rpc_id, peer=rpc.peer))
            return
        self._unexpected("error for no waiting submission or RPC", c)

    def _refuse_message(self, why, c):
        """A well-formed Request/Response we cannot take: give its pages back
        if they do not overlap pages we hold."""
        self._unexpected(why, c)
        if self._pages_free(c):
            self._mark(c.page, c.pages)
            self._return_later(c.page, c.pages)

    def _on_request(self, c):
        if c.cookie != 0 or c.rpc_id & 1 == 0 or c.peer_ip == b"\0\0\0\0" and c.peer_ip6 == bytes(16) or c.peer_port == 0:
            return self._refuse_message("request with a nonzero cookie, an even id or no peer", c)
        if c.port not in self._bound:
            return self._refuse_message(f"request for port {c.port}, which this worker did not bind", c)
        if not self._pages_free(c):
            return self._bad("request in pool pages this worker still holds", c)
        self._stats["requests"] += 1
        self._ready.append(self._new_message(c, True))

    def _on_response(self, c):
        rpc = self._rpcs.get(c.rpc_id)
        if rpc is None or rpc.cookie != c.cookie or rpc.outcome is not None or rpc.claimed:
            return self._refuse_message("response for no outstanding RPC of this cookie", c)
        if not self._pages_free(c):
            return self._bad("response in pool pages this worker still holds", c)
        self._stats["responses"] += 1
        self._finish(rpc, self._new_message(c, False))

    def _finish(self, rpc, outcome):
        if rpc.aborted:
            rpc.outcome = outcome
            self._drop(rpc)
            return
        rpc.outcome = outcome
        self._ready.append(rpc)
