package host

import (
	"testing"

	"github.com/homa-dpdk/homa-dpdk/nicq"
)

// A port's shards' counters add up field by field, queue by queue.
func TestSnapshot_addSumsShards(t *testing.T) {
	a := Snapshot{NoBuffer: 1, Queues: make([]nicq.QueueStats, 2)}
	a.Engine.PacketsSent[0] = 5
	a.RxDrops[1] = 2
	a.Queues[1].Sent = 7
	a.Link.Up = true
	b := a
	b.Queues = []nicq.QueueStats{{Sent: 1}, {Sent: 3}}
	b.Link.Up = false
	a.Add(&b)
	if a.NoBuffer != 2 || a.Engine.PacketsSent[0] != 10 || a.RxDrops[1] != 4 || a.Queues[0].Sent != 1 || a.Queues[1].Sent != 10 || !a.Link.Up {
		t.Errorf("%+v", a)
	}
}
