#!/usr/bin/env python3
"""The tests of homa-ns3-tcp (make -C perf/cluster/ns3 test): each writes a
trace, runs the program and checks what it wrote, printing expected against
got. The program's binary is the first argument; the names of tests to run
(idle chain badinput incast paper load hostqueue) may follow, all by default. Exits 1 when a
check fails.
"""
import os
import subprocess
import sys
import tempfile

NET = {"racks": 9, "hosts_per_rack": 16, "cores": 4, "link_bps": 10_000_000_000,
       "uplink_bps": 40_000_000_000, "prop_ns": 0, "switch_ns": 250, "host_ns": 1000,
       "recv_ns": 500, "mtu": 1500}
HEADERS = 52   # IP 20, TCP 20, the timestamp option 12: on every segment of an idle flow
PPP = 2        # ns-3's point-to-point framing, on the wire of every link
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def write_trace(path, msgs, net=NET, header=None):
    """msgs: (at_ns, src, dst, size, after) tuples; header replaces the
    '# key value' lines when given (for the bad-input tests)."""
    with open(path, "w") as f:
        f.write("# homa-dpdk cluster trace 1\n")
        for line in header if header is not None else [f"# {k} {v}" for k, v in net.items()]:
            f.write(line + "\n")
        f.write("id,at_ns,src,dst,size,after\n")
        for i, (at, src, dst, size, after) in enumerate(msgs):
            f.write(f"{i},{at},{src},{dst},{size},{after}\n")


