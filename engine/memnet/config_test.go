package memnet

import (
	"errors"
	"testing"
)

func TestConfig_defaults(t *testing.T) {
	c := New(Config{}).Config()
	if c.LinkBps != 10e9 || c.PropDelay != 250 || c.BufferBytes != 1<<20 || c.Queues != 8 ||
		c.ReorderDelay != DefaultReorderDelay {
		t.Errorf("defaults: %+v", c)
	}
	if c := New(Config{PropDelay: -1}).Config(); c.PropDelay != 0 {
		t.Errorf("PropDelay -1 gave %d, want 0", c.PropDelay)
	}
}

func TestConfig_validate(t *testing.T) {
	for _, c := range []Config{
		{LinkBps: -1}, {LinkBps: 0.5}, {Queues: 9}, {Queues: -1}, {Loss: 1.5},
		{Reorder: -0.1}, {Duplicate: 2}, {ReorderDelay: -5}, {FrameOverhead: -1}, {HostDelay: -1}, {RecvDelay: -1},
	} {
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("Validate(%+v) = %v, want ErrConfig", c, err)
		}
	}
	if err := (Config{Loss: 1, Queues: 1, FIFO: true}).Validate(); err != nil {
		t.Errorf("valid config rejected: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("New with an invalid config did not panic")
		}
	}()
	New(Config{Loss: -1})
}
