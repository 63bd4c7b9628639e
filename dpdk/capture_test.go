package dpdk

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pcapngRecord is what readPcapng finds in an Enhanced Packet Block.
type pcapngRecord struct {
	iface int
	ts    int64
	dir   Direction
	data  []byte
	orig  int
}

// readPcapng parses the files Capture writes (little-endian, one
// section), checking every block's framing.
func readPcapng(t *testing.T, path string) (ifaces []string, recs []pcapngRecord) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	for off := 0; off < len(b); {
		typ, l := le.Uint32(b[off:]), int(le.Uint32(b[off+4:]))
		if l%4 != 0 || off+l > len(b) || int(le.Uint32(b[off+l-4:])) != l {
			t.Fatalf("block at %d: bad length %d", off, l)
		}
		body := b[off+8 : off+l-4]
		switch typ {
		case blockSHB:
			if le.Uint32(body) != byteOrderMagic {
				t.Fatal("bad byte-order magic")
			}
		case blockIDB:
			if le.Uint16(body) != linkTypeEthernet {
				t.Fatal("link type is not Ethernet")
			}
			name := ""
			for o := 8; o+4 <= len(body); {
				code, ol := le.Uint16(body[o:]), int(le.Uint16(body[o+2:]))
				if code == optIfName {
					name = string(body[o+4 : o+4+ol])
				}
				if code == optIfTsresol && body[o+4] != 9 {
					t.Fatal("timestamps are not in ns")
				}
				o += 4 + pad4(ol)
			}
			ifaces = append(ifaces, name)
		case blockEPB:
			capLen := int(le.Uint32(body[12:]))
			r := pcapngRecord{
				iface: int(le.Uint32(body)),
				ts:    int64(le.Uint32(body[4:]))<<32 | int64(le.Uint32(body[8:])),
				orig:  int(le.Uint32(body[16:])),
				data:  body[20 : 20+capLen],
			}
			opts := body[20+pad4(capLen):]
			if le.Uint16(opts) == optEPBFlags {
				r.dir = Direction(le.Uint32(opts[4:]) & 3)
			}
			recs = append(recs, r)
		default:
			t.Fatalf("unexpected block type %#x", typ)
		}
		off += l
	}
	return ifaces, recs
}

func frame(i int) []byte {
	b := make([]byte, 60+i%7)
	copy(b, []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xb5})
	binary.BigEndian.PutUint32(b[14:], uint32(i))
	return b
}

func TestCapture_streamRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.pcapng")
	c, err := NewCapture(path, []string{"net_a", "net_b"}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	const n = 50_000 // several chunks
	for i := range n {
		dir := Inbound
		if i%2 == 1 {
			dir = Outbound
		}
		c.Record(i%2, dir, 1_700_000_000_000_000_000+int64(i), frame(i))
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	ifaces, recs := readPcapng(t, path)
	if strings.Join(ifaces, ",") != "net_a,net_b" {
		t.Errorf("interfaces %v", ifaces)
	}
	if len(recs)+int(c.Dropped()) != n || c.Captured() != uint64(len(recs)) {
		t.Fatalf("%d records + %d dropped, want %d", len(recs), c.Dropped(), n)
	}
	for _, r := range recs {
		i := int(binary.BigEndian.Uint32(r.data[14:]))
		want := Inbound
		if i%2 == 1 {
			want = Outbound
		}
		if !bytes.Equal(r.data, frame(i)) || r.iface != i%2 || r.dir != want || r.ts != 1_700_000_000_000_000_000+int64(i) {
			t.Fatalf("record %d: iface %d dir %d ts %d", i, r.iface, r.dir, r.ts)
		}
	}
	tsharkCheck(t, path, len(recs))
}

func TestCapture_lastNKeepsNewestInOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "last.pcapng")
	c, err := NewCapture(path, []string{"p0"}, 32, 10)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 25 {
		c.Record(0, Inbound, int64(i), frame(i))
	}
	c.Record(5, Inbound, 0, frame(0)) // no such interface: dropped
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	_, recs := readPcapng(t, path)
	if len(recs) != 10 || c.Dropped() != 1 {
		t.Fatalf("%d records, %d dropped", len(recs), c.Dropped())
	}
	for k, r := range recs {
		i := 15 + k
		if int(binary.BigEndian.Uint32(r.data[14:])) != i || len(r.data) != 32 || r.orig != len(frame(i)) {
			t.Errorf("record %d: seq %d len %d orig %d", k, binary.BigEndian.Uint32(r.data[14:]), len(r.data), r.orig)
		}
	}
	tsharkCheck(t, path, 10)
}

