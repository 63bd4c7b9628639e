package nicq

import (
	"strings"
	"testing"
)

func TestNewMap_queueCounts(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string // queues of priorities 7..0
	}{
		{8, "0,1,2,3,4,5,6,7"},
		{16, "0,1,2,3,4,5,6,7"},
		{4, "0,1,2,3,3,3,3,3"},
		{2, "0,1,1,1,1,1,1,1"},
		{1, "0,0,0,0,0,0,0,0"},
	} {
		m, err := NewMap(tc.n)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.String(); got != tc.want {
			t.Errorf("NewMap(%d) = %s, want %s", tc.n, got, tc.want)
		}
		if m.Queues() != min(tc.n, 8) {
			t.Errorf("NewMap(%d).Queues() = %d", tc.n, m.Queues())
		}
	}
	if _, err := NewMap(0); err == nil {
		t.Error("NewMap(0) accepted")
	}
}

func TestParseMap_validAndErrorsNameTheProblem(t *testing.T) {
	m, err := ParseMap("0,0,1,1,2,2,3,3", 4)
	if err != nil {
		t.Fatal(err)
	}
	if m.Queue(7) != 0 || m.Queue(4) != 1 || m.Queue(0) != 3 || m.Queues() != 4 {
		t.Errorf("map %s", m)
	}
	if m.Queue(-3) != 3 || m.Queue(99) != 0 {
		t.Error("out-of-range priorities are not clamped")
	}
	for _, tc := range []struct{ in, want string }{
		{"0,1,2", "want 8 queue numbers"},
		{"0,1,2,3,4,5,6,x", `priority 0: "x" is not a queue number`},
		{"0,1,2,3,4,5,6,9", "priority 0 on queue 9, but the port has queues 0..7"},
		{"1,0,2,3,4,5,6,7", "priority 6 on queue 0, served before the higher priority 7 on queue 1"},
	} {
		_, err := ParseMap(tc.in, 8)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseMap(%q): %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestParseMarking(t *testing.T) {
	if m, err := ParseMarking("pcp"); err != nil || m != MarkPCP || m.String() != "pcp" {
		t.Errorf("pcp: %v %v", m, err)
	}
	if m, err := ParseMarking("dscp"); err != nil || m != MarkDSCP {
		t.Errorf("dscp: %v %v", m, err)
	}
	if _, err := ParseMarking("tos"); err == nil || !strings.Contains(err.Error(), "dscp or pcp") {
		t.Errorf("tos: %v", err)
	}
}
