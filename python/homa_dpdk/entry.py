"""Ring entries: the 64-byte submissions and completions of shm/entry.go.

Both rings carry entries with one little-endian layout::

    off size field      submission (worker -> engine)      completion (engine -> worker)
      0  1   op         Op                                 CompOp
      1  1   flags      0                                  CompFlag bits
      2  2   port       Bind: server port                  local port the entry concerns
      4  4   length     Send/Reply: message bytes          message bytes / released bytes
      8  8   cookie     any value, echoed                  the submission's cookie
     16  8   rpc id     Reply: server id (odd);            RPC id
                        Abort: client id (even)
     24  4   peer ip    IPv4, network order                the other end of the RPC
     28  2   peer port  Send: server port; Reply: client's
     30  2   error      0                                  CompError: ErrCode
     32  8   offset     Send/Reply: first byte in arena    Released: arena offset
     40  4   page       ReturnPages: first pool page       Request/Response: first pool page
     44  4   pages      ReturnPages: page count            Request/Response: page count
     48 16   peer ip6   Send/Reply: IPv6, network order    the other end (IPv6)

A peer is IPv4 (peer ip set, peer ip6 zero) or IPv6 (peer ip zero, peer
ip6 set, never IPv4-mapped); entries that name no peer have both zero.

parse_submission and parse_completion mirror ParseSubmission and
ParseCompletion of the Go package check for check and in the same order, so
both sides give the same ErrCode for the same bytes.
"""

import enum
import struct

__all__ = [
    "ENTRY_SIZE",
    "PAGE_SIZE",
    "MAX_SERVER_PORT",
    "COMP_FLAG_RELEASED",
    "Op",
    "CompOp",
    "ErrCode",
    "err_name",
    "Limits",
    "Submission",
    "Completion",
    "parse_submission",
    "parse_completion",
    "OFF_OP",
    "OFF_FLAGS",
    "OFF_PORT",
    "OFF_LENGTH",
    "OFF_COOKIE",
    "OFF_RPC",
    "OFF_PEER_IP",
    "OFF_PEER_PORT",
    "OFF_ERR",
    "OFF_OFFSET",
    "OFF_PAGE",
    "OFF_PAGES",
    "OFF_RESERVED",
]

ENTRY_SIZE = 64
PAGE_SIZE = 65536
MAX_SERVER_PORT = 0x7FFF  # server ports are 1..0x7fff

OFF_OP = 0
OFF_FLAGS = 1
OFF_PORT = 2
OFF_LENGTH = 4
OFF_COOKIE = 8
OFF_RPC = 16
OFF_PEER_IP = 24
OFF_PEER_PORT = 28
OFF_ERR = 30
OFF_OFFSET = 32
OFF_PAGE = 40
OFF_PAGES = 44
OFF_RESERVED = 48

# op flags port length cookie rpc ip peerport err offset page pages ip6
_ENTRY = struct.Struct("<BBHIQQ4sHHQII16s")
assert _ENTRY.size == ENTRY_SIZE

COMP_FLAG_RELEASED = 1  # Accepted/Error of a Send or Reply: the arena range is free again
_COMP_FLAGS_KNOWN = COMP_FLAG_RELEASED


class Op(enum.IntEnum):
    """Submission ops (0 is never valid)."""

    BIND = 1
    SEND = 2
    REPLY = 3
    ABORT = 4
    ABORT_ALL = 5
    RETURN_PAGES = 6


_OP_END = 7


class CompOp(enum.IntEnum):
    """Completion ops."""

    ACCEPTED = 1
    REQUEST = 2
    RESPONSE = 3
    ERROR = 4
    RELEASED = 5


_COMP_END = 6


class ErrCode(enum.IntEnum):
    """Why an entry failed: a bad field (1..15) or what happened (16 and up)."""

    NONE = 0
    BAD_OP = 1
    BAD_FLAGS = 2
    BAD_RESERVED = 3
    BAD_PORT = 4
    BAD_PEER = 5
    BAD_LENGTH = 6
    BAD_ARENA = 7
    BAD_PAGE = 8
    BAD_RPC = 9
    BAD_COMP_ERROR = 10
    TIMEOUT = 16
    UNREACHABLE = 17
    PORT_UNREACHABLE = 18
    ABORTED = 19
    NO_BUFFER_SPACE = 20
    NO_RPC = 21
    PORT_IN_USE = 22
    LIMIT = 23
    PEER_RESTARTED = 24
    CLOSED = 25
    PEER_MESSAGE_LENGTH = 26  # above 1,000,000 bytes to a peer that may run kernel Homa