// With a size bound and three files, the capture rotates: FILE, FILE.1
// and FILE.2 hold the newest packets in order, each within the bound; with
// one file it stops at the bound and counts the rest as dropped.
func TestCapture_sizeLimitRotatesOrStops(t *testing.T) {
	const limit = 1 << 20
	record := func(c *Capture, n int) {
		for i := range n {
			c.Record(0, Inbound, int64(i), frame(i))
			if i%2000 == 0 {
				time.Sleep(2 * time.Millisecond) // the writer keeps up: nothing dropped for being behind
			}
		}
	}
	path := filepath.Join(t.TempDir(), "rot.pcapng")
	c, err := NewCapture(path, []string{"p0"}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.LimitSize(limit, 3); err != nil {
		t.Fatal(err)
	}
	record(c, 60_000) // about 6 MiB of records
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if c.Dropped() != 0 {
		t.Fatalf("%d dropped while rotating", c.Dropped())
	}
	if _, err := os.Stat(path + ".3"); !os.IsNotExist(err) {
		t.Fatalf("a fourth file was kept: %v", err)
	}
	last := int64(-1)
	total := 0
	for _, p := range []string{path + ".2", path + ".1", path} { // oldest first
		st, err := os.Stat(p)
		if err != nil || st.Size() > limit+1024 {
			t.Fatalf("%s: %v, size %d over the bound", p, err, st.Size())
		}
		_, recs := readPcapng(t, p)
		for _, r := range recs {
			if r.ts <= last {
				t.Fatalf("%s: record at %d after %d", p, r.ts, last)
			}
			last = r.ts
		}
		total += len(recs)
	}
	if last != 59_999 || total >= 60_000 || total < 20_000 {
		t.Fatalf("kept %d records, the newest at %d", total, last)
	}

	path = filepath.Join(t.TempDir(), "stop.pcapng")
	if c, err = NewCapture(path, []string{"p0"}, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.LimitSize(limit, 1); err != nil {
		t.Fatal(err)
	}
	record(c, 30_000)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	_, recs := readPcapng(t, path)
	if st, _ := os.Stat(path); st.Size() > limit+1024 || len(recs)+int(c.Dropped()) != 30_000 || c.Dropped() == 0 {
		t.Fatalf("one file: %d bytes, %d records, %d dropped", st.Size(), len(recs), c.Dropped())
	}
	if err := c.LimitSize(1000, 2); err == nil {
		t.Error("a bound under one chunk accepted")
	}
}

func TestCapture_recordNoAllocs(t *testing.T) {
	c, err := NewCapture(filepath.Join(t.TempDir(), "a.pcapng"), []string{"p0"}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := frame(1)
	if a := testing.AllocsPerRun(10000, func() { c.Record(0, Inbound, 1, f) }); a != 0 {
		t.Errorf("Record allocates %.1f times", a)
	}
}

func TestCapture_badArguments(t *testing.T) {
	if _, err := NewCapture(filepath.Join(t.TempDir(), "x"), nil, 0, 0); err == nil {
		t.Error("no interface accepted")
	}
	if _, err := NewCapture("/nonexistent/dir/x.pcapng", []string{"a"}, 0, 0); err == nil || !strings.Contains(err.Error(), "/nonexistent/dir") {
		t.Errorf("bad path: %v", err)
	}
}

// tsharkCheck has tshark count the packets, when it is installed.
func tsharkCheck(t *testing.T, path string, want int) {
	t.Helper()
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Log("tshark not installed: file checked by the test's own reader only")
		return
	}
	out, err := exec.Command("tshark", "-r", path, "-T", "fields", "-e", "frame.number").Output()
	if err != nil {
		t.Fatalf("tshark -r %s: %v", path, err)
	}
	if got := len(strings.Fields(string(out))); got != want {
		t.Errorf("tshark read %d packets, want %d", got, want)
	}
	fmt.Fprintf(os.Stderr, "tshark read %s: %d packets\n", filepath.Base(path), want)
}
