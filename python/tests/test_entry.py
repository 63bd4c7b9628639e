"""Entries against hand-built bytes at the offsets of shm/entry.go, and
against bytes that shm's own Encode produced."""

import unittest

import support  # noqa: F401

from homa_dpdk.entry import (COMP_FLAG_RELEASED, ENTRY_SIZE, CompOp, Completion, ErrCode, Limits, Op, Submission,
                             err_name, parse_completion, parse_submission)

LIM = Limits(arena_size=1 << 20, pool_pages=16, max_message=1_000_000)


def put(buf, off, size, value):
    buf[off:off + size] = value.to_bytes(size, "little")


def hand_entry(op=0, flags=0, port=0, length=0, cookie=0, rpc=0, ip=b"\0\0\0\0", peer_port=0, err=0, offset=0,
               page=0, pages=0, ip6=b""):
    """64 bytes laid out by the table in shm/entry.go, field by field."""
    b = bytearray(64)
    b[0] = op
    b[1] = flags
    put(b, 2, 2, port)
    put(b, 4, 4, length)
    put(b, 8, 8, cookie)
    put(b, 16, 8, rpc)
    b[24:28] = ip
    put(b, 28, 2, peer_port)
    put(b, 30, 2, err)
    put(b, 32, 8, offset)
    put(b, 40, 4, page)
    put(b, 44, 4, pages)
    b[48:48 + len(ip6)] = ip6
    return bytes(b)


# Produced by shm.Submission.Encode / shm.Completion.Encode (Go) for the
# values in the tests below.
GO_SUB = bytes.fromhex("0300000004030201887766554433221109070605040302010a000002efbe0000f0e0d0c0b0a0000000000000"
                       "0000000000000000000000000000000000000000")
GO_COMP = bytes.fromhex("03013412701101001032547698badcfe2a00000000000000c0a801076300000000000000000000000300000002"
                        "00000000000000000000000000000000000000")
# shm.Completion{Op: CompRequest, Port: 99, RPCID: 13, PeerIP6: 2001:db8::2,
# PeerPort: 0x8001, Length: 5, Page: 1, Pages: 1}.Encode
GO_COMP6 = bytes.fromhex("020063000500000000000000000000000d0000000000000000000000018000000000000000000000010000000100"
                         "000020010db8000000000000000000000002")
GO_ERR = bytes.fromhex("040000008000000005000000000000000600000000000000000000000000180040000000000000000000000000"
                       "00000000000000000000000000000000000000")


class TestEncode(unittest.TestCase):
    def test_sizes(self):
        self.assertEqual(ENTRY_SIZE, 64)
        for e in (Submission(), Completion()):
            self.assertEqual(len(e.encode()), 64)

    def test_submission_matches_hand_and_go(self):
        s = Submission(op=Op.REPLY, length=0x01020304, cookie=0x1122334455667788, rpc_id=0x0102030405060709,
                       peer_ip=bytes([10, 0, 0, 2]), peer_port=0xBEEF, offset=0xA0B0C0D0E0F0)
        want = hand_entry(op=3, length=0x01020304, cookie=0x1122334455667788, rpc=0x0102030405060709,
                          ip=bytes([10, 0, 0, 2]), peer_port=0xBEEF, offset=0xA0B0C0D0E0F0)
        self.assertEqual(s.encode(), want)
        self.assertEqual(s.encode(), GO_SUB)

    def test_completion_matches_hand_and_go(self):
        c = Completion(op=CompOp.RESPONSE, flags=1, port=0x1234, length=70000, cookie=0xFEDCBA9876543210, rpc_id=42,
                       peer_ip=bytes([192, 168, 1, 7]), peer_port=99, page=3, pages=2)
        self.assertEqual(c.encode(), hand_entry(op=3, flags=1, port=0x1234, length=70000,
                                                cookie=0xFEDCBA9876543210, rpc=42, ip=bytes([192, 168, 1, 7]),
                                                peer_port=99, page=3, pages=2))
        self.assertEqual(c.encode(), GO_COMP)
        e = Completion(op=CompOp.ERROR, cookie=5, rpc_id=6, err=ErrCode.PEER_RESTARTED, offset=64, length=128)
        self.assertEqual(e.encode(), GO_ERR)

    def test_ipv6_peer_matches_go(self):
        ip6 = bytes.fromhex("20010db8000000000000000000000002")
        c = Completion(op=CompOp.REQUEST, port=99, rpc_id=13, peer_ip6=ip6, peer_port=0x8001, length=5, page=1,
                       pages=1)
        self.assertEqual(c.encode(), GO_COMP6)
        got, code = parse_completion(GO_COMP6, LIM)
        self.assertEqual((code, got.peer_ip6, got.peer_ip), (ErrCode.NONE, ip6, b"\0\0\0\0"))

    def test_peer_ip_is_network_order(self):
        b = Submission(op=Op.SEND, peer_ip=bytes([10, 0, 0, 2])).encode()
        self.assertEqual(b[24:28], b"\x0a\x00\x00\x02")

    def test_ops_and_codes_match_go(self):
        self.assertEqual([int(o) for o in Op], [1, 2, 3, 4, 5, 6])
        self.assertEqual([int(o) for o in CompOp], [1, 2, 3, 4, 5])
        self.assertEqual(COMP_FLAG_RELEASED, 1)
        self.assertEqual((ErrCode.BAD_COMP_ERROR, ErrCode.TIMEOUT, ErrCode.CLOSED), (10, 16, 25))
        self.assertEqual(ErrCode.PEER_MESSAGE_LENGTH, 26)
        self.assertIn("1,000,000", err_name(ErrCode.PEER_MESSAGE_LENGTH))
        self.assertEqual(err_name(ErrCode.NO_RPC), "no such RPC")
        self.assertEqual(err_name(99), "error(99)")


