package perf

import "testing"

func TestSendBytes_copiesPerByte(t *testing.T) {
	after, before := SendBytes{Copied: 11, ZeroCopy: 3003}, SendBytes{Copied: 10, ZeroCopy: 3}
	d := after.Sub(before)
	if d != (SendBytes{Copied: 1, ZeroCopy: 3000}) || d.Total() != 3001 || d.CopiesPerByte() != 1.0/3001 {
		t.Errorf("%+v: %d bytes, %v copies per byte", d, d.Total(), d.CopiesPerByte())
	}
	if f := (SendBytes{}).CopiesPerByte(); f != 0 {
		t.Errorf("nothing sent: %v copies per byte", f)
	}
}
