// homa-ns3-tcp: perf cluster's message trace replayed over TCP in ns-3.
//
// perf cluster (the Go side) simulates Homa on a two-level fabric and can
// write the messages it offered as a trace: when each message was offered,
// between which hosts, how big, and which earlier message it waits for. This
// program builds the same fabric in ns-3 (the same link rates and every
// delay the Go simulation charges), opens one TCP connection per ordered
// pair of hosts that the trace uses, hands each message to its pair's
// connection when it is due, and writes when each one started and when its
// receiver had all of its bytes. The transport is TCP Cubic, as Linux runs by
// default, or DCTCP with ECN marking at the switches.
//
// Reading order: the settings and the trace (what goes in), the fabric
// (DirectedChannel, FabricRouting, buildFabric), the replay (Replay: the
// connections and the messages on them), the output. README.md says how to
// build and run it, every setting and what it leaves out.

#include "ns3/boolean.h"
#include "ns3/config.h"
#include "ns3/data-rate.h"
#include "ns3/double.h"
#include "ns3/drop-tail-queue.h"
#include "ns3/inet-socket-address.h"
#include "ns3/internet-stack-helper.h"
#include "ns3/ipv4-interface-address.h"
#include "ns3/ipv4-route.h"
#include "ns3/ipv4-routing-helper.h"
#include "ns3/ipv4-routing-protocol.h"
#include "ns3/ipv4.h"
#include "ns3/mac48-address.h"
#include "ns3/net-device-queue-interface.h"
#include "ns3/node.h"
#include "ns3/point-to-point-channel.h"
#include "ns3/point-to-point-net-device.h"
#include "ns3/queue-disc.h"
#include "ns3/queue-size.h"
#include "ns3/simulator.h"
#include "ns3/socket.h"
#include "ns3/string.h"
#include "ns3/tcp-header.h"
#include "ns3/tcp-socket-base.h"
#include "ns3/tcp-dctcp.h"
#include "ns3/tcp-socket-factory.h"
#include "ns3/tcp-tx-buffer.h"
#include "ns3/tcp-rx-buffer.h"
#include "ns3/traffic-control-helper.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

using namespace ns3;

namespace
{

// ---------------------------------------------------------------------------
// Settings: the flags, each with its default. A value of -1 on a derived
// setting means "worked out from the trace" (see derive()).

struct Settings
{
    std::string trace;               // the trace file (required)
    std::string out = "-";           // where the results go; "-" is stdout
    std::string transport = "dctcp"; // "tcp" (Cubic, no ECN) or "dctcp"
    int64_t bufferPackets = 400;     // switch egress queue disc limit, packets per port
    int64_t markPackets = 65;        // DCTCP's K at a 10 Gb/s port, packets; scaled with rate
    int64_t markPacketsUplink = -1;  // K on the 40 Gb/s ToR-core ports; -1: scaled
    int64_t segmentBytes = -1;       // TCP payload per segment; -1: mtu - 52 (IP 20, TCP 20, timestamps 12)
    int64_t initCwnd = 10;           // initial congestion window, segments
    int64_t minRtoUs = 1000;         // TCP minimum retransmission timeout, microseconds
    int64_t delAckCount = 1;         // segments received before an ACK is sent
    int64_t delAckTimeoutUs = 40000; // delayed ACK timer when delAckCount > 1, microseconds
    int64_t sndbufBytes = 4 << 20;   // socket send buffer; messages are written as it drains
    int64_t rcvbufBytes = 4 << 20;   // socket receive buffer (the advertised window's ceiling)
    int64_t hostQueuePackets = 1000000; // host NIC queue disc limit: more than a run fills
    std::string hostQdisc = "fq-codel"; // host NIC queue disc: fq-codel (Linux's default) or fifo
    int64_t warmupNs = 1000000;      // connections open during this much time before trace time 0
    int64_t stopNs = -1;             // trace time at which the run stops; -1: 10 x last at_ns + 1 s
    int64_t queueHost = -1;          // sample the ToR's egress queue toward this host; -1: none
    int64_t queueSampleNs = 1000;    // how often the sampled queue is read, ns
};

// A flag as --help lists it and the parser finds it: exactly one of text or
// num is set.
struct Flag
{
    const char* name;
    std::string* text;
    int64_t* num;
    int64_t min; // the smallest value a numeric flag accepts
    const char* help;
    int64_t max = INT32_MAX; // the largest (ns-3 takes most of them as 32-bit)
};

std::vector<Flag>
flags(Settings& s)
{
    return {
        {"trace", &s.trace, nullptr, 0, "the trace written by perf cluster (required)"},
        {"out", &s.out, nullptr, 0, "the results file; - is stdout (default -)"},
        {"transport", &s.transport, nullptr, 0, "tcp (TCP Cubic, no ECN) or dctcp (default dctcp)"},
        {"buffer-packets", nullptr, &s.bufferPackets, 1,
         "switch egress queue limit per port, packets (default 400)"},
        {"mark-packets", nullptr, &s.markPackets, 1,
         "dctcp: ECN marking threshold K at a 10 Gb/s port, packets, scaled with the port's "
         "rate (default 65)"},
        {"mark-packets-uplink", nullptr, &s.markPacketsUplink, 1,
         "dctcp: K on the ToR-core ports (default: --mark-packets scaled to uplink_bps)"},
        {"segment-bytes", nullptr, &s.segmentBytes, 1,
         "TCP segment payload (default: mtu - 52: IP 20, TCP 20, timestamp option 12)"},
        {"init-cwnd", nullptr, &s.initCwnd, 1, "initial congestion window, segments (default 10)"},
        {"min-rto-us", nullptr, &s.minRtoUs, 1, "minimum retransmission timeout, us (default 1000)"},
        {"del-ack-count", nullptr, &s.delAckCount, 1,
         "segments received per ACK sent (default 1: every segment is ACKed)"},
        {"del-ack-timeout-us", nullptr, &s.delAckTimeoutUs, 1,
         "delayed ACK timer when --del-ack-count > 1, us (default 40000, Linux's minimum)"},
        {"sndbuf-bytes", nullptr, &s.sndbufBytes, 1, "socket send buffer, bytes (default 4194304)"},
        {"rcvbuf-bytes", nullptr, &s.rcvbufBytes, 1,
         "socket receive buffer, bytes (default 4194304)"},
        {"host-queue-packets", nullptr, &s.hostQueuePackets, 1,
         "host NIC queue limit, packets (default 1000000: more than a run fills)"},
        {"host-qdisc", &s.hostQdisc, nullptr, 0,
         "host NIC queue disc: fq-codel (a queue per connection, sparse ones such as ACKs and "
         "short messages first, CoDel at 5 ms/100 ms with ECN: Linux's default qdisc) or fifo "
         "(one FIFO, as pfifo_fast) (default fq-codel)"},
        {"warmup-ns", nullptr, &s.warmupNs, 1,
         "time before trace time 0 in which the connections open, ns (default 1000000)",
         INT64_MAX / 4},
        {"stop-ns", nullptr, &s.stopNs, 1,
         "trace time at which the run stops (default 10 x the last at_ns + 1 s); it ends "
         "earlier when every message is delivered",
         INT64_MAX / 4},
        {"queue-host", nullptr, &s.queueHost, 0,
         "sample the ToR's egress queue toward this host; its mean and max are reported "
         "(default: none)"},
        {"queue-sample-ns", nullptr, &s.queueSampleNs, 1,
         "how often the sampled queue is read, ns (default 1000)"},
    };
}

// Thrown for bad input or flags: main prints it and exits 2.
struct BadInput : std::runtime_error
{
    using std::runtime_error::runtime_error;
};

bool
parseInt(const std::string& text, int64_t& v)
{
    const char* end = text.data() + text.size();
    auto [p, ec] = std::from_chars(text.data(), end, v);
    return ec == std::errc() && p == end && !text.empty();
}

void
usage(std::ostream& o)
{
    Settings s;
    o << "usage: homa-ns3-tcp --trace FILE [--out FILE] [flags]\n"
         "Replays perf cluster's message trace over TCP Cubic or DCTCP in ns-3 on the same\n"
         "two-level fabric; writes each message's start and delivery time.\n\nflags:\n";
    for (const Flag& f : flags(s))
    {
        o << "  --" << f.name << (f.num ? " N" : " S") << "\n      " << f.help << "\n";
    }
    o << "  --help\n      this list\n";
}

// parseFlags fills s from argv (--name value or --name=value). It returns
// false when --help was asked for.
bool
parseFlags(int argc, char** argv, Settings& s)
{
    std::vector<Flag> fs = flags(s);
    for (int i = 1; i < argc; i++)
    {
        std::string arg = argv[i];
        if (arg == "--help" || arg == "-h")
        {
            return false;
        }
        if (arg.rfind("--", 0) != 0)
        {
            throw BadInput("unexpected argument " + arg + " (flags are --name value)");
        }
        std::string name = arg.substr(2), value;
        bool inline_value = false;
        if (size_t eq = name.find('='); eq != std::string::npos)
        {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
            inline_value = true;
        }
        auto f = std::find_if(fs.begin(), fs.end(), [&](const Flag& x) { return name == x.name; });
        if (f == fs.end())
        {
            throw BadInput("unknown flag --" + name + " (see --help)");
        }
        if (!inline_value)
        {
            if (i + 1 >= argc)
            {
                throw BadInput("flag --" + name + " needs a value");
            }
            value = argv[++i];
        }
        if (f->text)
        {
            *f->text = value;
            continue;
        }
        int64_t v;
        if (!parseInt(value, v) || v < f->min || v > f->max)
        {
            throw BadInput("flag --" + name + ": " + value + " is not an integer in " +
                           std::to_string(f->min) + ".." + std::to_string(f->max));
        }
        *f->num = v;
    }
    if (s.trace.empty())
    {
        throw BadInput("--trace FILE is required (see --help)");
    }
    if (s.hostQdisc != "fq-codel" && s.hostQdisc != "fifo")
    {
        throw BadInput("--host-qdisc must be fq-codel or fifo, not " + s.hostQdisc);
    }
    if (s.transport != "tcp" && s.transport != "dctcp")
    {
        throw BadInput("--transport must be tcp or dctcp, not " + s.transport);
    }
    return true;
}

// ---------------------------------------------------------------------------
// The trace (its format is in README.md).

// Net is the fabric the trace's header describes.
struct Net
{
    int64_t racks, hostsPerRack, cores; // counts
    int64_t linkBps, uplinkBps;         // host-ToR and ToR-core link rates, bits/s
    int64_t propNs;                     // propagation, every link, each direction
    int64_t switchNs;                   // a switch's forwarding time, charged on its egress link
    int64_t hostNs;                     // the sender's software and NIC time, host->ToR
    int64_t recvNs;                     // the receiver's software time, ToR->host
    int64_t mtu;                        // IP packet bytes, every link