_ERR_BAD_END = 11
_ERR_END = 27

_ERR_NAMES = {
    0: "none",
    1: "bad op",
    2: "bad flags",
    3: "nonzero reserved or unused field",
    4: "bad port",
    5: "bad peer address",
    6: "bad length",
    7: "range outside the transmit arena",
    8: "page range outside the receive pool",
    9: "bad RPC id",
    10: "bad error code",
    16: "timeout",
    17: "peer unreachable",
    18: "port unreachable",
    19: "aborted",
    20: "no buffer space",
    21: "no such RPC",
    22: "port in use",
    23: "worker limit reached",
    24: "peer restarted",
    25: "closed",
    26: "message too long for the peer (kernel Homa's 1,000,000 bytes)",
}


def err_name(code):
    """The Go ErrCode.String of code."""
    return _ERR_NAMES.get(int(code), f"error({int(code)})")


def _err_known(code):
    return code < _ERR_BAD_END or 16 <= code < _ERR_END


class Limits:
    """What entries are checked against: one region's sizes and the
    largest message."""

    __slots__ = ("arena_size", "pool_pages", "max_message")

    def __init__(self, arena_size, pool_pages, max_message):
        self.arena_size = arena_size
        self.pool_pages = pool_pages
        self.max_message = max_message

    def __repr__(self):
        return f"Limits(arena_size={self.arena_size}, pool_pages={self.pool_pages}, max_message={self.max_message})"


def _in_arena(off, n, lim):
    return off <= lim.arena_size and n <= lim.arena_size - off


def _in_pool(page, pages, lim):
    return pages > 0 and page < lim.pool_pages and pages <= lim.pool_pages - page


_FIELDS = ("op", "flags", "port", "length", "cookie", "rpc_id", "peer_ip", "peer_port", "offset", "page", "pages",
           "peer_ip6")


class _Entry:
    __slots__ = _FIELDS + ("err",)

    def __init__(self, op=0, flags=0, port=0, length=0, cookie=0, rpc_id=0, peer_ip=b"\0\0\0\0", peer_port=0,
                 offset=0, page=0, pages=0, err=0, peer_ip6=bytes(16)):
        self.op = op
        self.flags = flags
        self.port = port
        self.length = length
        self.cookie = cookie
        self.rpc_id = rpc_id
        self.peer_ip = bytes(peer_ip)
        self.peer_port = peer_port
        self.offset = offset
        self.page = page
        self.pages = pages
        self.err = err
        self.peer_ip6 = bytes(peer_ip6)

    def encode(self):
        """The entry's 64 bytes."""
        return _ENTRY.pack(self.op, self.flags, self.port, self.length, self.cookie, self.rpc_id, self.peer_ip,
                           self.peer_port, self.err, self.offset, self.page, self.pages, self.peer_ip6)

    def __eq__(self, other):
        return type(self) is type(other) and all(getattr(self, f) == getattr(other, f) for f in self.__slots__)

    def __repr__(self):
        body = ", ".join(f"{f}={getattr(self, f)!r}" for f in self.__slots__ if getattr(self, f))
        return f"{type(self).__name__}({body})"


class Submission(_Entry):
    """A submission entry (worker -> engine). err must stay 0."""

    __slots__ = ()


class Completion(_Entry):
    """A completion entry (engine -> worker)."""

    __slots__ = ()


def _decode(cls, src):
    if len(src) != ENTRY_SIZE:
        raise ValueError(f"an entry is {ENTRY_SIZE} bytes, got {len(src)}")
    (op, flags, port, length, cookie, rpc, ip, peer_port, err, offset, page, pages, ip6) = _ENTRY.unpack(src)
    return cls(op, flags, port, length, cookie, rpc, ip, peer_port, offset, page, pages, err, ip6)


# Which fields each op uses; the others must be zero.
_USE_PORT, _USE_LENGTH, _USE_RPC, _USE_PEER, _USE_OFFSET, _USE_PAGES = 1, 2, 4, 8, 16, 32
_OP_USES = {
    Op.BIND: _USE_PORT,
    Op.SEND: _USE_PEER | _USE_OFFSET | _USE_LENGTH,
    Op.REPLY: _USE_RPC | _USE_PEER | _USE_OFFSET | _USE_LENGTH,
    Op.ABORT: _USE_RPC,
    Op.ABORT_ALL: 0,
    Op.RETURN_PAGES: _USE_PAGES,
}
_ZERO_IP = b"\0\0\0\0"
_ZERO_IP6 = bytes(16)
_MAPPED = bytes(10) + b"\xff\xff"


