package config

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "homa.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const minimal = `
ports:
  - device: net_memif0
    address: 10.0.0.1/24
`

func TestLoad_exampleFileIsValid(t *testing.T) {
	s, err := Load(Source{File: "example.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Ports) != 1 || s.Ports[0].Device != "net_memif0" || s.Neighbours[0].MAC.String() != "02:00:0a:00:00:02" {
		t.Errorf("spec %+v", s)
	}
	if s.Protocol.MaxNICQueue != 5*time.Microsecond || s.Protocol.Tick != time.Millisecond {
		t.Errorf("durations %v %v", s.Protocol.MaxNICQueue, s.Protocol.Tick)
	}
}

func TestLoad_defaultsAreKernelHoma(t *testing.T) {
	s, err := Load(Source{File: writeFile(t, minimal)})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Protocol
	if h.UnschedBytes != 40000 || h.MaxIncoming != 400000 || h.MaxOvercommit != 8 || h.Window != 0 ||
		h.GrantFIFOFraction != 0.05 || h.FIFOGrantIncrement != 50000 ||
		h.ResendTicks != 5 || h.ResendInterval != 5 || h.TimeoutTicks != 100 || h.RequestAckTick != 2 ||
		h.MaxMessage != 1_000_000 || h.PacerThreshold != 1000 || !h.ScheduledDataQueue {
		t.Errorf("protocol defaults %+v", h)
	}
	if got := h.UnschedCutoffs; len(got) != 4 || got[0] != 200 || got[3] != 1_000_000 {
		t.Errorf("cutoffs %v", got)
	}
	if h.ICMPRateLimit != time.Second || h.ICMPRateLimitBurst != 6 || h.ICMPRateLimitBuckets != 4096 ||
		h.ICMPMsgsPerSec != 1000 || h.ICMPMsgsBurst != 50 {
		t.Errorf("icmp_ratelimit %v, burst %d, buckets %d; icmp_msgs_per_sec %d, burst %d: want Linux's 1s, 6; 4096; 1000, 50",
			h.ICMPRateLimit, h.ICMPRateLimitBurst, h.ICMPRateLimitBuckets, h.ICMPMsgsPerSec, h.ICMPMsgsBurst)
	}
	if w := s.Workers; w.MaxBacklog != 4096 || w.MaxBacklog < 2*w.MaxOutstanding || w.MaxSessionsPerUID != 32 || w.Linger != 2*time.Second {
		t.Errorf("workers.max_backlog %d (max_outstanding %d), max_sessions_per_uid %d, linger %v; want 4096, 32, 2s",
			w.MaxBacklog, w.MaxOutstanding, w.MaxSessionsPerUID, w.Linger)
	}
	p := s.Ports[0]
	if p.MTU != 1500 || p.Marking != "dscp" || p.RxDesc != 1024 || p.LinkSpeed != 0 {
		t.Errorf("port defaults %+v", p)
	}
}

// protocol.icmp_ratelimit and icmp_msgs_per_sec of 0 are valid: no
// limit (the daemon turns them into the engine's "off").
func TestLoad_icmpLimitsOff(t *testing.T) {
	s, err := Load(Source{File: writeFile(t, minimal+"protocol:\n  icmp_ratelimit: 0s\n  icmp_msgs_per_sec: 0\n")})
	if err != nil {
		t.Fatal(err)
	}
	if h := s.Protocol; h.ICMPRateLimit != 0 || h.ICMPMsgsPerSec != 0 {
		t.Fatalf("icmp_ratelimit %v, icmp_msgs_per_sec %d; want 0, 0", h.ICMPRateLimit, h.ICMPMsgsPerSec)
	}
}

// protocol.scheduled_data_queue (on by default) is turned off from the
// file and from HOMA_PROTOCOL_SCHEDULED_DATA_QUEUE.
func TestLoad_scheduledDataQueue(t *testing.T) {
	s, err := Load(Source{File: writeFile(t, minimal+"protocol:\n  scheduled_data_queue: false\n")})
	if err != nil || s.Protocol.ScheduledDataQueue {
		t.Fatalf("from the file: %v, %v", err, err == nil && s.Protocol.ScheduledDataQueue)
	}
	t.Setenv("HOMA_PROTOCOL_SCHEDULED_DATA_QUEUE", "false")
	if s, err = Load(Source{File: writeFile(t, minimal)}); err != nil || s.Protocol.ScheduledDataQueue {
		t.Fatalf("from the environment: %v", err)
	}
}

// peers: per prefix, the first match wins; the protocol's variant and
// checksum keys are read.
func TestLoad_peersAndVariants(t *testing.T) {
	s, err := Load(Source{File: writeFile(t, minimal+"protocol:\n  variant: upstream\n  checksum: true\n  verify_checksum: all\n"+
		"peers:\n  - prefix: 10.0.1.0/24\n    variant: upstream\n  - prefix: 10.0.0.0/8\n    variant: full\n")})
	if err != nil {
		t.Fatal(err)
	}
	if h := s.Protocol; h.Variant != "upstream" || !h.Checksum || h.VerifyChecksum != "all" {
		t.Errorf("protocol: variant %q checksum %v verify %q", h.Variant, h.Checksum, h.VerifyChecksum)
	}
	for ip, want := range map[[4]byte]PeerSpec{
		{10, 0, 1, 5}:    {Prefix: s.Peers[0].Prefix, Variant: "upstream"},
		{10, 9, 0, 1}:    {Prefix: s.Peers[1].Prefix, Variant: "full"},
		{192, 168, 0, 1}: {},
	} {
		if got := s.PeerFor(netip.AddrFrom4(ip)); got != want {
			t.Errorf("PeerFor(%v) = %+v, want %+v", ip, got, want)
		}
	}
	s, err = Load(Source{File: writeFile(t, minimal+"peers:\n  - prefix: 0.0.0.0/0\n    hijack: true\n")})
	if err != nil || !s.PeerFor(netip.AddrFrom4([4]byte{1, 2, 3, 4})).Hijack || s.Protocol.Variant != "full" || s.Protocol.VerifyChecksum != "hijacked" || s.Protocol.Checksum {
		t.Errorf("hijack for every peer, defaults otherwise: %v %+v %+v", err, s.Peers, s.Protocol)
	}
}

// A port's address may be IPv6 alone, its next hop gateway6.
func TestLoad_ipv6OnlyPort(t *testing.T) {
	s, err := Load(Source{File: writeFile(t, "ports:\n  - device: net_null0\n    address: 2001:db8::1/64\n    gateway6: 2001:db8::fe\n")})
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Ports[0]; !p.Address.Addr().Is6() || p.Address.Bits() != 64 || p.Gateway6 != netip.MustParseAddr("2001:db8::fe") {
		t.Errorf("port %+v", p)
	}
}

func TestLoad_environmentAndFlagsOverride(t *testing.T) {
	t.Setenv("HOMA_PROTOCOL_MAX_INCOMING", "123456")
	t.Setenv("HOMA_LOG_LEVEL", "debug")
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("log-level", "info", "")
	fs.String("capture", "", "")
	if err := fs.Parse([]string{"--log-level=warn", "--capture=/tmp/x.pcapng"}); err != nil {
		t.Fatal(err)
	}
	s, err := Load(Source{
		File:  writeFile(t, minimal+"protocol:\n  max_incoming: 99\nlog:\n  level: error\n"),
		Flags: map[string]*pflag.Flag{"log.level": fs.Lookup("log-level"), "capture.file": fs.Lookup("capture")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Protocol.MaxIncoming != 123456 {
		t.Errorf("environment did not override the file: %d", s.Protocol.MaxIncoming)
	}
	if s.Log.Level != "warn" || s.Capture.File != "/tmp/x.pcapng" {
		t.Errorf("flags did not override: level %q capture %q", s.Log.Level, s.Capture.File)
	}
}

func TestLoad_errorsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		env        map[string]string
		want       []string
	}{
		{"unknown top key", minimal + "protocl:\n  x: 1\n", nil, []string{"unknown key protocl"}},
		{"unknown nested key", minimal + "protocol:\n  max_incomming: 5\n", nil, []string{"unknown key protocol.max_incomming"}},
		{"no port", "log:\n  level: info\n", nil, []string{"ports: no port is configured"}},
		{"bad address", "ports:\n  - device: net_null0\n    address: 10.0.0.300/24\n", nil,
			[]string{"ports[0].address", "not an IP address/prefix"}},
		{"bad device", "ports:\n  - device: eth0\n    address: 10.0.0.1/24\n", nil,
			[]string{"ports[0].device", "neither a PCI address"}},
		{"gateway off subnet", "ports:\n  - device: 0000:3b:00.0\n    address: 10.0.0.1/24\n    gateway: 10.1.0.1\n", nil,
			[]string{"ports[0].gateway", "not on the port's subnet 10.0.0.0/24"}},
		{"bad mtu", minimal + "    mtu: 20000\n", nil, []string{"ports[0].mtu: 20000 is out of range; allowed 576..9000"}},
		{"bad marking", minimal + "    marking: tos\n", nil, []string{"ports[0].marking", "dscp, pcp"}},
		{"pcp without vlan", minimal + "    marking: pcp\n", nil, []string{"ports[0].vlan", "needs a VLAN id"}},
		{"bad priority map", minimal + "    priority_map: \"0,1\"\n", nil, []string{"ports[0].priority_map", "want 8 queue numbers"}},
		{"bad link speed", minimal + "    link_speed: fast\n", nil, []string{"ports[0].link_speed", "10G"}},
		{"bad gateway", "ports:\n  - device: net_null0\n    address: 10.0.0.1/24\n    gateway: ten\n", nil, []string{"ports[0].gateway", "not an IP address"}},
		{"no prefix length", "ports:\n  - device: net_null0\n    address: 10.0.0.1\n", nil, []string{"ports[0].address", "10.0.0.1/24"}},
		{"multicast mac", minimal + "    mac: \"03:00:00:00:00:01\"\n", nil, []string{"ports[0].mac", "unicast"}},
		{"bad port mac", minimal + "    mac: zz\n", nil, []string{"ports[0].mac", "not a MAC address"}},
		{"bad neighbour ip", minimal + "neighbours:\n  - ip: 10.0.0.x\n    mac: \"02:00:00:00:00:01\"\n", nil, []string{"neighbours[0].ip", "not an IP address"}},
		{"removed key", minimal + "protocol:\n  num_priorities: 4\n", nil, []string{"protocol.num_priorities is no longer a key", "priority_map"}},
		{"removed key from the environment", minimal, map[string]string{"HOMA_PROTOCOL_NUM_PRIORITIES": "4"}, []string{"protocol.num_priorities is no longer a key"}},
		{"duplicate address", minimal + "  - device: net_null1\n    address: 10.0.0.1/24\n", nil,
			[]string{"ports[1].address: 10.0.0.1 is also the address of ports[0]"}},
		{"bad env value", minimal, map[string]string{"HOMA_PROTOCOL_MAX_OVERCOMMIT": "lots"}, []string{"max_overcommit"}},
		{"overcommit range", minimal, map[string]string{"HOMA_PROTOCOL_MAX_OVERCOMMIT": "0"},
			[]string{"protocol.max_overcommit (set by HOMA_PROTOCOL_MAX_OVERCOMMIT): 0 is out of range; allowed 1..64"}},
		{"typo in an env variable", minimal, map[string]string{"HOMA_PROTOCOL_MAX_INCOMMING": "10"},
			[]string{"environment variable HOMA_PROTOCOL_MAX_INCOMMING names no config key", "did you mean HOMA_PROTOCOL_MAX_INCOMING, for protocol.max_incoming?"}},
		{"cutoffs decrease", minimal + "protocol:\n  unsched_cutoffs: [300, 200]\n", nil,
			[]string{"protocol.unsched_cutoffs[1]", "increase"}},
		{"timeout before resend", minimal + "protocol:\n  timeout_ticks: 4\n", nil,
			[]string{"protocol.timeout_ticks: 4 must exceed protocol.resend_ticks"}},
		{"busy timeout under the timeout", minimal + "protocol:\n  busy_timeout_ticks: 50\n", nil,
			[]string{"protocol.busy_timeout_ticks: 50: want 0 (100 x timeout_ticks), -1 (none) or from protocol.timeout_ticks (100)"}},
		{"grant lapse under the resend ticks", minimal + "protocol:\n  grant_lapse_ticks: 2\n", nil,
			[]string{"protocol.grant_lapse_ticks: 2: want 0 (4 x resend_ticks), -1 (never) or from protocol.resend_ticks (5)"}},
		{"bad duration", minimal + "protocol:\n  tick: soon\n", nil, []string{"tick"}},
		{"icmp rate limit too fine", minimal + "protocol:\n  icmp_ratelimit: 10us\n", nil,
			[]string{"protocol.icmp_ratelimit: 10µs is out of range; allowed 1ms..1h0m0s"}},
		{"icmp burst 0", minimal + "protocol:\n  icmp_ratelimit_burst: 0\n  icmp_msgs_burst: 0\n", nil,
			[]string{"protocol.icmp_ratelimit_burst: 0 is out of range", "protocol.icmp_msgs_burst: 0 is out of range"}},
		{"icmp table too small", minimal + "protocol:\n  icmp_ratelimit_buckets: 8\n", nil,
			[]string{"protocol.icmp_ratelimit_buckets: 8 is out of range; allowed 16..16777216"}},
		{"bad log format", minimal + "log:\n  format: xml\n", nil, []string{"log.format", "json, console"}},
		{"bad fraction", minimal + "faults:\n  drop: 2\n", nil, []string{"faults.drop: 2 is out of range; allowed 0..1"}},
		{"bad neighbour", minimal + "neighbours:\n  - ip: 10.0.0.2\n    mac: zz\n", nil, []string{"neighbours[0].mac"}},
		{"bad metrics", minimal + "metrics:\n  address: 9464\n", nil, []string{"metrics.address", "host:port"}},
		{"bad memlimit", minimal + "runtime:\n  gomemlimit: lots\n", nil, []string{"runtime.gomemlimit", "512MiB"}},
		{"data room under the mtu", "ports:\n  - device: net_null0\n    address: 10.0.0.1/24\n    mtu: 9000\nmempool:\n  data_room: 4096\n", nil,
			[]string{"mempool.data_room: 4096 bytes cannot hold a frame of ports[0] (mtu 9000 + 18 = 9018)"}},
		{"no idle spin", minimal + "runtime:\n  idle_spin_passes: 0\n", nil, []string{"runtime.idle_spin_passes: 0"}},
		{"idle sleep too long", minimal + "runtime:\n  idle_max_sleep_us: 50000\n", nil, []string{"runtime.idle_max_sleep_us: 50000", "1..10000"}},
		{"relative socket", minimal + "workers:\n  socket: w.sock\n", nil, []string{"workers.socket", "absolute path"}},
		{"bad socket group", minimal + "workers:\n  socket_group: \"ml workers\"\n", nil, []string{"workers.socket_group", "neither a group name nor a numeric gid"}},
		{"no session cap", minimal + "workers:\n  max_sessions_per_uid: 0\n", nil, []string{"workers.max_sessions_per_uid: 0 is out of range"}},
		{"no backlog", minimal + "workers:\n  max_backlog: 0\n", nil, []string{"workers.max_backlog: 0 is out of range"}},
		{"linger past a minute", minimal + "workers:\n  linger: 2m\n", nil, []string{"workers.linger: 2m0s is out of range"}},
		{"backlog under the outstanding RPCs", minimal + "workers:\n  max_outstanding: 1024\n  max_backlog: 2000\n", nil,
			[]string{"workers.max_backlog: 2000 is under twice workers.max_outstanding (1024)", "at least 2048"}},
		{"yaml syntax", "ports: [\n", nil, []string{"homa.yaml"}},
		{"bad variant", minimal + "protocol:\n  variant: stripped\n", nil, []string{"protocol.variant", "full, upstream"}},
		{"bad checksum check", minimal + "protocol:\n  verify_checksum: some\n", nil, []string{"protocol.verify_checksum", "hijacked, all, none"}},
		{"peer without prefix", minimal + "peers:\n  - hijack: true\n", nil, []string{"peers[0].prefix: missing"}},
		{"address6 beside an IPv6 address", "ports:\n  - device: net_null0\n    address: 2001:db8::1/64\n    address6: 2001:db8::2/64\n", nil, []string{"ports[0].address6", "set beside an IPv6 address"}},
		{"IPv4 gateway on an IPv6-only port", "ports:\n  - device: net_null0\n    address: 2001:db8::1/64\n    gateway: 10.0.0.1\n", nil, []string{"ports[0].gateway", "IPv6-only port"}},
		{"link-local address", "ports:\n  - device: net_null0\n    address: fe80::1/64\n", nil, []string{"ports[0].address", "not a global or unique-local"}},
		{"IPv4 address in address6", minimal + "    address6: 10.0.0.7/24\n", nil, []string{"ports[0].address6", "not an IPv6 unicast"}},
		{"gateway6 off the prefix", minimal + "    address6: 2001:db8::1/64\n    gateway6: 2001:db9::1\n", nil, []string{"ports[0].gateway6", "neither link-local nor on"}},
		{"gateway6 without address6", minimal + "    gateway6: fe80::1\n", nil, []string{"ports[0].gateway6: set without"}},
		{"IPv6 gateway", minimal + "    gateway: 2001:db8::9\n", nil, []string{"ports[0].gateway", "not an IPv4 address"}},
		{"bad peer variant", minimal + "peers:\n  - prefix: 10.0.0.0/24\n    variant: old\n", nil, []string{"peers[0].variant", "auto, full, upstream, homa-dpdk"}},
		{"hijack while upstream", minimal + "protocol:\n  variant: upstream\npeers:\n  - prefix: 10.0.0.0/24\n    hijack: true\n", nil,
			[]string{"peers[0].hijack", "no hijack markers"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			wantLoadError(t, tc.body, tc.want)
		})
	}
}

// A bad value from the environment is blamed on its variable, not on the
// config file; HOMA_ variables that are not shaped like a key are left
// alone (the clients' HOMA_SOCKET).
func TestLoad_environmentBlamedNotTheFile(t *testing.T) {
	file := writeFile(t, minimal)
	for env, want := range map[string]string{
		"HOMA_PROTOCOL_MAX_OVERCOMMIT": "config: protocol.max_overcommit (set by HOMA_PROTOCOL_MAX_OVERCOMMIT): 0 is out of range",
		"HOMA_PROTOCOL_RESEND_TICKS":   "config: protocol.resend_ticks (set by HOMA_PROTOCOL_RESEND_TICKS): ",
	} {
		t.Run(env, func(t *testing.T) {
			v := "0"
			if env == "HOMA_PROTOCOL_RESEND_TICKS" {
				v = "often"
			}
			t.Setenv(env, v)
			_, err := Load(Source{File: file})
			if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), file) {
				t.Fatalf("%s=%s: got %v, want it to start %q and not name %s", env, v, err, want, file)
			}
		})
	}
	t.Setenv("HOMA_SOCKET", "/run/x.sock")
	t.Setenv("HOMA_NOT_A_SECTION_AT_ALL", "1")
	if _, err := Load(Source{File: file}); err != nil {
		t.Fatalf("HOMA_ variables that are not config-shaped: %v", err)
	}
}

// Addresses, MACs and rates are parsed once, into typed values.
func TestLoad_typedValues(t *testing.T) {
	s, err := Load(Source{File: writeFile(t, "ports:\n  - device: net_null0\n    address: 10.0.0.1/24\n    gateway: 10.0.0.254\n"+
		"    mac: \"02:00:00:00:00:07\"\n    link_speed: 25G\nruntime:\n  gomemlimit: 512MiB\n")})
	if err != nil {
		t.Fatal(err)
	}
	p := s.Ports[0]
	if p.Address != netip.MustParsePrefix("10.0.0.1/24") || p.Gateway != netip.MustParseAddr("10.0.0.254") ||
		p.MAC.String() != "02:00:00:00:00:07" || p.LinkSpeed != 25e9 || s.Runtime.GOMemLimit != 512<<20 {
		t.Errorf("port %+v, gomemlimit %d", p, s.Runtime.GOMemLimit)
	}
}

// A YAML syntax error names the file's line that holds it, not the line
// before the construct around it (yaml.v3's context mark, 0-based).
func TestLoad_yamlSyntaxErrorAtItsLine(t *testing.T) {
	head := "log:\n  level: info\nports:\n  - device: net_null0\n    address: 10.0.0.1/24\n"
	for _, tc := range []struct{ name, line6, want string }{
		{"dedented key", "   mtu: 1500", "line 6: did not find expected '-' indicator"},
		{"unclosed list", "protocol: {unsched_bytes: [1", "line 6: did not find expected ',' or ']'"},
		{"tab", "\tmtu: 1500", "line 6: found a tab character that violates indentation"},
		{"no colon", "    mtu 1500", "line 6: could not find expected ':'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, head+tc.line6+"\nlcores: [1]\n")
			_, err := Load(Source{File: file})
			if err == nil {
				t.Fatal("accepted")
			}
			if want := "config file " + file + ": " + tc.want; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("got %q, want it to start %q", err, want)
			}
		})
	}
}

// A typo'd key in the file is named with the key it is nearest, as a
// typo'd HOMA_ variable is, at its own level of the config.
func TestLoad_unknownKeyDidYouMean(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"nested", minimal + "protocol:\n  unsched_bytez: 10\n", "unknown key protocol.unsched_bytez: did you mean protocol.unsched_bytes?"},
		{"top", minimal + "protocl:\n  unsched_bytes: 10\n", "unknown key protocl: did you mean protocol?"},
		{"in a list", minimal + "    mtuu: 1500\n", "unknown key ports[0].mtuu: did you mean ports[0].mtu?"},
		{"nothing near", minimal + "protocol:\n  frobnicate: 1\n", "unknown key protocol.frobnicate (see "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, tc.body)
			_, err := Load(Source{File: file})
			if want := "config " + file + ": " + tc.want; err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("got %v, want it to start %q", err, want)
			}
		})
	}
}

// A single value in the file where a list is meant is refused, not
// taken as a one-element list: lcores: 2 may mean two lcores. The
// environment gives lists comma-separated, so HOMA_LCORES=2 is [2].
func TestLoad_scalarForListRefused(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"lcores", "lcores: 1\n" + minimal, "lcores: 1 is one value, not a list; write a YAML list, e.g. lcores: [1]"},
		{"eal", "eal: -l 0-1\n" + minimal, `eal: "-l 0-1" is one value, not a list; write a YAML list, e.g. eal: ["-l", "0-1", "--no-pci"]`},
		{"nested", minimal + "protocol:\n  unsched_cutoffs: 1000\n", "protocol.unsched_cutoffs: 1000 is one value, not a list; write a YAML list, e.g. protocol.unsched_cutoffs: [1000]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, tc.body)
			_, err := Load(Source{File: file})
			if want := "config file " + file + ": " + tc.want; err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("got %v, want it to start %q", err, want)
			}
		})
	}
	t.Setenv("HOMA_LCORES", "2")
	s, err := Load(Source{File: writeFile(t, "lcores: [1]\n"+minimal)})
	if err != nil {
		t.Fatalf("HOMA_LCORES=2: %v", err)
	}
	if l := s.Ports[0].Lcores; len(l) != 1 || l[0] != 2 { // folded in (Normalize)
		t.Fatalf("HOMA_LCORES=2: ports[0].lcores %v", l)
	}
}

// A bad number names the key, the value and what is wanted, not
// strconv's words.
func TestLoad_badNumberNamesKeyAndValue(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		env        map[string]string
		want       string
	}{
		{"file", minimal + "protocol:\n  unsched_bytes: 10k\n", nil, `protocol.unsched_bytes: "10k" is not an integer`},
		{"environment", minimal, map[string]string{"HOMA_PROTOCOL_UNSCHED_BYTES": "10k"},
			`protocol.unsched_bytes (set by HOMA_PROTOCOL_UNSCHED_BYTES): "10k" is not an integer`},
		{"fraction", minimal + "protocol:\n  max_incoming: 1.5\n", nil, "protocol.max_incoming: 1.5 is not an integer"},
		{"too large", minimal + "faults:\n  seed: \"99999999999999999999\"\n", nil, `faults.seed: "99999999999999999999" is out of range for an integer`},
		{"negative lcore", minimal, map[string]string{"HOMA_LCORES": "-1"}, `lcores[0] (set by HOMA_LCORES): "-1" is not a non-negative integer`},
		{"number", minimal + "faults:\n  drop: lots\n", nil, `faults.drop: "lots" is not a number`},
		{"bool", minimal + "protocol:\n  checksum: maybe\n", nil, `protocol.checksum: "maybe" is not true or false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := Load(Source{File: writeFile(t, tc.body)})
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "strconv") {
				t.Errorf("got %v, want it to say %q (and not strconv)", err, tc.want)
			}
		})
	}
}