    int64_t hosts() const { return racks * hostsPerRack; }
};

// Msg is one line of the trace and what became of it.
struct Msg
{
    int64_t atNs;      // when it is offered, trace time
    int32_t src, dst;  // hosts
    int64_t size;      // bytes
    int32_t after;     // the message whose delivery it waits for, or -1
    int32_t conn;      // its connection (index into Replay::conns)
    int64_t startNs;   // when it was handed to its connection, or -1
    int64_t doneNs;    // when its receiver had all its bytes, or -1
};

struct Trace
{
    Net net;
    std::vector<Msg> msgs;
};

const int64_t kMaxAtNs = int64_t(1e17); // a few years: 10 x it still fits in the clock
const char* const kTraceMagic = "# homa-dpdk cluster trace 1";
const char* const kTraceColumns = "id,at_ns,src,dst,size,after";

// splitCsv cuts a line at commas.
std::vector<std::string>
splitCsv(const std::string& line)
{
    std::vector<std::string> out;
    size_t from = 0;
    for (;;)
    {
        size_t comma = line.find(',', from);
        out.push_back(line.substr(from, comma - from));
        if (comma == std::string::npos)
        {
            return out;
        }
        from = comma + 1;
    }
}

void
checkNet(const Net& n)
{
    auto need = [](bool ok, const std::string& what) {
        if (!ok)
        {
            throw BadInput("trace header: " + what);
        }
    };
    // The fabric's addresses (10.rack.host.1, 11.rack.core.x) hold a byte each.
    need(n.racks >= 1 && n.racks <= 256, "racks must be 1..256");
    need(n.hostsPerRack >= 1 && n.hostsPerRack <= 256, "hosts_per_rack must be 1..256");
    need(n.cores >= 1 && n.cores <= 256, "cores must be 1..256");
    need(n.hosts() >= 2, "the fabric needs at least 2 hosts");
    need(n.linkBps > 0 && n.uplinkBps > 0, "link_bps and uplink_bps must be > 0");
    need(n.propNs >= 0 && n.switchNs >= 0 && n.hostNs >= 0 && n.recvNs >= 0,
         "delays must be >= 0");
    need(n.mtu >= 128 && n.mtu <= 65535, "mtu must be 128..65535");
}

// readTrace parses the file; every error names its line.
Trace
readTrace(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
    {
        throw BadInput("trace " + path + ": cannot open");
    }
    Trace t;
    std::unordered_map<std::string, int64_t*> keys = {
        {"racks", &t.net.racks},          {"hosts_per_rack", &t.net.hostsPerRack},
        {"cores", &t.net.cores},          {"link_bps", &t.net.linkBps},
        {"uplink_bps", &t.net.uplinkBps}, {"prop_ns", &t.net.propNs},
        {"switch_ns", &t.net.switchNs},   {"host_ns", &t.net.hostNs},
        {"recv_ns", &t.net.recvNs},       {"mtu", &t.net.mtu},
    };
    std::unordered_map<std::string, bool> seen;
    std::string line;
    int64_t lineNo = 0;
    auto bad = [&](const std::string& why) {
        return BadInput("trace " + path + " line " + std::to_string(lineNo) + ": " + why);
    };

    // The header: the magic line, then "# key value" lines, then the columns.
    bool columns = false;
    while (!columns && std::getline(in, line))
    {
        lineNo++;
        if (lineNo == 1)
        {
            if (line != kTraceMagic)
            {
                throw bad(std::string("not a trace: the first line must be \"") + kTraceMagic +
                          "\"");
            }
            continue;
        }
        if (line == kTraceColumns)
        {
            columns = true;
            break;
        }
        std::istringstream kv(line);
        std::string hash, key, value, extra;
        if (!(kv >> hash >> key >> value) || hash != "#" || (kv >> extra))
        {
            throw bad("expected \"# key value\" or the column line \"" +
                      std::string(kTraceColumns) + "\"");
        }
        auto k = keys.find(key);
        if (k == keys.end())
        {
            throw bad("unknown header key " + key);
        }
        if (seen[key])
        {
            throw bad("header key " + key + " given twice");
        }
        if (!parseInt(value, *k->second))
        {
            throw bad("header key " + key + ": " + value + " is not an integer");
        }
        seen[key] = true;
    }
    if (lineNo == 0)
    {
        throw BadInput("trace " + path + ": empty");
    }
    if (!columns)
    {
        throw BadInput("trace " + path + ": no column line \"" + std::string(kTraceColumns) +
                       "\"");
    }
    for (const auto& k : keys)
    {
        if (!seen[k.first])
        {
            throw BadInput("trace " + path + ": header key " + k.first + " is missing");
        }
    }
    checkNet(t.net);

    // The messages.
    const int64_t hosts = t.net.hosts();
    while (std::getline(in, line))
    {
        lineNo++;
        std::vector<std::string> f = splitCsv(line);
        if (f.size() != 6)
        {
            throw bad("expected 6 fields (" + std::string(kTraceColumns) + "), got " +
                      std::to_string(f.size()));
        }
        int64_t v[6];
        static const char* const names[6] = {"id", "at_ns", "src", "dst", "size", "after"};
        for (int i = 0; i < 6; i++)
        {
            if (!parseInt(f[i], v[i]))
            {
                throw bad(std::string(names[i]) + ": " + f[i] + " is not an integer");
            }
        }
        const int64_t id = int64_t(t.msgs.size());
        if (v[0] != id)
        {
            throw bad("id " + f[0] + " out of order: expected " + std::to_string(id));
        }
        if (v[1] < 0 || v[1] > kMaxAtNs)
        {
            throw bad("at_ns must be 0.." + std::to_string(kMaxAtNs));
        }
        if (v[2] < 0 || v[2] >= hosts || v[3] < 0 || v[3] >= hosts)
        {
            throw bad("host out of range: src " + f[2] + ", dst " + f[3] + " (hosts 0.." +
                      std::to_string(hosts - 1) + ")");
        }
        if (v[2] == v[3])
        {
            throw bad("src and dst are the same host");
        }
        if (v[4] < 1 || v[4] > (int64_t(1) << 40))
        {
            throw bad("size must be 1..2^40 bytes");
        }
        if (v[5] < -1 || v[5] >= id)
        {
            throw bad("after " + f[5] + " is not -1 or an earlier id");
        }
        if (id >= INT32_MAX)
        {
            throw bad("too many messages");
        }
        t.msgs.push_back(Msg{v[1], int32_t(v[2]), int32_t(v[3]), v[4], int32_t(v[5]), -1, -1, -1});
    }
    return t;
}

// derive fills the settings that default to something worked out from the trace.
void
derive(Settings& s, const Trace& t)
{
    if (s.segmentBytes < 0)
    {
        s.segmentBytes = t.net.mtu - 52;
    }
    if (s.segmentBytes > t.net.mtu - 52)
    {
        throw BadInput("--segment-bytes " + std::to_string(s.segmentBytes) +
                       " does not fit the trace's mtu " + std::to_string(t.net.mtu) +
                       " less 52 bytes of headers");
    }
    if (s.markPacketsUplink < 0)
    {
        s.markPacketsUplink = std::max<int64_t>(
            1,
            int64_t(double(s.markPackets) * double(t.net.uplinkBps) / 1e10 + 0.5));
    }
    if (s.stopNs < 0)
    {
        int64_t last = 0;
        for (const Msg& m : t.msgs)
        {
            last = std::max(last, m.atNs);
        }
        s.stopNs = 10 * last + 1000000000;
    }
    if (s.queueHost >= t.net.hosts())
    {
        throw BadInput("--queue-host " + std::to_string(s.queueHost) + " is not a host (0.." +
                       std::to_string(t.net.hosts() - 1) + ")");
    }
}

// markOnLink is K on the host-facing (ToR->host) ports: --mark-packets scaled
// from 10 Gb/s to link_bps.
int64_t
markOnLink(const Settings& s, const Net& n)
{
    return std::max<int64_t>(1, int64_t(double(s.markPackets) * double(n.linkBps) / 1e10 + 0.5));
}

// ---------------------------------------------------------------------------
// The fabric.

// DirectedChannel is a point-to-point link whose two directions have their
// own delay: ns-3's PointToPointChannel has one delay for both, and the Go
// simulation charges the sender's time on the way up (host->ToR) and the
// receiver's on the way down (ToR->host).
class DirectedChannel : public PointToPointChannel
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("homa::DirectedChannel")
                                .SetParent<PointToPointChannel>()
                                .SetGroupName("homa")
                                .AddConstructor<DirectedChannel>();
        return tid;
    }

    // SetDelays sets the delay of what the first attached device sends
    // (fromFirst) and of what the second sends (fromSecond).
    void SetDelays(Time fromFirst, Time fromSecond)
    {
        m_delay[0] = fromFirst;
        m_delay[1] = fromSecond;
    }

    // TransmitStart replaces the base class's: the same delivery (the last
    // bit arrives txTime + delay from now), the direction's own delay, no
    // animation trace.
    bool TransmitStart(Ptr<const Packet> p, Ptr<PointToPointNetDevice> src, Time txTime) override
    {
        if (!m_dst[0])
        {
            for (uint32_t w = 0; w < 2; w++)
            {
                m_src[w] = PeekPointer(GetSource(w));
                m_dst[w] = PeekPointer(GetDestination(w));
                m_dstNode[w] = m_dst[w]->GetNode()->GetId();
            }
        }
        const uint32_t w = PeekPointer(src) == m_src[0] ? 0 : 1;
        Simulator::ScheduleWithContext(m_dstNode[w],
                                       txTime + m_delay[w],
                                       &PointToPointNetDevice::Receive,
                                       m_dst[w],
                                       p->Copy());
        return true;
    }

  private:
    Time m_delay[2];                        // per direction: what device w sends
    PointToPointNetDevice* m_src[2]{};      // the sending device of direction w (the channel holds them)
    PointToPointNetDevice* m_dst[2]{};      // the receiving device of direction w
    uint32_t m_dstNode[2]{};                // the receiving node's id: the event's context
};