class TestParseCompletion(unittest.TestCase):
    def parse(self, **kw):
        return parse_completion(hand_entry(**kw), LIM)

    def test_decodes_every_field(self):
        c, code = parse_completion(GO_COMP, LIM)
        self.assertEqual(code, ErrCode.NONE)
        self.assertEqual((c.op, c.flags, c.port, c.length, c.cookie, c.rpc_id, c.peer_ip, c.peer_port, c.err,
                          c.offset, c.page, c.pages),
                         (CompOp.RESPONSE, 1, 0x1234, 70000, 0xFEDCBA9876543210, 42, bytes([192, 168, 1, 7]), 99,
                          0, 0, 3, 2))
        c, code = parse_completion(GO_ERR, LIM)
        self.assertEqual((code, c.err, c.offset, c.length), (ErrCode.NONE, ErrCode.PEER_RESTARTED, 64, 128))

    def test_valid(self):
        for kw in (dict(op=1, cookie=7), dict(op=2, length=1, page=0, pages=1, rpc=3),
                   dict(op=3, length=65536, page=15, pages=1), dict(op=3, length=65537, page=14, pages=2),
                   dict(op=4, err=16), dict(op=4, err=1, flags=1), dict(op=5, offset=0, length=1 << 20),
                   dict(op=5, offset=1 << 20, length=0)):
            with self.subTest(**kw):
                self.assertEqual(self.parse(**kw)[1], ErrCode.NONE)

    def test_invalid(self):
        cases = [
            (dict(op=0), ErrCode.BAD_OP),
            (dict(op=6), ErrCode.BAD_OP),
            (dict(op=255), ErrCode.BAD_OP),
            (dict(op=1, flags=2), ErrCode.BAD_FLAGS),
            (dict(op=2, port=1, rpc=3, length=1, page=0, pages=1, ip=b"\1\0\0\0", ip6=b"\0" * 15 + b"\1"),
             ErrCode.BAD_PEER),  # both families
            (dict(op=4), ErrCode.BAD_COMP_ERROR),  # error without a code
            (dict(op=1, err=16), ErrCode.BAD_COMP_ERROR),  # a code where none belongs
            (dict(op=4, err=11), ErrCode.BAD_COMP_ERROR),  # unknown codes
            (dict(op=4, err=15), ErrCode.BAD_COMP_ERROR),
            (dict(op=4, err=27), ErrCode.BAD_COMP_ERROR),
            (dict(op=2, length=0, pages=1), ErrCode.BAD_LENGTH),
            (dict(op=3, length=1_000_001, pages=16), ErrCode.BAD_LENGTH),
            (dict(op=2, length=1, pages=0), ErrCode.BAD_PAGE),
            (dict(op=2, length=1, page=16, pages=1), ErrCode.BAD_PAGE),
            (dict(op=2, length=1, page=15, pages=2), ErrCode.BAD_PAGE),
            (dict(op=2, length=1, page=0xFFFFFFFF, pages=0xFFFFFFFF), ErrCode.BAD_PAGE),
            (dict(op=3, length=65537, page=0, pages=1), ErrCode.BAD_PAGE),  # pages too few for length
            (dict(op=5, offset=1 << 20, length=1), ErrCode.BAD_ARENA),
            (dict(op=5, offset=(1 << 64) - 1, length=2), ErrCode.BAD_ARENA),
        ]
        for kw, want in cases:
            with self.subTest(**kw):
                self.assertEqual(self.parse(**kw)[1], want)

    def test_wrong_size(self):
        with self.assertRaises(ValueError):
            parse_completion(b"\0" * 63, LIM)