func TestLoad_missingFileNamed(t *testing.T) {
	_, err := Load(Source{File: "/nonexistent/homa.yaml"})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/homa.yaml") {
		t.Fatalf("got %v", err)
	}
}

func TestLoad_flagForUnknownKeyRefused(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("bogus", "", "")
	_, err := Load(Source{File: writeFile(t, minimal), Flags: map[string]*pflag.Flag{"no.such": fs.Lookup("bogus")}})
	if err == nil || !strings.Contains(err.Error(), "--bogus") {
		t.Fatalf("got %v", err)
	}
}

func TestParseRateAndBytes(t *testing.T) {
	for in, want := range map[string]float64{"10G": 10e9, "25g": 25e9, "100M": 100e6, "400Gbps": 400e9, "1.5G": 1.5e9} {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "G", "-1G", "10X", "fast"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) accepted", bad)
		}
	}
	for in, want := range map[string]int64{"512MiB": 512 << 20, "2GiB": 2 << 30, "4096": 4096, "64KiB": 64 << 10, "10B": 10} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "MiB", "-5MiB", "5MB"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) accepted", bad)
		}
	}
}

// Each port's mbufs hold its largest frame: 2 KB up to MTU 2030, then the
// frame rounded up to a KB; an explicit data_room wins.
func TestMempool_dataRoomFor(t *testing.T) {
	for _, c := range []struct{ mtu, room, want int }{
		{1500, 0, 2048}, {2030, 0, 2048}, {2031, 0, 3072}, {9000, 0, 9216}, {9000, 16352, 16352},
	} {
		if got := (MempoolSpec{DataRoom: c.room}).DataRoomFor(c.mtu); got != c.want {
			t.Errorf("mtu %d, data_room %d: %d, want %d", c.mtu, c.room, got, c.want)
		}
	}
}