// Addresses: host h of rack r is 10.r.h.1 (its ToR's side of the link
// 10.r.h.2); the link from ToR r to core c is 11.r.c.0/24 (ToR .1, core .2).
Ipv4Address
hostAddress(const Net& n, int64_t host)
{
    return Ipv4Address(uint32_t((10u << 24) | (uint32_t(host / n.hostsPerRack) << 16) |
                                (uint32_t(host % n.hostsPerRack) << 8) | 1u));
}

// FabricRouting routes by arithmetic on those addresses: hosts send
// everything up their one link; a ToR sends a packet for its own rack down
// to the host and any other up to the core that a hash of the packet's
// 5-tuple picks (per-flow ECMP, as switches do); a core sends down to the
// destination's rack. ns-3's global routing offers only per-packet random
// ECMP, which reorders a TCP flow's segments.
class FabricRouting : public Ipv4RoutingProtocol
{
  public:
    enum Role
    {
        HOST,
        TOR,
        CORE
    };

    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("homa::FabricRouting")
                                .SetParent<Ipv4RoutingProtocol>()
                                .SetGroupName("homa")
                                .AddConstructor<FabricRouting>();
        return tid;
    }

    // Configure says what this node is: its role, its rack (ToR, host) and
    // the fabric's shape.
    void Configure(Role role, int64_t rack, const Net& net)
    {
        m_role = role;
        m_rack = uint32_t(rack);
        m_hostsPerRack = uint32_t(net.hostsPerRack);
        m_racks = uint32_t(net.racks);
        m_cores = uint32_t(net.cores);
    }

    // SetPort records that this node's interface iface on device dev leads
    // to the port'th neighbour of its kind: host h of a ToR's rack (down),
    // core c (a ToR's up), rack r (a core's), or a host's one link (0).
    void SetPort(bool down, uint32_t port, Ptr<NetDevice> dev, Ipv4Address self)
    {
        Ptr<Ipv4Route> r = Create<Ipv4Route>();
        r->SetSource(self);
        r->SetGateway(Ipv4Address("0.0.0.0")); // point-to-point: the peer is the only one there
        r->SetOutputDevice(dev);
        std::vector<Ptr<Ipv4Route>>& v = down ? m_down : m_up;
        if (v.size() <= port)
        {
            v.resize(port + 1);
        }
        v[port] = r;
        if (m_role == HOST)
        {
            m_self = self;
        }
    }

    Ptr<Ipv4Route> RouteOutput(Ptr<Packet>,
                               const Ipv4Header&,
                               Ptr<NetDevice>,
                               Socket::SocketErrno& sockerr) override
    {
        // Only hosts send packets of their own.
        if (m_role != HOST || m_up.empty())
        {
            sockerr = Socket::ERROR_NOROUTETOHOST;
            return nullptr;
        }
        sockerr = Socket::ERROR_NOTERROR;
        return m_up[0];
    }

    bool RouteInput(Ptr<const Packet> p,
                    const Ipv4Header& header,
                    Ptr<const NetDevice> idev,
                    UnicastForwardCallback ucb,
                    MulticastForwardCallback,
                    LocalDeliverCallback lcb,
                    ErrorCallback) override
    {
        const uint32_t dst = header.GetDestination().Get();
        if (m_role == HOST)
        {
            if (dst != m_self.Get())
            {
                return false;
            }
            lcb(p, header, m_ipv4->GetInterfaceForDevice(idev));
            return true;
        }
        const uint32_t rack = (dst >> 16) & 0xff, host = (dst >> 8) & 0xff;
        if ((dst >> 24) != 10 || (dst & 0xff) != 1 || rack >= m_racks || host >= m_hostsPerRack)
        {
            return false; // not a host's address: nothing here is for the switches
        }
        Ptr<Ipv4Route> out;
        if (m_role == CORE)
        {
            out = m_down[rack];
        }
        else if (rack == m_rack)
        {
            out = m_down[host];
        }
        else
        {
            out = m_up[flowHash(p, header) % m_cores];
        }
        ucb(out, p, header);
        return true;
    }

    void NotifyInterfaceUp(uint32_t) override {}
    void NotifyInterfaceDown(uint32_t) override {}
    void NotifyAddAddress(uint32_t, Ipv4InterfaceAddress) override {}
    void NotifyRemoveAddress(uint32_t, Ipv4InterfaceAddress) override {}
    void SetIpv4(Ptr<Ipv4> ipv4) override { m_ipv4 = ipv4; }

    void PrintRoutingTable(Ptr<OutputStreamWrapper> stream, Time::Unit) const override
    {
        *stream->GetStream() << "fabric routing: role " << m_role << " rack " << m_rack << "\n";
    }

  private:
    // flowHash mixes the 5-tuple (addresses, protocol, the transport's two
    // ports: the first 4 bytes after the IP header) into 64 bits.
    static uint64_t flowHash(Ptr<const Packet> p, const Ipv4Header& h)
    {
        uint8_t ports[4] = {0, 0, 0, 0};
        if (p->GetSize() >= 4)
        {
            p->CopyData(ports, 4);
        }
        uint64_t x = (uint64_t(h.GetSource().Get()) << 32) | h.GetDestination().Get();
        x ^= (uint64_t(h.GetProtocol()) << 32) ^ (uint64_t(ports[0]) << 24) ^
             (uint64_t(ports[1]) << 16) ^ (uint64_t(ports[2]) << 8) ^ ports[3];
        // splitmix64's finalizer
        x += 0x9e3779b97f4a7c15ull;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
        return x ^ (x >> 31);
    }

    Role m_role = HOST;
    uint32_t m_rack = 0, m_hostsPerRack = 0, m_racks = 0, m_cores = 0;
    Ipv4Address m_self;                // a host's address
    std::vector<Ptr<Ipv4Route>> m_down; // ToR: per host in the rack; core: per rack
    std::vector<Ptr<Ipv4Route>> m_up;   // ToR: per core; host: its one link
    Ptr<Ipv4> m_ipv4;
};

