"""Exceptions raised by homa_dpdk.

Every exception the package raises on purpose derives from HomaError.
"""

from .codes import ErrCode, err_name

__all__ = [
    "HomaError",
    "AttachError",
    "RefusedError",
    "LayoutError",
    "RingGeometryError",
    "WaitTimeout",
    "RPCError",
    "BadEntry",
    "ArenaFull",
    "UnsupportedPlatform",
]


class HomaError(Exception):
    """Base class of every error of this package."""


class AttachError(HomaError, OSError):
    """Attaching to the daemon's control socket failed (connect, greeting,
    descriptors, mapping)."""


class RefusedError(AttachError, PermissionError):
    """The daemon refused this process's credentials (SO_PEERCRED allow-lists)."""


class LayoutError(HomaError, ValueError):
    """The region header is invalid. field names the header field as in
    shm/layout.go (e.g. "ArenaOffset"), value is the value found."""

    def __init__(self, field, value, reason):
        self.field = field
        self.value = value
        self.reason = reason
        super().__init__(f"homa_dpdk: layout {field} = {value}: {reason}")


class RingGeometryError(HomaError, ValueError):
    """Ring memory of the wrong size, or entries not a power of two."""


class UnsupportedPlatform(HomaError, RuntimeError):
    """libhoma does not run the rings on this machine (HOMA_EPLATFORM)."""


class WaitTimeout(HomaError, TimeoutError):
    """The wait itself ran out of time (the RPC may still complete later)."""


class _CodeError(HomaError):
    def __init__(self, code, rpc_id=0, what="", peer=None):
        self.code = ErrCode(code) if code in ErrCode._value2member_map_ else code
        self.rpc_id = rpc_id
        self.peer = peer
        msg = err_name(code)
        if rpc_id:
            msg = f"RPC {rpc_id}: {msg}"
        if what:
            msg = f"{what}: {msg}"
        super().__init__(msg)


class RPCError(_CodeError):
    """An RPC or an accepted-kind submission failed in the daemon.

    code is an ErrCode (16 and up: TIMEOUT, UNREACHABLE, PORT_UNREACHABLE,
    ABORTED, NO_BUFFER_SPACE, NO_RPC, PORT_IN_USE, LIMIT, PEER_RESTARTED,
    CLOSED, PEER_MESSAGE_LENGTH: a message above 1,000,000 bytes to a peer
    that may run kernel Homa, which takes no longer ones; a request whose
    reply() was so refused may be answered again, shorter); rpc_id the RPC
    concerned, 0 when none. peer is (ip str, port) of the other end where
    known: the server of a client RPC that failed
    in the daemon (even rpc_id), or the client of a request whose
    reply_async the daemon refused (odd rpc_id: the request's id); None
    otherwise."""


class BadEntry(_CodeError):
    """The daemon rejected a submission as malformed (codes 1..15: BAD_OP,
    BAD_FLAGS, ...). With this package it means a bug in it or a daemon of
    another version."""


class ArenaFull(HomaError):
    """No room in the transmit arena for a message, and none freed up
    within the client's op_timeout."""


def _error_for(code, rpc_id=0, what="", peer=None):
    if 0 < code < 16:
        return BadEntry(code, rpc_id, what, peer)
    return RPCError(code, rpc_id, what, peer)
