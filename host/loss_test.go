package host

import (
	"math/rand/v2"
	"testing"
)

func TestHostLoop_rpcsSurviveInjectedLoss(t *testing.T) {
	a, b := ringHosts(t, 4, 0.02)
	sizes := make([]int, 60)
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range sizes {
		sizes[i] = 1 + rng.IntN(200_000)
	}
	runRPCs(t, a, b, sizes)
	if a.fault.Dropped+b.fault.Dropped == 0 || a.fault.Reordered+b.fault.Reordered == 0 {
		t.Errorf("no fault was injected: drops %d/%d reorders %d/%d", a.fault.Dropped, b.fault.Dropped, a.fault.Reordered, b.fault.Reordered)
	}
}