// FabricRoutingHelper gives every node a FabricRouting; buildFabric
// configures each once the links exist.
class FabricRoutingHelper : public Ipv4RoutingHelper
{
  public:
    FabricRoutingHelper* Copy() const override { return new FabricRoutingHelper(*this); }

    Ptr<Ipv4RoutingProtocol> Create(Ptr<Node>) const override
    {
        return CreateObject<FabricRouting>();
    }
};

// HostQueues is what the hosts' NIC queue discs held: a host's ACKs and
// short messages wait there behind the bulk data of its own connections
// (one FIFO, as pfifo_fast), which the switches' marking does not see.
struct HostQueues
{
    uint32_t maxPackets = 0;  // the most packets one host's queue held
    int64_t maxWaitNs = 0;    // the longest a packet waited in one
    uint64_t packets = 0;     // packets that left them
    uint64_t waitedRto = 0;   // of those, how many waited the minimum RTO or longer
    int64_t rtoNs = 0;

    static void Depth(HostQueues* h, uint32_t, uint32_t now) { h->maxPackets = std::max(h->maxPackets, now); }

    static void Waited(HostQueues* h, Time t)
    {
        const int64_t ns = t.GetNanoSeconds();
        h->maxWaitNs = std::max(h->maxWaitNs, ns);
        h->packets++;
        h->waitedRto += ns >= h->rtoNs;
    }
};

// Fabric is the built network: the nodes and the queue discs whose counters
// the output reports.
struct Fabric
{
    std::vector<Ptr<Node>> hosts, tors, cores;
    std::vector<Ptr<QueueDisc>> switchQdiscs; // every switch egress port
    std::vector<Ptr<QueueDisc>> hostQdiscs;   // every host NIC
    std::vector<Ptr<PointToPointNetDevice>> switchDevs, hostDevs;
    std::vector<Ptr<QueueDisc>> torDown;      // ToR r's port to host i, indexed by host i
    std::shared_ptr<HostQueues> hostQueues = std::make_shared<HostQueues>(); // what waited in the hosts' NIC queues
};

// link joins a and b with a point-to-point link of rate bps; what a sends is
// delayed aToB, what b sends bToA. Each device's own transmit queue holds one
// packet, with flow control up to the node's queue disc, so that the queue
// discs hold the queues (as a switch's buffer does) and their limits are the
// buffer.
std::pair<Ptr<PointToPointNetDevice>, Ptr<PointToPointNetDevice>>
link(Ptr<Node> a, Ptr<Node> b, int64_t bps, int64_t mtu, Time aToB, Time bToA)
{
    Ptr<DirectedChannel> ch = CreateObject<DirectedChannel>();
    ch->SetDelays(aToB, bToA);
    Ptr<PointToPointNetDevice> devs[2];
    Ptr<Node> nodes[2] = {a, b};
    for (int i = 0; i < 2; i++)
    {
        Ptr<PointToPointNetDevice> d = CreateObject<PointToPointNetDevice>();
        d->SetAttribute("DataRate", DataRateValue(DataRate(uint64_t(bps))));
        d->SetAttribute("Mtu", UintegerValue(uint16_t(mtu)));
        d->SetAddress(Mac48Address::Allocate());
        nodes[i]->AddDevice(d);
        Ptr<Queue<Packet>> q =
            CreateObjectWithAttributes<DropTailQueue<Packet>>("MaxSize", QueueSizeValue(QueueSize("1p")));
        d->SetQueue(q);
        Ptr<NetDeviceQueueInterface> ndqi = CreateObject<NetDeviceQueueInterface>();
        ndqi->GetTxQueue(0)->ConnectQueueTraces(q);
        d->AggregateObject(ndqi);
        d->Attach(ch);
        devs[i] = d;
    }
    return {devs[0], devs[1]};
}

