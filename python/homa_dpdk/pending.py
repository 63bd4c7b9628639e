"""A Client's records of what it waits for: submissions by cookie (_Sub)
and client RPCs by id (_RPC); cookies are described in client.py.
"""

_RETURN_TAG = 1 << 63  # cookies of ReturnPages: tag | page << 32 | pages

_WAITING, _ACCEPTED, _FAILED = 0, 1, 2


class _Sub:
    """A submission waiting for its completion (and, for Send and Reply,
    an arena range the engine may still read). detached: no call awaits
    the completion (reply_async); the handlers count it or queue the
    refusal."""

    __slots__ = ("kind", "cookie", "state", "err", "off", "length", "port", "rpc_id", "peer", "detached")

    def __init__(self, kind, cookie, off=None, length=0, port=0, rpc_id=0, peer=None, detached=False):
        self.kind = kind
        self.cookie = cookie
        self.state = _WAITING
        self.err = 0
        self.off = off
        self.length = length
        self.port = port
        self.rpc_id = rpc_id
        self.peer = peer
        self.detached = detached


class _RPC:
    """A client RPC: its Send cookie and, once it ended, its outcome (a
    Message or an RPCError)."""

    __slots__ = ("id", "cookie", "peer", "outcome", "claimed", "aborted")

    def __init__(self, rpc_id, cookie, peer):
        self.id = rpc_id
        self.cookie = cookie
        self.peer = peer
        self.outcome = None
        self.claimed = False
        self.aborted = False