def run(binary, trace, out, *flags):
    p = subprocess.run([binary, "--trace", trace, "--out", out, *flags],
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stderr


def read_out(path):
    """The header as a dict and the rows as (start_ns, done_ns) by id."""
    head, rows = {}, []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# "):
                k, _, v = line[2:].partition(" ")
                head[k] = v
            elif line and line != "id,start_ns,done_ns":
                i, s, d = (int(x) for x in line.split(","))
                assert i == len(rows), line
                rows.append((s, d))
    return head, rows


# --- link math -------------------------------------------------------------

def path(src, dst, net=NET):
    """The links a packet from src to dst crosses: (rate bps, delay ns) each,
    the delay being what the link's sender end charges (see README)."""
    up = (net["link_bps"], net["prop_ns"] + net["host_ns"])
    down = (net["link_bps"], net["prop_ns"] + net["switch_ns"] + net["recv_ns"])
    hop = (net["uplink_bps"], net["prop_ns"] + net["switch_ns"])
    if src // net["hosts_per_rack"] == dst // net["hosts_per_rack"]:
        return [up, down]
    return [up, hop, hop, down]


def frames(size, seg):
    """Wire bytes of each frame of a message of size bytes."""
    n = (size + seg - 1) // seg
    return [min(seg, size - i * seg) + HEADERS + PPP for i in range(n)]


def link_math(links, wire):
    """When the last bit of the last frame reaches the receiver, all frames
    queued at the sender at time 0 (no window), store-and-forward at every
    link: frame j starts on link i when it has arrived there and frame j-1
    has left."""
    ready = [0.0] * len(wire)
    for rate, delay in links:
        free = 0.0
        for j, b in enumerate(wire):
            start = max(ready[j], free)
            free = start + b * 8 * 1e9 / rate
            ready[j] = free + delay
    return ready[-1]


def test_idle(binary, tmp):
    """Single messages far apart on an idle fabric against the link math."""
    seg = NET["mtu"] - HEADERS
    sizes = [1, seg, 100_000, 1_000_000]
    msgs, at = [], 0
    for i, size in enumerate(sizes):
        for cross in (False, True):
            src = 2 * i + (8 if cross else 0)
            dst = src + (NET["hosts_per_rack"] if cross else 1)
            msgs.append((at, src, dst, size, -1))
            at += 3_000_000
    trace, out = os.path.join(tmp, "idle.csv"), os.path.join(tmp, "idle.out")
    write_trace(trace, msgs)
    for transport in ("dctcp", "tcp"):
        rc, err = run(binary, trace, out, "--transport", transport)
        check(rc == 0, f"idle {transport}: exit 0 (got {rc}) {err.strip()}")
        if rc != 0:
            continue
        head, rows = read_out(out)
        check(head.get("segment_bytes") == str(seg), f"idle {transport}: segment_bytes {seg}")
        for (at, src, dst, size, _), (start, done) in zip(msgs, rows):
            links = path(src, dst)
            exp = link_math(links, frames(size, seg))
            # a round trip: a full frame there, its ACK back
            rtt = link_math(links, [seg + HEADERS + PPP]) + link_math(path(dst, src), [HEADERS + PPP])
            got = done - start
            where = "cross-rack" if len(links) == 4 else "in-rack"
            name = f"idle {transport} {size} B {where}: expected {exp:.0f} ns"
            if size <= seg:
                check(start == at and abs(got - exp) <= 0.02 * exp,
                      f"{name} within 2%, got {got} ns")
            else:
                # The window: init cwnd 10 x 1448 B already exceeds these
                # paths' bandwidth-delay products, so slow start costs little;
                # allow 2 round trips on top.
                check(start == at and exp <= got <= exp + 2 * rtt,
                      f"{name} (rtt {rtt:.0f} ns) <= got {got} ns <= expected + 2 rtt")


def test_chain(binary, tmp):
    """a->b->c->d with after: each starts when the one before is delivered,
    or at its at_ns if that is later."""
    msgs = [(0, 0, 17, 100_000, -1),          # a -> b
            (0, 17, 40, 100_000, 0),          # b -> c, after the first
            (5_000_000, 40, 3, 1000, 1)]      # c -> d, after the second, but not before 5 ms
    trace, out = os.path.join(tmp, "chain.csv"), os.path.join(tmp, "chain.out")
    write_trace(trace, msgs)
    rc, err = run(binary, trace, out)
    check(rc == 0, f"chain: exit 0 (got {rc}) {err.strip()}")
    if rc != 0:
        return
    _, rows = read_out(out)
    (s0, d0), (s1, d1), (s2, d2) = rows
    check(s0 == 0 and d0 > s0, f"chain: first starts at 0 (got {s0}), done at {d0}")
    check(s1 == d0 and d1 > s1, f"chain: second starts at the first's delivery {d0} (got {s1})")
    check(d1 < 5_000_000 and s2 == 5_000_000 and d2 > s2,
          f"chain: third starts at its at_ns 5000000, later than {d1} (got {s2})")


def test_badinput(binary, tmp):
    """Bad traces and flags are refused with exit 2 and a message naming the problem."""
    good = [f"# {k} {v}" for k, v in NET.items()]
    cases = [
        ("unknown header key", good + ["# bogus 1"], [(0, 0, 1, 10, -1)], [], "unknown header key bogus"),
        ("missing header key", good[:-1], [(0, 0, 1, 10, -1)], [], "header key mtu is missing"),
        ("after not earlier", good, [(0, 0, 1, 10, -1), (0, 1, 2, 10, 1)], [], "line 14: after 1"),
        ("host out of range", good, [(0, 0, 144, 10, -1)], [], "line 13: host out of range"),
        ("bad flag value", good, [(0, 0, 1, 10, -1)], ["--buffer-packets", "x"], "--buffer-packets"),
        ("unknown flag", good, [(0, 0, 1, 10, -1)], ["--bogus", "1"], "unknown flag --bogus"),
        ("bad host qdisc", good, [(0, 0, 1, 10, -1)], ["--host-qdisc", "red"], "--host-qdisc must be fq-codel or fifo"),
    ]
    for name, header, msgs, flags, want in cases:
        trace, out = os.path.join(tmp, "bad.csv"), os.path.join(tmp, "bad.out")
        write_trace(trace, msgs, header=header)
        rc, err = run(binary, trace, out, *flags)
        check(rc == 2 and want in err, f"bad input, {name}: exit 2 naming '{want}' (got {rc}: {err.strip()})")


def test_incast(binary, tmp):
    """16 senders, 1 MB each, to one host at once."""
    senders = [16 + 8 * i for i in range(16)]  # racks 1..8, two each
    msgs = [(0, s, 0, 1_000_000, -1) for s in senders]
    trace, out = os.path.join(tmp, "incast.csv"), os.path.join(tmp, "incast.out")
    write_trace(trace, msgs)
    for transport, flags, want in (("dctcp", [], "marks"), ("tcp", ["--buffer-packets", "20"], "drops")):
        rc, err = run(binary, trace, out, "--transport", transport, *flags)
        check(rc == 0, f"incast {transport}: exit 0 (got {rc}) {err.strip()}")
        if rc != 0:
            continue
        head, rows = read_out(out)
        delivered = sum(1 for _, d in rows if d >= 0)
        last = max(d for _, d in rows)
        check(delivered == 16, f"incast {transport} {' '.join(flags)}: 16 of 16 delivered (got {delivered}), "
                               f"last at {last} ns")
        check(int(head[want]) > 0, f"incast {transport}: {want} > 0 (got {head[want]}; "
                                   f"drops {head['drops']} marks {head['marks']} "
                                   f"retransmits {head['retransmits']})")
        if transport == "tcp":
            check(int(head["retransmits"]) > 0, f"incast tcp: retransmits > 0 (got {head['retransmits']})")


def test_paper(binary, tmp):
    """Alizadeh et al., SIGCOMM 2010: with K = 65 at 10 Gb/s, two long DCTCP
    flows into one port keep its queue near K at full throughput, while TCP
    fills the buffer. Two 20 MB flows from hosts 1 and 2 to host 0 (one rack),
    the ToR's port to host 0 sampled every microsecond."""
    size = 20_000_000
    msgs = [(0, 1, 0, size, -1), (0, 2, 0, size, -1)]
    trace, out = os.path.join(tmp, "paper.csv"), os.path.join(tmp, "paper.out")
    write_trace(trace, msgs)
    got = {}
    for transport in ("dctcp", "tcp"):
        rc, err = run(binary, trace, out, "--transport", transport, "--queue-host", "0")
        check(rc == 0, f"paper {transport}: exit 0 (got {rc}) {err.strip()}")
        if rc != 0:
            return
        head, rows = read_out(out)
        span = max(d for _, d in rows) - min(s for s, _ in rows)
        gbps = 2 * size * 8 / span
        got[transport] = (float(head["queue_mean_packets"]), int(head["queue_max_packets"]), gbps)
        print(f"     paper {transport}: queue mean {got[transport][0]:.1f} packets, max {got[transport][1]}, "
              f"goodput {gbps:.2f} Gb/s, drops {head['drops']}, marks {head['marks']}")
    if len(got) < 2:
        return
    # Goodput at most 10 x 1448/1502 = 9.64 Gb/s.
    check(got["dctcp"][0] < 100 and got["dctcp"][2] >= 9.0,
          f"paper dctcp: mean queue < 100 packets (got {got['dctcp'][0]:.1f}), goodput >= 9 Gb/s "
          f"(got {got['dctcp'][2]:.2f})")
    check(got["tcp"][0] > 2 * got["dctcp"][0] and got["tcp"][2] >= 9.0,
          f"paper tcp: mean queue > twice dctcp's (got {got['tcp'][0]:.1f}), goodput >= 9 Gb/s "
          f"(got {got['tcp'][2]:.2f})")


def test_load(binary, tmp):
    """Poisson traffic at 90% load on 24 hosts (3 racks of 8, 2 cores), 4000
    messages of W3 and W4 sizes: every message delivered. ns-3's own DCTCP
    let a window fall below one segment here and the connection never sent
    again (LinuxDctcp in src/tcpcluster.cc)."""
    trace, out = os.path.join(tmp, "load.csv"), os.path.join(tmp, "load.out")
    with open(trace, "w") as f:
        subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gentrace.py"),
                        "--racks", "3", "--hosts-per-rack", "8", "--cores", "2", "--messages", "4000",
                        "--load", "0.9", "--sizes", "w3:3,w4:1", "--seed", "1"],
                       stdout=f, stderr=subprocess.DEVNULL, check=True)
    rc, err = run(binary, trace, out, "--transport", "dctcp")
    check(rc == 0, f"load dctcp: exit 0 (got {rc})")
    if rc != 0:
        return
    head, rows = read_out(out)
    delivered = sum(1 for _, d in rows if d >= 0)
    check(delivered == 4000 and head["host_drops"] == "0",
          f"load dctcp: 4000 of 4000 delivered (got {delivered}; drops {head['drops']}, "
          f"marks {head['marks']}, retransmits {head['retransmits']}, host_drops {head['host_drops']}) "
          f"{err.strip()}")