// longMessages is a config for 64 MiB messages between the homa-dpdk
// peers of 10.0.0.0/24: regions sized for one each way.
const longMessages = minimal + `protocol:
  max_message: 67108864
  long_message_peers: [10.0.0.0/24]
workers:
  max_bytes: 67108864
  pool_bytes: 67108864
`

// TestLoad_longMessages: protocol.max_message up to 2^31 − 1 with
// workers, towards the peers long_message_peers names; the rest stay at
// kernel Homa's 1,000,000 bytes.
func TestLoad_longMessages(t *testing.T) {
	s, err := Load(Source{File: writeFile(t, longMessages)})
	if err != nil {
		t.Fatal(err)
	}
	h := &s.Protocol
	if h.MaxMessage != 64<<20 || len(h.LongMessagePeers) != 1 || !h.TakesLongMessages(netip.AddrFrom4([4]byte{10, 0, 0, 9})) || h.TakesLongMessages(netip.AddrFrom4([4]byte{10, 0, 1, 9})) {
		t.Errorf("max_message %d, long_message_peers %v", h.MaxMessage, h.LongMessagePeers)
	}
	t.Setenv("HOMA_PROTOCOL_LONG_MESSAGE_PEERS", "10.0.1.0/24,10.0.2.7/32")
	s, err = Load(Source{File: writeFile(t, longMessages)})
	if err != nil {
		t.Fatal(err)
	}
	if h := &s.Protocol; len(h.LongMessagePeers) != 2 || !h.TakesLongMessages(netip.AddrFrom4([4]byte{10, 0, 2, 7})) || h.TakesLongMessages(netip.AddrFrom4([4]byte{10, 0, 0, 9})) {
		t.Errorf("from the environment: %v", h.LongMessagePeers)
	}
	t.Setenv("HOMA_PROTOCOL_LONG_MESSAGE_PEERS", "")
	// Without workers, the regions need not hold it.
	s, err = Load(Source{File: writeFile(t, minimal+"protocol:\n  max_message: 2147483647\n  long_message_peers: [0.0.0.0/0]\n  max_recv_heap_bytes: 4294967296\nworkers:\n  enabled: false\n")})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Protocol.TakesLongMessages(netip.AddrFrom4([4]byte{192, 168, 1, 1})) {
		t.Error("0.0.0.0/0 does not name every peer")
	}
	// The defaults are kernel Homa's: no peer takes long messages.
	s, err = Load(Source{File: writeFile(t, minimal)})
	if err != nil || s.Protocol.TakesLongMessages(netip.AddrFrom4([4]byte{10, 0, 0, 2})) {
		t.Fatalf("defaults: %v, %v", err, s.Protocol.LongMessagePeers)
	}
}

