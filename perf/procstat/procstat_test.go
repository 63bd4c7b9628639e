package procstat

import (
	"strings"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	// A command name with a space and a parenthesis in it.
	line := "4242 (homa (x) y) R 1 4242 4242 0 -1 4194304 1234 0 5 0 301 27 0 0 20 0 7 0 100 0 0\n"
	c, err := ParseStat([]byte(line))
	if err != nil || c != (Counters{MinFlt: 1234, MajFlt: 5, UTime: 301, STime: 27}) {
		t.Errorf("got %+v, %v", c, err)
	}
	if _, err := ParseStat([]byte("4242 (short) R 1 2")); err == nil {
		t.Error("parsed a short line")
	}
}

func TestParseRegionSmaps(t *testing.T) {
	smaps := `7f0000000000-7f0010200000 rw-s 00000000 00:10 77                         /memfd:homa-worker (deleted)
Size:             264192 kB
KernelPageSize:     2048 kB
MMUPageSize:        2048 kB
Rss:                   0 kB
Shared_Hugetlb:    12288 kB
Private_Hugetlb:       0 kB
VmFlags: rd wr sh mr mw me ms de ht sd
7f1000000000-7f1000021000 rw-p 00000000 00:00 0                          [heap]
Size:                132 kB
KernelPageSize:        4 kB
Rss:                 100 kB
7f2000000000-7f2010200000 rw-s 00000000 00:01 78                         /memfd:homa-worker (deleted)
Size:             264192 kB
KernelPageSize:     2048 kB
Rss:                   0 kB
Shared_Hugetlb:     4096 kB
Private_Hugetlb:       0 kB
`
	m := parseRegionSmaps(strings.NewReader(smaps))
	if m != (RegionMem{Mappings: 2, SizeKB: 2 * 264192, ResidentKB: 16384, PageKB: 2048, Hugetlb: true}) {
		t.Errorf("hugetlb: %+v", m)
	}
	small := strings.ReplaceAll(strings.ReplaceAll(smaps, "KernelPageSize:     2048", "KernelPageSize:        4"), "Shared_Hugetlb", "Rss")
	m = parseRegionSmaps(strings.NewReader(small))
	if m.Hugetlb || m.PageKB != 4 || m.Mappings != 2 || m.Pages() != "4 KB" {
		t.Errorf("4 KB pages: %+v", m)
	}
	if m := parseRegionSmaps(strings.NewReader("")); m.Mappings != 0 || m.Hugetlb || m.Pages() != "?" {
		t.Errorf("none: %+v", m)
	}
}

func TestParseSwitches(t *testing.T) {
	status := "Name:\trte-worker-1\nState:\tR (running)\nvoluntary_ctxt_switches:\t60\nnonvoluntary_ctxt_switches:\t13\n"
	if v, n, err := parseSwitches(status); v != 60 || n != 13 || err != nil {
		t.Errorf("got %d, %d, %v", v, n, err)
	}
	if _, _, err := parseSwitches("Name:\tx\n"); err == nil {
		t.Error("parsed a status without switch counts")
	}
}
