package client

import "testing"

func TestParseAddr(t *testing.T) {
	a, err := ParseAddr("10.0.0.2:99")
	if err != nil || a != (Addr{IP: [4]byte{10, 0, 0, 2}, Port: 99}) {
		t.Fatalf("got %+v, %v", a, err)
	}
	if s := a.String(); s != "10.0.0.2:99" {
		t.Errorf("String %q", s)
	}
	if a, err := ParseAddr("[::ffff:1.2.3.4]:5"); err != nil || a.String() != "1.2.3.4:5" {
		t.Errorf("v4-mapped: %v, %v", a, err)
	}
	for _, bad := range []string{"", "10.0.0.2", "10.0.0.2:", "10.0.0.2:70000", "[::1]:9", "host:9"} {
		if _, err := ParseAddr(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
