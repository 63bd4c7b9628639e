package dpdk

// IntrFixBound is intrFixBound, for the external tests.
func IntrFixBound() bool { return intrFixBound() }

// QuietHarmless and MemoryHint are quietHarmless and memoryHint, for the
// external tests.
var (
	QuietHarmless = quietHarmless
	MemoryHint    = memoryHint
)