def test_hostqueue(binary, tmp):
    """A host's short message to one peer while its bulk message to another
    fills its own NIC queue (slow start outgrows the path at the first
    10 Gb/s link, the host's): in one FIFO the short message waits behind
    that queue; fq-codel, a queue per connection with sparse ones first,
    sends it at once."""
    msgs = [(0, 0, 1, 8_000_000, -1), (1_000_000, 0, 2, 100, -1)]
    trace = os.path.join(tmp, "hostq.csv")
    write_trace(trace, msgs)
    took = {}
    for qdisc in ("fifo", "fq-codel"):
        out = os.path.join(tmp, f"hostq-{qdisc}.out")
        rc, err = run(binary, trace, out, "--transport", "tcp", "--host-qdisc", qdisc)
        check(rc == 0, f"host queue {qdisc}: exit 0 (got {rc}) {err.strip()}")
        if rc != 0:
            return
        head, rows = read_out(out)
        took[qdisc] = rows[1][1] - rows[1][0]
        print(f"     host queue {qdisc}: the 100 B message took {took[qdisc]} ns; the host's queue "
              f"held up to {head['host_queue_max_packets']} packets, one waited {head['host_queue_max_wait_us']} us")
    check(took["fq-codel"] < 10_000 and took["fifo"] > 10 * took["fq-codel"],
          f"host queue: the short message takes < 10 us with fq-codel (got {took['fq-codel']} ns) "
          f"and over 10 times that behind the bulk in a FIFO (got {took['fifo']} ns)")


TESTS = {"idle": test_idle, "chain": test_chain, "badinput": test_badinput,
         "incast": test_incast, "paper": test_paper, "load": test_load,
         "hostqueue": test_hostqueue}


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: check.py BINARY [" + " ".join(TESTS) + "]")
    binary = os.path.abspath(sys.argv[1])
    names = sys.argv[2:] or list(TESTS)
    with tempfile.TemporaryDirectory(prefix="homa-ns3-tcp-") as tmp:
        for name in names:
            TESTS[name](binary, tmp)
    print(f"{len(failures)} failed" if failures else "all passed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