def _one_peer(e):
    """Exactly one of the entry's addresses is set, the IPv6 one not IPv4-mapped."""
    v4, v6 = e.peer_ip != _ZERO_IP, e.peer_ip6 != _ZERO_IP6
    return v4 != v6 and not (v6 and e.peer_ip6[:12] == _MAPPED)


def _set_fields(s):
    used = 0
    if s.port:
        used |= _USE_PORT
    if s.length:
        used |= _USE_LENGTH
    if s.rpc_id:
        used |= _USE_RPC
    if s.peer_ip != _ZERO_IP or s.peer_ip6 != _ZERO_IP6 or s.peer_port:
        used |= _USE_PEER
    if s.offset:
        used |= _USE_OFFSET
    if s.page or s.pages:
        used |= _USE_PAGES
    return used


def validate_submission(s, lim):
    """Submission.Validate of the Go package: the ErrCode for s."""
    if not 0 < s.op < _OP_END:
        return ErrCode.BAD_OP
    if s.flags:
        return ErrCode.BAD_FLAGS
    use = _OP_USES[s.op]
    if _set_fields(s) & ~use:
        return ErrCode.BAD_RESERVED
    if use & _USE_PORT and not 0 < s.port <= MAX_SERVER_PORT:
        return ErrCode.BAD_PORT
    if use & _USE_PEER:
        if not _one_peer(s):
            return ErrCode.BAD_PEER
        if s.peer_port == 0 or (s.op == Op.SEND and s.peer_port > MAX_SERVER_PORT):
            return ErrCode.BAD_PORT
    if use & _USE_LENGTH:
        if s.length == 0 or s.length > lim.max_message:
            return ErrCode.BAD_LENGTH
        if not _in_arena(s.offset, s.length, lim):
            return ErrCode.BAD_ARENA
    if use & _USE_RPC:
        odd = s.rpc_id & 1 == 1
        if (s.op == Op.REPLY) != odd or s.rpc_id == 0:
            return ErrCode.BAD_RPC
    if use & _USE_PAGES and not _in_pool(s.page, s.pages, lim):
        return ErrCode.BAD_PAGE
    return ErrCode.NONE


def parse_submission(src, lim):
    """ParseSubmission: decode 64 bytes a worker wrote and validate them.
    Returns (Submission, ErrCode); on ErrCode.NONE every field is safe."""
    s = _decode(Submission, src)
    if not 0 < s.op < _OP_END:
        return s, ErrCode.BAD_OP
    if s.err != 0:
        return s, ErrCode.BAD_RESERVED
    return s, validate_submission(s, lim)


def parse_completion(src, lim):
    """ParseCompletion: decode 64 bytes the engine wrote and validate them
    as a worker must before using them: op and flags known, at most one
    peer address, err set exactly on ERROR and known, a message's pages a range of
    the pool that holds length bytes (1..max_message), a released range
    inside the arena. Returns (Completion, ErrCode)."""
    c = _decode(Completion, src)
    if not 0 < c.op < _COMP_END:
        return c, ErrCode.BAD_OP
    if c.flags & ~_COMP_FLAGS_KNOWN:
        return c, ErrCode.BAD_FLAGS
    if c.peer_ip != _ZERO_IP and c.peer_ip6 != _ZERO_IP6:
        return c, ErrCode.BAD_PEER
    if (c.op == CompOp.ERROR) != (c.err != 0) or not _err_known(c.err):
        return c, ErrCode.BAD_COMP_ERROR
    if c.op in (CompOp.REQUEST, CompOp.RESPONSE):
        if c.length == 0 or c.length > lim.max_message:
            return c, ErrCode.BAD_LENGTH
        if not _in_pool(c.page, c.pages, lim) or c.length > c.pages * PAGE_SIZE:
            return c, ErrCode.BAD_PAGE
    elif c.op == CompOp.RELEASED:
        if not _in_arena(c.offset, c.length, lim):
            return c, ErrCode.BAD_ARENA
    return c, ErrCode.NONE
