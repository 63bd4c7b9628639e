package sched

import "testing"

func TestIncast_allowanceShrinksWithBacklog(t *testing.T) {
	c := NewIncast(DefaultIncastConfig())
	if c.Allowance() != 40_000 {
		t.Fatalf("idle allowance %d", c.Allowance())
	}
	// Nine responders at 40,000 each leave 40,000 of the budget.
	c.Add(9 * 40_000)
	if a := c.Allowance(); a != 40_000 {
		t.Fatalf("one full allowance left: %d", a)
	}
	c.Add(30_000)
	if a := c.Allowance(); a != 9984 {
		t.Fatalf("10,000 left: %d", a)
	}
	c.Add(1_000_000)
	if a := c.Allowance(); a != 1408 {
		t.Fatalf("floor: %d", a)
	}
	c.Add(-2_000_000)
	if c.Backlog() != 0 || c.Allowance() != 40_000 {
		t.Fatalf("after drain: backlog %d allowance %d", c.Backlog(), c.Allowance())
	}
}

// TestIncast_burstBoundedByBudget: with the allowance each new request
// carries, the unscheduled bytes N simultaneous responders may send stay
// within Budget + N × MinAllowance, instead of N × unsched_bytes.
func TestIncast_burstBoundedByBudget(t *testing.T) {
	cfg := DefaultIncastConfig()
	for _, n := range []int{5, 50, 500} {
		c := NewIncast(cfg)
		burst := 0
		for range n {
			a := c.Allowance() // carried by the request
			c.Add(a)           // expected until the response starts
			burst += a
		}
		if limit := cfg.Budget + n*cfg.MinAllowance; burst > limit {
			t.Errorf("%d responders: burst %d > %d", n, burst, limit)
		}
		if n == 5 && burst != 5*40_000 {
			t.Errorf("a small fan-in was limited: %d", burst)
		}
	}
}

func TestIncast_disabled(t *testing.T) {
	c := NewIncast(IncastConfig{UnschedBytes: 40_000})
	c.Add(1 << 30)
	if c.Allowance() != 40_000 {
		t.Fatal("Budget 0 must disable incast control")
	}
}

func TestAllowance_encoding(t *testing.T) {
	for _, a := range []int{0, 64, 1408, 40_000, MaxAllowance} {
		got, ok := DecodeAllowance(EncodeAllowance(a))
		if !ok || got != a {
			t.Errorf("round trip %d: %d %v", a, got, ok)
		}
	}
	if _, ok := DecodeAllowance([3]byte{}); ok {
		t.Error("kernel zeros decoded as an allowance")
	}
	if got, _ := DecodeAllowance(EncodeAllowance(MaxAllowance + 1000)); got != MaxAllowance {
		t.Error("no clamp")
	}
}