// TestLoad_longMessagesRefused: a max_message the arena, the pool or the
// heap budget cannot hold, or above 1,000,000 with no peer to take it, is
// refused at load, naming the key and what would do.
func TestLoad_longMessagesRefused(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"no long-message peer", minimal + "protocol:\n  max_message: 1000001\n",
			[]string{"protocol.max_message: 1000001 is above kernel Homa's 1000000 bytes", "protocol.long_message_peers", "0.0.0.0/0"}},
		{"arena too small", strings.Replace(longMessages, "  max_bytes: 67108864\n", "", 1),
			[]string{"workers.max_bytes: 16777216 bytes of transmit arena cannot hold one message of protocol.max_message (67108864 bytes); raise it to at least 67108864"}},
		{"pool too small", strings.Replace(longMessages, "  pool_bytes: 67108864\n", "  pool_bytes: 67043328\n", 1),
			[]string{"workers.pool_bytes: 67043328 bytes of receive pool cannot hold one message of protocol.max_message (67108864 bytes: 1024 pages of 64 KiB); raise it to at least 67108864"}},
		{"pool a page short of a message that is not whole pages", minimal + "protocol:\n  max_message: 1000000\nworkers:\n  pool_bytes: 983040\n",
			[]string{"workers.pool_bytes: 983040", "16 pages of 64 KiB", "at least 1048576"}},
		{"heap budget too small", strings.Replace(longMessages, "workers:", "  max_recv_heap_bytes: 33554432\nworkers:", 1),
			[]string{"protocol.max_recv_heap_bytes: 33554432 bytes cannot hold one message of protocol.max_message (67108864 bytes)"}},
		{"above the limit", minimal + "protocol:\n  max_message: 2147483648\n  long_message_peers: [0.0.0.0/0]\nworkers:\n  enabled: false\n",
			[]string{"protocol.max_message: 2147483648 is out of range; allowed 1..2147483647"}},
		{"bad peer prefix", minimal + "protocol:\n  long_message_peers: [10.0.0.300/24]\n",
			[]string{"long_message_peers", "not an IP address/prefix"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantLoadError(t, tc.body, tc.want)
		})
	}
}

// wantLoadError loads body and wants an error that says each of want.
func wantLoadError(t *testing.T, body string, want []string) {
	t.Helper()
	_, err := Load(Source{File: writeFile(t, body)})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

// ports[].lcores: a port's shards, which stand in for its entry in the
// top-level lcores, with workers or without.
func TestLoad_portShards(t *testing.T) {
	s, err := Load(Source{File: writeFile(t, "ports:\n  - device: net_null0\n    address: 10.0.0.1/24\n    lcores: [1, 2]\nworkers:\n  enabled: false\n")})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Ports[0].Lcores; len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("ports[0].lcores %v", got)
	}
	if _, err = Load(Source{File: writeFile(t, "ports:\n  - device: net_null0\n    address: 10.0.0.1/24\n    lcores: [1, 2]\nworkers:\n  enabled: true\n")}); err != nil {
		t.Errorf("workers on two shards: %v", err)
	}
}