class TestParseSubmission(unittest.TestCase):
    IP = bytes([10, 0, 0, 2])

    def parse(self, **kw):
        return parse_submission(hand_entry(**kw), LIM)[1]

    def test_go_bytes(self):
        # GO_SUB: its length is above the largest message, its offset outside a 1 MB arena
        self.assertEqual(parse_submission(GO_SUB, LIM)[1], ErrCode.BAD_LENGTH)
        big = Limits(1 << 48, 16, 1 << 31)
        s, code = parse_submission(GO_SUB, big)
        self.assertEqual(code, ErrCode.NONE)
        self.assertEqual((s.op, s.rpc_id, s.peer_port), (Op.REPLY, 0x0102030405060709, 0xBEEF))

    def test_cases(self):
        ip = self.IP
        cases = [
            (dict(op=1, port=1), ErrCode.NONE),
            (dict(op=1, port=0x7FFF), ErrCode.NONE),
            (dict(op=1, port=0), ErrCode.BAD_PORT),
            (dict(op=1, port=0x8000), ErrCode.BAD_PORT),
            (dict(op=1, port=5, cookie=1, rpc=2), ErrCode.BAD_RESERVED),
            (dict(op=2, ip=ip, peer_port=99, length=10, offset=0), ErrCode.NONE),
            (dict(op=2, ip=ip, peer_port=99, length=10, offset=(1 << 20) - 10), ErrCode.NONE),
            (dict(op=2, ip=ip, peer_port=99, length=10, offset=(1 << 20) - 9), ErrCode.BAD_ARENA),
            (dict(op=2, ip=ip, peer_port=0x8000, length=10), ErrCode.BAD_PORT),
            (dict(op=2, peer_port=99, length=10), ErrCode.BAD_PEER),
            (dict(op=2, ip=ip, peer_port=99, length=0), ErrCode.BAD_LENGTH),
            (dict(op=2, ip=ip, peer_port=99, length=1_000_001), ErrCode.BAD_LENGTH),
            (dict(op=2, ip=ip, peer_port=99, length=1, flags=1), ErrCode.BAD_FLAGS),
            (dict(op=2, ip=ip, peer_port=99, length=1, err=1), ErrCode.BAD_RESERVED),
            (dict(op=3, ip=ip, peer_port=0xFFFF, length=1, rpc=3), ErrCode.NONE),
            (dict(op=3, ip=ip, peer_port=0xFFFF, length=1, rpc=4), ErrCode.BAD_RPC),
            (dict(op=4, rpc=2), ErrCode.NONE),
            (dict(op=4, rpc=3), ErrCode.BAD_RPC),
            (dict(op=4), ErrCode.BAD_RPC),
            (dict(op=5), ErrCode.NONE),
            (dict(op=5, port=1), ErrCode.BAD_RESERVED),
            (dict(op=6, page=15, pages=1), ErrCode.NONE),
            (dict(op=6, page=15, pages=2), ErrCode.BAD_PAGE),
            (dict(op=6, page=0, pages=0, cookie=9), ErrCode.BAD_PAGE),
            (dict(op=7), ErrCode.BAD_OP),
            (dict(op=1, port=1, ip6=b"\1"), ErrCode.BAD_RESERVED),
            (dict(op=2, length=1, offset=0, ip=b"\1\0\0\0", ip6=b"\1", peer_port=9), ErrCode.BAD_PEER),
            (dict(op=2, length=1, offset=0, ip6=bytes(10) + b"\xff\xff\1\2\3\4", peer_port=9), ErrCode.BAD_PEER),
        ]
        for kw, want in cases:
            with self.subTest(**kw):
                self.assertEqual(self.parse(**kw), want)

    def test_round_trip(self):
        s = Submission(op=Op.RETURN_PAGES, cookie=(1 << 63) | 5, page=3, pages=4)
        got, code = parse_submission(s.encode(), LIM)
        self.assertEqual(code, ErrCode.NONE)
        self.assertEqual(got, s)


if __name__ == "__main__":
    unittest.main()