// addInterface gives dev an address on a /24 and brings it up; it returns
// the address.
void
addInterface(Ptr<Node> node, Ptr<NetDevice> dev, Ipv4Address addr)
{
    Ptr<Ipv4> ipv4 = node->GetObject<Ipv4>();
    uint32_t iface = ipv4->AddInterface(dev);
    ipv4->AddAddress(iface, Ipv4InterfaceAddress(addr, Ipv4Mask("255.255.255.0")));
    ipv4->SetUp(iface);
}

Ptr<QueueDisc>
installQdisc(TrafficControlHelper& tch, Ptr<NetDevice> dev)
{
    return tch.Install(dev).Get(0);
}

// switchQueue is the traffic-control set-up of a switch egress port of rate
// bps whose DCTCP marking threshold is k.
TrafficControlHelper
switchQueue(const Settings& s, int64_t bps, int64_t k)
{
    TrafficControlHelper tch;
    const std::string limit = std::to_string(s.bufferPackets) + "p";
    if (s.transport == "tcp")
    {
        tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", QueueSizeValue(QueueSize(limit)));
        return tch;
    }
    // DCTCP's step marking: RED on the instantaneous queue (QW 1), one
    // threshold (MinTh = MaxTh = K, not gentle): a packet that arrives to K
    // or more queued packets is marked CE; drops only when the buffer is
    // full (no hard drop above MaxTh).
    tch.SetRootQueueDisc("ns3::RedQueueDisc",
                         "MaxSize", QueueSizeValue(QueueSize(limit)),
                         "MinTh", DoubleValue(double(k)),
                         "MaxTh", DoubleValue(double(k)),
                         "QW", DoubleValue(1.0),
                         "Gentle", BooleanValue(false),
                         "UseEcn", BooleanValue(true),
                         "UseHardDrop", BooleanValue(false),
                         "MeanPktSize", UintegerValue(1500),
                         "LinkBandwidth", DataRateValue(DataRate(uint64_t(bps))));
    return tch;
}

Fabric
buildFabric(const Settings& s, const Net& n)
{
    Fabric f;
    auto makeNodes = [](std::vector<Ptr<Node>>& v, int64_t count) {
        for (int64_t i = 0; i < count; i++)
        {
            v.push_back(CreateObject<Node>());
        }
    };
    makeNodes(f.hosts, n.hosts());
    makeNodes(f.tors, n.racks);
    makeNodes(f.cores, n.cores);

    InternetStackHelper stack;
    FabricRoutingHelper routing;
    stack.SetRoutingHelper(routing);
    stack.SetIpv6StackInstall(false);
    for (auto* v : {&f.hosts, &f.tors, &f.cores})
    {
        for (Ptr<Node>& node : *v)
        {
            stack.Install(node);
        }
    }
    auto routingOf = [](Ptr<Node> node) {
        return DynamicCast<FabricRouting>(node->GetObject<Ipv4>()->GetRoutingProtocol());
    };
    for (int64_t r = 0; r < n.racks; r++)
    {
        routingOf(f.tors[r])->Configure(FabricRouting::TOR, r, n);
    }
    for (int64_t c = 0; c < n.cores; c++)
    {
        routingOf(f.cores[c])->Configure(FabricRouting::CORE, 0, n);
    }

    // The delays of the Go simulation, per direction: a host's sending
    // software and NIC on the way up, a switch's forwarding on its egress
    // link, the receiver's software on the way down to it.
    const Time up = NanoSeconds(n.propNs + n.hostNs);
    const Time hop = NanoSeconds(n.propNs + n.switchNs);
    const Time down = NanoSeconds(n.propNs + n.switchNs + n.recvNs);

    f.hostQueues->rtoNs = s.minRtoUs * 1000;
    TrafficControlHelper hostTc;
    const QueueSizeValue hostLimit(QueueSize(std::to_string(s.hostQueuePackets) + "p"));
    if (s.hostQdisc == "fifo")
    {
        hostTc.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", hostLimit);
    }
    else
    {
        // Linux's fq_codel defaults: 1024 flows, a quantum of one MTU, CoDel's
        // 5 ms target over 100 ms, ECN on.
        hostTc.SetRootQueueDisc("ns3::FqCoDelQueueDisc", "MaxSize", hostLimit, "Flows", UintegerValue(1024),
                                "Target", StringValue("5ms"), "Interval", StringValue("100ms"),
                                "UseEcn", BooleanValue(true));
    }
    TrafficControlHelper downTc = switchQueue(s, n.linkBps, markOnLink(s, n));
    TrafficControlHelper upTc = switchQueue(s, n.uplinkBps, s.markPacketsUplink);

    f.torDown.resize(n.hosts());
    for (int64_t h = 0; h < n.hosts(); h++)
    {
        const int64_t r = h / n.hostsPerRack, i = h % n.hostsPerRack;
        auto [hd, td] = link(f.hosts[h], f.tors[r], n.linkBps, n.mtu, up, down);
        const Ipv4Address ha = hostAddress(n, h);
        const Ipv4Address ta(ha.Get() + 1);
        addInterface(f.hosts[h], hd, ha);
        addInterface(f.tors[r], td, ta);
        routingOf(f.hosts[h])->Configure(FabricRouting::HOST, r, n);
        routingOf(f.hosts[h])->SetPort(false, 0, hd, ha);
        routingOf(f.tors[r])->SetPort(true, uint32_t(i), td, ta);
        f.hostQdiscs.push_back(installQdisc(hostTc, hd));
        f.hostQdiscs.back()->TraceConnectWithoutContext("PacketsInQueue",
                                                        MakeBoundCallback(&HostQueues::Depth, f.hostQueues.get()));
        f.hostQdiscs.back()->TraceConnectWithoutContext("SojournTime",
                                                        MakeBoundCallback(&HostQueues::Waited, f.hostQueues.get()));
        f.torDown[h] = installQdisc(downTc, td);
        f.switchQdiscs.push_back(f.torDown[h]);
        f.hostDevs.push_back(hd);
        f.switchDevs.push_back(td);
    }
    for (int64_t r = 0; r < n.racks; r++)
    {
        for (int64_t c = 0; c < n.cores; c++)
        {
            auto [td, cd] = link(f.tors[r], f.cores[c], n.uplinkBps, n.mtu, hop, hop);
            const uint32_t base = (11u << 24) | (uint32_t(r) << 16) | (uint32_t(c) << 8);
            addInterface(f.tors[r], td, Ipv4Address(base | 1));
            addInterface(f.cores[c], cd, Ipv4Address(base | 2));
            routingOf(f.tors[r])->SetPort(false, uint32_t(c), td, Ipv4Address(base | 1));
            routingOf(f.cores[c])->SetPort(true, uint32_t(r), cd, Ipv4Address(base | 2));
            f.switchQdiscs.push_back(installQdisc(upTc, td));
            f.switchQdiscs.push_back(installQdisc(upTc, cd));
            f.switchDevs.push_back(td);
            f.switchDevs.push_back(cd);
        }
    }
    return f;
}

// ---------------------------------------------------------------------------
// The replay.

const uint16_t kPort = 5001; // every host listens here

