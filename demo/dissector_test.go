package demo

import (
	"encoding/hex"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/wire"
)

// dissectorFields are the fields the test reads with tools/wireshark/
// homa.lua, and how to get each from the packet's bytes with package wire
// ("" where the packet's type has no such field).
var dissectorFields = []struct {
	name string
	want func(h wire.Common) string
}{
	{"homa.type", func(h wire.Common) string { return strconv.Itoa(int(h.Type())) }},
	{"homa.sport", func(h wire.Common) string { return strconv.Itoa(int(h.SrcPort())) }},
	{"homa.dport", func(h wire.Common) string { return strconv.Itoa(int(h.DstPort())) }},
	{"homa.sender_id", func(h wire.Common) string { return strconv.FormatUint(h.SenderID(), 10) }},
	{"homa.data.message_length", ifType(wire.TypeData, func(h wire.Common) uint64 { return uint64(wire.Data(h).MessageLength()) })},
	{"homa.data.incoming", ifType(wire.TypeData, func(h wire.Common) uint64 { return uint64(wire.Data(h).Incoming()) })},
	{"homa.data.offset", ifType(wire.TypeData, func(h wire.Common) uint64 { return uint64(wire.Data(h).Offset()) })},
	{"homa.data.retransmit", ifType(wire.TypeData, func(h wire.Common) uint64 { return uint64(wire.Data(h).Retransmit()) })},
	{"homa.grant.offset", ifType(wire.TypeGrant, func(h wire.Common) uint64 { return uint64(wire.Grant(h).Offset()) })},
	{"homa.grant.priority", ifType(wire.TypeGrant, func(h wire.Common) uint64 { return uint64(wire.Grant(h).Priority()) })},
	{"homa.resend.offset", ifType(wire.TypeResend, func(h wire.Common) uint64 { return uint64(wire.Resend(h).Offset()) })},
	{"homa.resend.length", ifType(wire.TypeResend, func(h wire.Common) uint64 { return uint64(wire.Resend(h).Length()) })},
	{"homa.resend.priority", ifType(wire.TypeResend, func(h wire.Common) uint64 { return uint64(wire.Resend(h).Priority()) })},
	{"homa.ack.num_acks", ifType(wire.TypeAck, func(h wire.Common) uint64 { return uint64(wire.Ack(h).NumAcks()) })},
}

func ifType(t wire.PacketType, get func(wire.Common) uint64) func(wire.Common) string {
	return func(h wire.Common) string {
		if h.Type() != t {
			return ""
		}
		return strconv.FormatUint(get(h), 10)
	}
}

// checkDissector: the Wireshark dissector (tools/wireshark/homa.lua)
// decodes the demo's capture (TestRunDemo_homaHostsExchangeRPCs, lossy so
// that RESENDs show): every DATA, GRANT, RESEND, NEED_ACK and ACK
// packet's fields, as tshark prints them, are what package wire reads
// from the same bytes.
func checkDissector(t *testing.T, capture string) {
	// The bytes of each Homa packet, from tshark without the dissector
	// (protocol 146 is then undissected data).
	// (protocol 146 is then undissected data), and the IPv4 length (the
	// capture keeps 128 bytes of each: the headers).
	raw, err := exec.Command("tshark", "-r", capture, "-Y", "ip.proto == 146", "-T", "fields",
		"-e", "frame.number", "-e", "ip.len", "-e", "ip.hdr_len", "-e", "data.data").Output()
	if err != nil {
		t.Fatalf("tshark -r %s: %v", capture, err)
	}
	packets := map[string]wire.Common{}
	payload := map[string]string{} // DATA's payload length as sent
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		cols := strings.Split(l, "\t")
		b, err := hex.DecodeString(cols[len(cols)-1])
		if err != nil || len(cols) != 4 || len(b) < wire.CommonHeaderLen {
			t.Fatalf("frame %s: %q", cols[0], l)
		}
		packets[cols[0]] = wire.Common(b)
		ipLen, _ := strconv.Atoi(cols[1])
		hdrLen, _ := strconv.Atoi(cols[2])
		if wire.Common(b).Type() == wire.TypeData {
			payload[cols[0]] = strconv.Itoa(ipLen - hdrLen - wire.DataHeaderLen)
		}
	}
	// The same packets through the dissector.
	lua, err := filepath.Abs("../tools/wireshark/homa.lua")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-X", "lua_script:" + lua, "-r", capture, "-Y", "homa", "-T", "fields", "-E", "occurrence=f", "-e", "frame.number"}
	for _, f := range dissectorFields {
		args = append(args, "-e", f.name)
	}
	args = append(args, "-e", "homa.data.payload_length")
	cmd := exec.Command("tshark", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	dissected, err := cmd.Output()
	if err != nil || strings.Contains(stderr.String(), "Lua") {
		t.Fatalf("tshark with the dissector: %v\n%s", err, stderr.String())
	}
	seen := map[wire.PacketType]int{}
	lines := strings.Split(strings.TrimRight(string(dissected), "\n"), "\n") // a row's last field may be empty
	for _, l := range lines {
		cols := strings.Split(l, "\t")
		h, ok := packets[cols[0]]
		if !ok || len(cols) != len(dissectorFields)+2 {
			t.Fatalf("dissected frame %q: not a Homa packet, or %d columns", l, len(cols))
		}
		seen[h.Type()]++
		for i, f := range dissectorFields {
			got := cols[i+1]
			if n, err := strconv.ParseUint(got, 0, 64); err == nil {
				got = strconv.FormatUint(n, 10) // the type prints in hex
			}
			if want := f.want(h); got != want {
				t.Errorf("frame %s (%s): %s is %q, wire reads %q", cols[0], h.Type(), f.name, cols[i+1], want)
			}
		}
		if got, want := cols[len(cols)-1], payload[cols[0]]; got != want {
			t.Errorf("frame %s (%s): homa.data.payload_length is %q, the IPv4 length says %q", cols[0], h.Type(), got, want)
		}
	}
	if len(lines) != len(packets) {
		t.Errorf("the dissector took %d of the %d Homa packets", len(lines), len(packets))
	}
	for _, typ := range []wire.PacketType{wire.TypeData, wire.TypeGrant, wire.TypeResend, wire.TypeNeedAck, wire.TypeAck} {
		if seen[typ] == 0 {
			t.Errorf("no %s packet in the capture (seen: %v)", typ, seen)
		}
	}
	t.Log(fmt.Sprintf("%d packets checked field by field: %v", len(lines), seen))
}
