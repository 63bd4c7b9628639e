package daemon

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"github.com/rs/zerolog"
)

// A daemon on a memif pair (both ends in this process, as the demo's)
// starts with the pair's shared regions resident: every page of every
// mapping of them is in memory before the loop runs, so the loop takes no
// page fault when the rings first reach a buffer (the warm-up penalty
// that perf starts measured on memif: a fault every other packet per ring
// for the first ~1,000 RPCs).
func TestStart_memifRegionsResident(t *testing.T) {
	dpdktest.Need(t)
	sock := filepath.Join(t.TempDir(), "memif.sock")
	spec, err := config.Load(config.Source{YAML: fmt.Sprintf(`lcores: [1, 1]
ports:
  - device: "net_memif_res0,role=server,id=0,socket=%[1]s,socket-abstract=no"
    address: 10.0.0.1/24
  - device: "net_memif_res1,role=client,id=0,socket=%[1]s,socket-abstract=no"
    address: 10.0.0.2/24
metrics:
  address: ""
log:
  level: warn
`, sock)})
	if err != nil {
		t.Fatal(err)
	}
	d, err := Start(spec, zerolog.Nop(), Options{SkipEAL: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := d.Stop(); err != nil {
			t.Error(err)
		}
	}()
	maps := memifMappings(t)
	if len(maps) < 2 {
		t.Fatalf("%d memif region mappings, want both ends' (2 or more)", len(maps))
	}
	for _, m := range maps {
		if m.rssKB != m.sizeKB {
			t.Errorf("memif region mapping %s: %d of %d kB resident", m.addr, m.rssKB, m.sizeKB)
		}
	}
}

// memifMapping is a mapping of a memif region in /proc/self/smaps.
type memifMapping struct {
	addr          string
	sizeKB, rssKB int64
}

func memifMappings(t *testing.T) []memifMapping {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []memifMapping
	var cur *memifMapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 5 && !strings.HasSuffix(fields[0], ":"): // a mapping's header
			cur = nil
			if len(fields) >= 6 && strings.Contains(fields[5], "memfd:memif_region_") {
				out = append(out, memifMapping{addr: fields[0]})
				cur = &out[len(out)-1]
			}
		case cur != nil && len(fields) >= 2 && (fields[0] == "Size:" || fields[0] == "Rss:"):
			v, _ := strconv.ParseInt(fields[1], 10, 64)
			if fields[0] == "Size:" {
				cur.sizeKB = v
			} else {
				cur.rssKB = v
			}
		}
	}
	return out
}
