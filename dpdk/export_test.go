package dpdk

// IntrFixBound is intrFixBound, for the external tests.
func IntrFixBound() bool { return intrFixBound() }
