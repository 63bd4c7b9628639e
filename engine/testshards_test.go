package engine

import (
	"os"
	"strconv"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/engine/memnet"
)

// HOMA_TEST_SHARDS runs the engine's memnet suites with every host of
// that many shards (Config.Shard: endpoints of one address on one memnet
// host, each frame steered to its owner by FrameShard, acks handed over,
// a grant view and a link clock between them). ./scripts/test.sh runs
// them a second time with HOMA_TEST_SHARDS=2.
//
// What honours it: the suites whose assertions are about behaviour
// (every RPC completes byte for byte, no request runs twice, no state
// remains, the bounds hold), built on newScenario
// (TestScenario_lossReorderDuplication, TestLongMessage_memnetWithLoss),
// on newHostileMix (TestHostile_mixWhileClientCompletes: its server
// sharded, its client one endpoint, see newHostileMix), on
// newSlowdownRun (TestSlowdown_*) and on newTrickleRun
// (TestTrickle_peerKeepsNoMoreThanItsShare: its server sharded, its
// client one endpoint); TestTestShards_knobHonoured checks that it
// took. The *OnTwoShards tests shard their hosts whatever it says.
//
// What does not, and why:
//   - the suites on testNet (helpers_test.go) and shardNet (shard_test.go):
//     single-endpoint unit tests that compare exact frame logs or drive a
//     given shard layout themselves;
//   - the memnet tests of one RPC against a raw host or a pair that count
//     exact per-endpoint outcomes: busy_test.go (BUSY and RESEND timing of
//     one client), TestRPC_restartsDoNotPostponeTimeout (a client against
//     a stateless raw server), neighbour_test.go's mnPair (each endpoint's
//     own neighbour table, which shards of a host share) and
//     TestReceiveICMP_blindSpoofFailsNoRPC (exact ICMP drop counts of one
//     endpoint; ICMP is steered by ICMPShard, not FrameShard);
//   - engine/memnet's own tests, which build no engine endpoint.
const testShardsEnv = "HOMA_TEST_SHARDS"

// testShards is the number of shards a host of the engine's memnet suites
// has: HOMA_TEST_SHARDS, 1 when it is unset or empty. A value that is not
// a whole number of at least 1 fails the test.
func testShards(t testing.TB) int {
	v := os.Getenv(testShardsEnv)
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a number of shards, at least 1", testShardsEnv, v)
	}
	return n
}

// TestTestShards_knobHonoured: under HOMA_TEST_SHARDS=n, a scenario's
// hosts really are n endpoints of one address each, and frames crossed
// from the shard that sent them to another shard's owner: the steering
// ran. Unset, each host is one endpoint with no Shard set.
func TestTestShards_knobHonoured(t *testing.T) {
	n := testShards(t)
	s := newScenario(t, 3, memnet.Config{Seed: 4, Loss: 0.02}, singleSize(3000))
	s.perHost, s.inFlight = 20, 4
	if got := len(s.hosts); got != 3*n {
		t.Fatalf("%d endpoints for 3 hosts, want %d (HOMA_TEST_SHARDS=%d)", got, 3*n, n)
	}
	byAddr := map[[4]byte][]*Endpoint{}
	for _, h := range s.hosts {
		byAddr[h.mh.IP()] = append(byAddr[h.mh.IP()], h.e)
	}
	for ip, es := range byAddr {
		if len(es) != n {
			t.Fatalf("host %v: %d endpoints, want %d", ip, len(es), n)
		}
		for k, e := range es {
			if sh := e.cfg.Shard; n > 1 && (sh.Index != k || sh.Count != n) || n == 1 && sh.Count > 1 {
				t.Fatalf("host %v endpoint %d: shard %d of %d, want %d of %d", ip, k, sh.Index, sh.Count, k, n)
			}
		}
	}
	s.run(60_000_000_000)
	s.check()
	var rcvd [2]uint64 // DATA received by shard 0, by the others
	var wrong uint64
	for _, es := range byAddr {
		for k, e := range es {
			m := e.Metrics()
			rcvd[min(k, 1)] += m.PacketsRcvd[0]
			wrong += m.Drops[DropWrongShard]
		}
	}
	if wrong != 0 {
		t.Errorf("%d frames reached a shard that does not own them", wrong)
	}
	if n > 1 && rcvd[1] == 0 {
		t.Errorf("HOMA_TEST_SHARDS=%d and no shard but the first received DATA: nothing was steered", n)
	}
	t.Logf("HOMA_TEST_SHARDS=%d: %d endpoints; DATA received by the first shards %d, by the others %d", n, len(s.hosts), rcvd[0], rcvd[1])
}

// shardTurns is a sharded test host's schedule (kickShards): the earliest
// Run of its shards already scheduled (0 = none), and the shard that runs
// first at the next one.
type shardTurns struct {
	next  int64
	first int
}

// turnShard is a shard of a memnet test host.
type turnShard interface {
	endpoint() *Endpoint
	serve()
}

// kickShards schedules the Run of a host's shards at their next deadline
// unless an earlier one is pending. Then every shard runs, as each
// shard's polling loop would at that time, starting with each shard in
// turn: the shards' pacers share the link (Shard.Link), and the shard
// that runs first when the link frees sends first, so a fixed order would
// let one shard's messages starve the others'. Then each serves.
func kickShards[S turnShard](net *memnet.Network, t *shardTurns, shards []S) {
	d := shards[0].endpoint().NextDeadline()
	for _, sh := range shards[1:] {
		d = min(d, sh.endpoint().NextDeadline())
	}
	if t.next != 0 && t.next <= d {
		return
	}
	t.next = d
	net.At(d, func() {
		if t.next == d {
			t.next = 0
		}
		n := len(shards)
		for i := range n {
			shards[(t.first+i)%n].endpoint().Run()
		}
		t.first = (t.first + 1) % n
		for _, sh := range shards {
			sh.serve()
		}
	})
}