// Conn is one TCP connection, from src to dst, kept open for the run.
struct Conn
{
    class Replay* run = nullptr;
    int32_t src = 0, dst = 0;
    Ptr<Socket> tx;                // src's socket
    Ptr<Socket> rx;                // dst's accepted socket, once accepted
    uint64_t pending = 0;          // bytes started but not yet written into tx
    std::deque<int32_t> inFlight;  // messages started and not yet delivered, in start order
    uint64_t rxGot = 0;            // bytes of inFlight.front() the receiver has
    bool open = false;             // the handshake completed at the sender
    bool sentData = false;         // highSent is set
    SequenceNumber32 highSent;     // one past the highest data byte sent so far
    Time lastSent;                 // when tx last sent a data segment
    int state = -1;                // tx's TCP state (TcpSocket::TcpStates_t)
};

class Replay
{
  public:
    Replay(const Settings& s, Trace& t, Fabric& f)
        : m_s(s),
          m_t(t),
          m_f(f),
          m_warmup(NanoSeconds(s.warmupNs))
    {
    }

    // Prepare makes the connections the trace uses, the listeners, and the
    // events: the opens spread over the first half of the warm-up, the
    // messages that wait for nothing at warm-up + at_ns.
    void Prepare()
    {
        const int64_t hosts = m_t.net.hosts();
        std::unordered_map<int64_t, int32_t> pairs;
        for (Msg& m : m_t.msgs)
        {
            const int64_t key = int64_t(m.src) * hosts + m.dst;
            auto [it, fresh] = pairs.try_emplace(key, int32_t(m_conns.size()));
            if (fresh)
            {
                Conn c;
                c.run = this;
                c.src = m.src;
                c.dst = m.dst;
                m_conns.push_back(c);
            }
            m.conn = it->second;
        }
        // Dependents, by the message they wait for.
        m_childStart.assign(m_t.msgs.size() + 1, 0);
        for (const Msg& m : m_t.msgs)
        {
            if (m.after >= 0)
            {
                m_childStart[m.after + 1]++;
            }
        }
        for (size_t i = 1; i < m_childStart.size(); i++)
        {
            m_childStart[i] += m_childStart[i - 1];
        }
        m_children.resize(m_childStart.back());
        std::vector<int32_t> fill(m_childStart.begin(), m_childStart.end() - 1);
        for (size_t id = 0; id < m_t.msgs.size(); id++)
        {
            if (m_t.msgs[id].after >= 0)
            {
                m_children[fill[m_t.msgs[id].after]++] = int32_t(id);
            }
        }

        std::vector<bool> listens(hosts, false);
        for (const Conn& c : m_conns)
        {
            listens[c.dst] = true;
        }
        for (int64_t h = 0; h < hosts; h++)
        {
            if (!listens[h])
            {
                continue;
            }
            Ptr<Socket> l = Socket::CreateSocket(m_f.hosts[h], TcpSocketFactory::GetTypeId());
            l->Bind(InetSocketAddress(Ipv4Address::GetAny(), kPort));
            l->Listen();
            l->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                                 MakeCallback(&Replay::Accepted, this));
            m_listeners.push_back(l);
        }
        const double spread = m_conns.empty() ? 0 : double(m_s.warmupNs) / 2 / m_conns.size();
        for (size_t i = 0; i < m_conns.size(); i++)
        {
            Simulator::Schedule(NanoSeconds(int64_t(spread * i)), &Replay::Open, this, &m_conns[i]);
        }
        for (size_t id = 0; id < m_t.msgs.size(); id++)
        {
            if (m_t.msgs[id].after < 0)
            {
                Simulator::Schedule(m_warmup + NanoSeconds(m_t.msgs[id].atNs),
                                    &Replay::Start, this, int32_t(id));
            }
        }
        if (m_t.msgs.empty())
        {
            Simulator::Schedule(m_warmup, static_cast<void (*)()>(&Simulator::Stop));
        }
        if (m_s.queueHost >= 0)
        {
            Simulator::Schedule(m_warmup, &Replay::Sample, this);
        }
    }

    size_t Connections() const { return m_conns.size(); }

    // ReportStuck says on o how many connections still hold undelivered
    // messages, and the state of the first few, for whoever asks why.
    void ReportStuck(std::ostream& o) const
    {
        size_t stuck = 0;
        for (const Conn& c : m_conns)
        {
            if (c.inFlight.empty())
            {
                continue;
            }
            if (++stuck > 5)
            {
                continue;
            }
            const Msg& m = m_t.msgs[c.inFlight.front()];
            Ptr<TcpSocketBase> tx = DynamicCast<TcpSocketBase>(c.tx);
            Ptr<TcpTxBuffer> tb = tx->GetTxBuffer();
            o << "homa-ns3-tcp: connection " << c.src << "->" << c.dst << ": " << c.inFlight.size()
              << " messages undelivered, the first " << c.inFlight.front() << " (" << m.size
              << " B, started " << m.startNs << " ns, " << c.rxGot << " B of it received); "
              << c.pending << " B not yet written; sender state "
              << (c.state >= 0 ? TcpSocket::TcpStateName[c.state] : "?") << ", buffer "
              << tb->HeadSequence() << ".." << tb->TailSequence() << " in flight "
              << tb->BytesInFlight() << " lost " << tb->GetLost() << " sacked " << tb->GetSacked()
              << ", last data sent at " << (c.lastSent - m_warmup).GetNanoSeconds() << " ns";
            if (Ptr<TcpSocketBase> rx = DynamicCast<TcpSocketBase>(c.rx))
            {
                o << "; receiver expects " << rx->GetRxBuffer()->NextRxSequence() << ", holds "
                  << rx->GetRxBuffer()->Size() << " B out of order";
            }
            else
            {
                o << "; never accepted";
            }
            o << "\n";
        }
        if (stuck > 0)
        {
            o << "homa-ns3-tcp: " << stuck << " connections hold undelivered messages\n";
        }
    }
    size_t OpenAtStart() const { return m_openAtStart; }
    int64_t Delivered() const { return m_delivered; }
    uint64_t Retransmits() const { return m_retransmits; }
    uint64_t Timeouts() const { return m_timeouts; }
    uint64_t FastRecoveries() const { return m_fastRecoveries; }
    uint64_t QueueSamples() const { return m_qSamples; }
    double QueueMean() const { return m_qSamples ? double(m_qSum) / m_qSamples : 0; }
    uint64_t QueueMax() const { return m_qMax; }

  private:
    // Open connects c's sender to its receiver's listener.
    void Open(Conn* c)
    {
        c->tx = Socket::CreateSocket(m_f.hosts[c->src], TcpSocketFactory::GetTypeId());
        c->tx->Bind();
        c->tx->Connect(InetSocketAddress(hostAddress(m_t.net, c->dst), kPort));
        Address local;
        c->tx->GetSockName(local);
        const InetSocketAddress a = InetSocketAddress::ConvertFrom(local);
        m_byEndpoint[endpointKey(hostAddress(m_t.net, c->src), a.GetPort())] = c;
        c->tx->SetConnectCallback(MakeBoundCallback(&Replay::Connected, c),
                                  MakeBoundCallback(&Replay::ConnectFailed, c));
        c->tx->SetSendCallback(MakeBoundCallback(&Replay::SendSpace, c));
        c->tx->TraceConnectWithoutContext("Tx", MakeBoundCallback(&Replay::Sent, c));
        c->tx->TraceConnectWithoutContext("State", MakeBoundCallback(&Replay::StateChanged, c));
        c->tx->TraceConnectWithoutContext("CongState", MakeBoundCallback(&Replay::CongChanged, c));
    }

    // CongChanged counts how the sender's losses were found: a retransmission
    // timeout (into CA_LOSS; a timeout that fires again, backed off, before
    // the state leaves CA_LOSS is not counted again) or three duplicate ACKs
    // or SACKs (into CA_RECOVERY, fast retransmit).
    static void CongChanged(Conn* c, TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t now)
    {
        if (now == TcpSocketState::CA_LOSS)
        {
            c->run->m_timeouts++;
        }
        else if (now == TcpSocketState::CA_RECOVERY)
        {
            c->run->m_fastRecoveries++;
        }
    }

    static void StateChanged(Conn* c, TcpSocket::TcpStates_t, TcpSocket::TcpStates_t now)
    {
        c->state = int(now);
    }

    static uint64_t endpointKey(Ipv4Address a, uint16_t port)
    {
        return (uint64_t(a.Get()) << 16) | port;
    }

    static void Connected(Conn* c, Ptr<Socket>)
    {
        c->open = true;
        if (Simulator::Now() <= c->run->m_warmup)
        {
            c->run->m_openAtStart++;
        }
    }

    static void ConnectFailed(Conn* c, Ptr<Socket>)
    {
        std::cerr << "homa-ns3-tcp: connection " << c->src << "->" << c->dst << " failed\n";
    }

    // Accepted finds the connection a listener accepted by the sender's
    // address and port, and reads for it from now on.
    void Accepted(Ptr<Socket> s, const Address& from)
    {
        const InetSocketAddress a = InetSocketAddress::ConvertFrom(from);
        auto it = m_byEndpoint.find(endpointKey(a.GetIpv4(), a.GetPort()));
        if (it == m_byEndpoint.end())
        {
            std::cerr << "homa-ns3-tcp: accepted an unknown connection from " << a.GetIpv4()
                      << ":" << a.GetPort() << "\n";
            return;
        }
        it->second->rx = s;
        s->SetRecvCallback(MakeBoundCallback(&Replay::Readable, it->second));
    }

    // Start hands message id to its connection.
    void Start(int32_t id)
    {
        Msg& m = m_t.msgs[id];
        Conn* c = &m_conns[m.conn];
        m.startNs = (Simulator::Now() - m_warmup).GetNanoSeconds();
        c->inFlight.push_back(id);
        c->pending += uint64_t(m.size);
        Pump(c);
    }

    // Pump writes what c has pending as far as the send buffer takes it; the
    // send callback calls it again as the buffer drains.
    static void Pump(Conn* c)
    {
        while (c->pending > 0)
        {
            const uint32_t room = c->tx->GetTxAvailable();
            if (room == 0)
            {
                return;
            }
            const uint32_t n = uint32_t(std::min<uint64_t>(c->pending, room));
            if (c->tx->Send(Create<Packet>(n)) < 0)
            {
                return;
            }
            c->pending -= n;
        }
    }

    static void SendSpace(Conn* c, Ptr<Socket>, uint32_t) { Pump(c); }

    // Sent counts a data segment that starts below the highest byte already
    // sent as a retransmission.
    static void Sent(Conn* c, Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase>)
    {
        const uint32_t len = p->GetSize();
        if (len == 0)
        {
            return;
        }
        const SequenceNumber32 seq = h.GetSequenceNumber();
        c->lastSent = Simulator::Now();
        if (c->sentData && seq < c->highSent)
        {
            c->run->m_retransmits++;
        }
        if (!c->sentData || seq + len > c->highSent)
        {
            c->highSent = seq + len;
            c->sentData = true;
        }
    }

    // Readable takes what arrived on c and delivers the messages it
    // completes: the receiver knows where one ends by the sizes of the
    // messages started on c, in order.
    static void Readable(Conn* c, Ptr<Socket> s)
    {
        Ptr<Packet> p;
        uint64_t got = 0;
        while ((p = s->Recv()) && p->GetSize() > 0)
        {
            got += p->GetSize();
        }
        c->rxGot += got;
        Replay* run = c->run;
        while (!c->inFlight.empty())
        {
            const int32_t id = c->inFlight.front();
            const uint64_t size = uint64_t(run->m_t.msgs[id].size);
            if (c->rxGot < size)
            {
                break;
            }
            c->rxGot -= size;
            c->inFlight.pop_front();
            run->Delivered(id);
        }
    }

    // Delivered records id's delivery and starts what waited for it.
    void Delivered(int32_t id)
    {
        Msg& m = m_t.msgs[id];
        m.doneNs = (Simulator::Now() - m_warmup).GetNanoSeconds();
        m_delivered++;
        for (int32_t i = m_childStart[id]; i < m_childStart[id + 1]; i++)
        {
            const int32_t child = m_children[i];
            const int64_t at = m_t.msgs[child].atNs;
            if (at > m.doneNs)
            {
                Simulator::Schedule(NanoSeconds(at - m.doneNs), &Replay::Start, this, child);
            }
            else
            {
                Start(child);
            }
        }
        if (m_delivered == int64_t(m_t.msgs.size()))
        {
            Simulator::Stop();
        }
    }

    // Sample reads the queue toward --queue-host once per --queue-sample-ns.
    void Sample()
    {
        const uint64_t q = m_f.torDown[m_s.queueHost]->GetNPackets();
        m_qSum += q;
        m_qMax = std::max(m_qMax, q);
        m_qSamples++;
        Simulator::Schedule(NanoSeconds(m_s.queueSampleNs), &Replay::Sample, this);
    }

    const Settings& m_s;
    Trace& m_t;
    Fabric& m_f;
    const Time m_warmup;
    std::vector<Conn> m_conns;                         // fixed once Prepare has made them
    std::unordered_map<uint64_t, Conn*> m_byEndpoint;  // by the sender's address and port
    std::vector<Ptr<Socket>> m_listeners;
    std::vector<int32_t> m_childStart;                 // m_children[m_childStart[id]..[id+1]) wait for id
    std::vector<int32_t> m_children;
    size_t m_openAtStart = 0;                          // connections open by trace time 0
    int64_t m_delivered = 0;
    uint64_t m_retransmits = 0;
    uint64_t m_timeouts = 0;
    uint64_t m_fastRecoveries = 0;
    uint64_t m_qSum = 0, m_qMax = 0, m_qSamples = 0;   // the sampled queue, packets
};

