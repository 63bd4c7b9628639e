"""The protocol's numbers as Python enums: submission and completion ops,
error codes and their names (shm/entry.go's; native/include/homa.h's enum
homa_errcode). The entries themselves are libhoma's business; these are
for reading exceptions (RPCError.code) and the Go side's documentation.
"""

import enum

__all__ = ["ENTRY_SIZE", "PAGE_SIZE", "MAX_SERVER_PORT", "COMP_FLAG_RELEASED", "Op", "CompOp", "ErrCode", "err_name"]

ENTRY_SIZE = 64  # bytes of a ring entry
PAGE_SIZE = 65536  # the receive pool's page (HOMA_PAGE_SIZE)
MAX_SERVER_PORT = 0x7FFF  # server ports are 1..0x7fff (HOMA_MAX_SERVER_PORT)
COMP_FLAG_RELEASED = 1  # Accepted/Error of a Send or Reply: the arena range is free again


class Op(enum.IntEnum):
    """Submission ops (0 is never valid)."""

    BIND = 1
    SEND = 2
    REPLY = 3
    ABORT = 4
    ABORT_ALL = 5
    RETURN_PAGES = 6


class CompOp(enum.IntEnum):
    """Completion ops."""

    ACCEPTED = 1
    REQUEST = 2
    RESPONSE = 3
    ERROR = 4
    RELEASED = 5


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