// ---------------------------------------------------------------------------
// DCTCP as Linux runs it.

// LinuxDctcp is ns-3's TcpDctcp with Linux's floor and loss response
// (net/ipv4/tcp_dctcp.c): ns-3's takes ssthresh = (1 - alpha/2) x cwnd
// with no floor, so a connection whose window is a segment or two and whose
// packets are marked falls below one segment, and with nothing in flight it
// never sends again (ns-3 sends no segment larger than the window). Linux
// keeps at least 2 segments, and halves the window on a loss (fast
// retransmit) rather than cutting it by alpha/2.
class LinuxDctcp : public TcpDctcp
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("homa::LinuxDctcp")
                                .SetParent<TcpDctcp>()
                                .SetGroupName("homa")
                                .AddConstructor<LinuxDctcp>();
        return tid;
    }

    std::string GetName() const override { return "LinuxDctcp"; }

    // GetSsThresh is called on entering CWR (an ECN echo) and, with the
    // state already CA_RECOVERY, on a fast retransmit.
    uint32_t GetSsThresh(Ptr<const TcpSocketState> tcb, uint32_t bytesInFlight) override
    {
        const uint32_t floor = 2 * tcb->m_segmentSize;
        if (tcb->m_congState == TcpSocketState::CA_RECOVERY)
        {
            return std::max(tcb->m_cWnd.Get() / 2, floor);
        }
        return std::max(TcpDctcp::GetSsThresh(tcb, bytesInFlight), floor);
    }

    Ptr<TcpCongestionOps> Fork() override { return CopyObject<LinuxDctcp>(this); }
};

// ---------------------------------------------------------------------------
// Set-up of TCP and the output.

void
configureTcp(const Settings& s)
{
    const bool dctcp = s.transport == "dctcp";
    Config::SetDefault("ns3::TcpL4Protocol::SocketType",
                       TypeIdValue(dctcp ? LinuxDctcp::GetTypeId() : TypeId::LookupByName("ns3::TcpCubic")));
    Config::SetDefault("ns3::TcpSocketBase::UseEcn", StringValue(dctcp ? "On" : "Off"));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(uint32_t(s.segmentBytes)));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(uint32_t(s.initCwnd)));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(uint32_t(s.delAckCount)));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MicroSeconds(s.delAckTimeoutUs)));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(uint32_t(s.sndbufBytes)));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(uint32_t(s.rcvbufBytes)));
    // Linux retries a segment 15 times before giving up (tcp_retries2);
    // ns-3's default of 6 closes a connection that an incast makes back off
    // a few times at a 1 ms RTO.
    Config::SetDefault("ns3::TcpSocket::DataRetries", UintegerValue(100));
    Config::SetDefault("ns3::TcpSocket::TcpNoDelay", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MicroSeconds(s.minRtoUs)));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
}

struct Counters
{
    uint64_t drops = 0, hostDrops = 0, marks = 0, hostMarks = 0;
    HostQueues hostQueues;
};

Counters
count(const Fabric& f)
{
    Counters c;
    c.hostQueues = *f.hostQueues;
    for (const Ptr<QueueDisc>& q : f.switchQdiscs)
    {
        c.drops += q->GetStats().nTotalDroppedPackets;
        c.marks += q->GetStats().nTotalMarkedPackets;
    }
    for (const Ptr<QueueDisc>& q : f.hostQdiscs)
    {
        c.hostDrops += q->GetStats().nTotalDroppedPackets;
        c.hostMarks += q->GetStats().nTotalMarkedPackets;
    }
    for (const Ptr<PointToPointNetDevice>& d : f.switchDevs)
    {
        c.drops += d->GetQueue()->GetTotalDroppedPackets();
    }
    for (const Ptr<PointToPointNetDevice>& d : f.hostDevs)
    {
        c.hostDrops += d->GetQueue()->GetTotalDroppedPackets();
    }
    return c;
}

void
writeResults(std::ostream& o,
             const Settings& s,
             const Trace& t,
             const Replay& r,
             const Counters& c,
             uint64_t events,
             int64_t endNs,
             double wall)
{
    const bool dctcp = s.transport == "dctcp";
    o << "# homa-ns3-tcp 1\n"
      << "# transport " << s.transport << "\n"
      << "# congestion_control " << (dctcp ? "dctcp" : "cubic") << "\n"
      << "# ecn " << (dctcp ? "on" : "off") << "\n"
      << "# trace " << s.trace << "\n"
      << "# hosts " << t.net.hosts() << "\n"
      << "# messages " << t.msgs.size() << "\n"
      << "# buffer_packets " << s.bufferPackets << "\n"
      << "# switch_queue " << (dctcp ? "red-step-mark" : "drop-tail") << "\n"
      << "# mark_packets " << (dctcp ? std::to_string(s.markPackets) : "-") << "\n"
      << "# mark_packets_link " << (dctcp ? std::to_string(markOnLink(s, t.net)) : "-") << "\n"
      << "# mark_packets_uplink " << (dctcp ? std::to_string(s.markPacketsUplink) : "-") << "\n"
      << "# host_queue_packets " << s.hostQueuePackets << "\n"
      << "# host_qdisc " << s.hostQdisc << "\n"
      << "# device_queue_packets 1\n"
      << "# segment_bytes " << s.segmentBytes << "\n"
      << "# timestamps on\n"
      << "# sack on\n"
      << "# init_cwnd " << s.initCwnd << "\n"
      << "# min_rto_us " << s.minRtoUs << "\n"
      << "# rto_clock_granularity_us 1000\n"
      << "# del_ack_count " << s.delAckCount << "\n"
      << "# del_ack_timeout_us " << s.delAckTimeoutUs << "\n"
      << "# sndbuf_bytes " << s.sndbufBytes << "\n"
      << "# rcvbuf_bytes " << s.rcvbufBytes << "\n"
      << "# data_retries 100\n"
      << "# warmup_ns " << s.warmupNs << "\n"
      << "# stop_ns " << s.stopNs << "\n"
      << "# ecmp per-flow\n"
      << "# connections " << r.Connections() << "\n"
      << "# connections_open_at_start " << r.OpenAtStart() << "\n";
    if (s.queueHost >= 0)
    {
        o << "# queue_host " << s.queueHost << "\n"
          << "# queue_sample_ns " << s.queueSampleNs << "\n"
          << "# queue_samples " << r.QueueSamples() << "\n"
          << "# queue_mean_packets " << r.QueueMean() << "\n"
          << "# queue_max_packets " << r.QueueMax() << "\n";
    }
    o << "# delivered " << r.Delivered() << "\n"
      << "# drops " << c.drops << "\n"
      << "# host_drops " << c.hostDrops << "\n"
      << "# host_marks " << c.hostMarks << "\n"
      << "# marks " << c.marks << "\n"
      << "# retransmits " << r.Retransmits() << "\n"
      << "# timeouts " << r.Timeouts() << "\n"
      << "# fast_recoveries " << r.FastRecoveries() << "\n"
      << "# host_queue_max_packets " << c.hostQueues.maxPackets << "\n"
      << "# host_queue_max_wait_us " << c.hostQueues.maxWaitNs / 1000 << "\n"
      << "# host_queue_waits_over_min_rto " << c.hostQueues.waitedRto << " of " << c.hostQueues.packets << "\n"
      << "# end_ns " << endNs << "\n"
      << "# events " << events << "\n";
    char wallText[32];
    std::snprintf(wallText, sizeof wallText, "%.3f", wall);
    o << "# wall_s " << wallText << "\n"
      << "id,start_ns,done_ns\n";
    for (size_t id = 0; id < t.msgs.size(); id++)
    {
        const Msg& m = t.msgs[id];
        const bool done = m.doneNs >= 0;
        o << id << ',' << (done ? m.startNs : -1) << ',' << (done ? m.doneNs : -1) << '\n';
    }
}

int
run(int argc, char** argv)
{
    const auto wallStart = std::chrono::steady_clock::now();
    Settings s;
    if (!parseFlags(argc, argv, s))
    {
        usage(std::cout);
        return 0;
    }
    Trace t = readTrace(s.trace);
    derive(s, t);

    std::ofstream file;
    std::ostream* out = &std::cout;
    if (s.out != "-")
    {
        file.open(s.out);
        if (!file)
        {
            throw BadInput("--out " + s.out + ": cannot create");
        }
        out = &file;
    }

    configureTcp(s);
    Fabric f = buildFabric(s, t.net);
    Replay r(s, t, f);
    r.Prepare();
    Simulator::Stop(NanoSeconds(s.warmupNs + s.stopNs));
    Simulator::Run();

    const int64_t endNs = (Simulator::Now() - NanoSeconds(s.warmupNs)).GetNanoSeconds();
    const uint64_t events = Simulator::GetEventCount();
    const Counters c = count(f);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();
    writeResults(*out, s, t, r, c, events, endNs, wall);
    r.ReportStuck(std::cerr);
    out->flush();
    if (!*out)
    {
        std::cerr << "homa-ns3-tcp: writing " << s.out << " failed\n";
        return 1;
    }
    // Simulator::Destroy is left out: tearing down every socket and node
    // takes time and the process ends here anyway.
    return 0;
}

} // namespace

int
main(int argc, char** argv)
{
    try
    {
        return run(argc, argv);
    }
    catch (const BadInput& e)
    {
        std::cerr << "homa-ns3-tcp: " << e.what() << "\n";
        return 2;
    }
}
