package daemon

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"github.com/homa-dpdk/homa-dpdk/host"
	"github.com/rs/zerolog"
)

// planSpec loads a config's YAML for makePlan (no DPDK: the plan is the
// Spec and the devices' facts).
func planSpec(t *testing.T, yaml string) *config.Spec {
	t.Helper()
	spec, err := config.Load(config.Source{YAML: yaml + "\nworkers:\n  enabled: false\n"})
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func ring(name string, queues int) device {
	return device{Name: name, Driver: "net_ring", MaxRxQueues: queues, MaxTxQueues: queues, Socket: 0}
}

// Two unsharded ports on one lcore (the top-level lcores, folded into the
// ports): a loop runs both, each port one host on all its queues.
func TestMakePlan_unshardedPortsShareAnLcore(t *testing.T) {
	spec := planSpec(t, `
lcores: [1, 1]
ports:
  - device: net_ring_a0
    address: 10.0.0.1/24
    tx_queues: 8
    rx_queues: 1
  - device: net_ring_a1
    address: 10.0.0.2/24
`)
	pl, err := makePlan(spec, []device{ring("net_ring_a0", 8), ring("net_ring_a1", 4)}, []uint{1, 2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := plan{
		Ports: []portPlan{
			{Device: "net_ring_a0", Socket: 0, RxQueues: 1, TxQueues: 8,
				Shards: []shardPlan{{Lcore: 1, TxBase: 0, TxQueues: 8, RxQueues: []uint16{0}, CopierCPU: -1}}},
			{Device: "net_ring_a1", Socket: 0, RxQueues: 1, TxQueues: 4, // tx_queues 0: the device's 4
				Shards: []shardPlan{{Lcore: 1, TxBase: 0, TxQueues: 4, RxQueues: []uint16{0}, CopierCPU: -1}}},
		},
		Loops: []loopPlan{{Lcore: 1, Shards: []shardRef{{0, 0}, {1, 0}}}},
	}
	if !reflect.DeepEqual(pl, want) {
		t.Errorf("plan\n%+v\nwant\n%+v", pl, want)
	}
}

// A port of two shards on net_memif, tx_queues left to the device (16:
// 8 each), with a copier CPU per shard and workers, beside an unsharded
// port on another lcore: each shard has its own TX queues, memif pairs
// every TX queue with an RX queue, RX queue q goes to shard q mod 2, the
// loops follow the lcores in order of first use.
func TestMakePlan_shardedPortWithCopiers(t *testing.T) {
	spec := planSpec(t, `
ports:
  - device: net_ring_b0
    address: 10.0.1.1/24
    lcores: [3]
    tx_queues: 2
    copier_cpus: [0]
  - device: net_memif0
    address: 10.0.0.1/24
    lcores: [1, 3]
    copier_cpus: [5, 6]
`)
	spec.Workers.Enabled = true
	memif := device{Name: "net_memif0", Driver: "net_memif", MaxRxQueues: 255, MaxTxQueues: 16, Socket: 1}
	pl, err := makePlan(spec, []device{ring("net_ring_b0", 2), memif}, []uint{1, 2, 3}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := plan{
		Ports: []portPlan{
			{Device: "net_ring_b0", Socket: 0, RxQueues: 1, TxQueues: 2,
				Shards: []shardPlan{{Lcore: 3, TxBase: 0, TxQueues: 2, RxQueues: []uint16{0}, CopierCPU: 0}}},
			{Device: "net_memif0", Socket: 1, RxQueues: 16, TxQueues: 16, HomePorts: false, // workers_socket: ports[0]'s alone
				Shards: []shardPlan{
					{Lcore: 1, TxBase: 0, TxQueues: 8, RxQueues: []uint16{0, 2, 4, 6, 8, 10, 12, 14}, CopierCPU: 5},
					{Lcore: 3, TxBase: 8, TxQueues: 8, RxQueues: []uint16{1, 3, 5, 7, 9, 11, 13, 15}, CopierCPU: 6},
				}},
		},
		Loops: []loopPlan{
			{Lcore: 3, Shards: []shardRef{{0, 0}, {1, 1}}},
			{Lcore: 1, Shards: []shardRef{{1, 0}}},
		},
	}
	if !reflect.DeepEqual(pl, want) {
		t.Errorf("plan\n%+v\nwant\n%+v", pl, want)
	}
}

// Two shards of a port on one lcore, with workers: one loop runs both;
// a shard with no RX queue of its own polls none (the other hands it
// its frames); the worker's ports are homed on their shard.
func TestMakePlan_shardsShareAnLcore(t *testing.T) {
	spec := planSpec(t, `
ports:
  - device: net_ring_c0
    address: 10.0.0.1/24
    lcores: [2, 2]
    tx_queues: 4
    rx_queues: 1
`)
	spec.Workers.Enabled = true
	pl, err := makePlan(spec, []device{ring("net_ring_c0", 8)}, []uint{1, 2}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := plan{
		Ports: []portPlan{{Device: "net_ring_c0", Socket: 0, RxQueues: 1, TxQueues: 8, HomePorts: true,
			Shards: []shardPlan{
				{Lcore: 2, TxBase: 0, TxQueues: 4, RxQueues: []uint16{0}, CopierCPU: -1},
				{Lcore: 2, TxBase: 4, TxQueues: 4, RxQueues: []uint16{}, CopierCPU: -1},
			}}},
		Loops: []loopPlan{{Lcore: 2, Shards: []shardRef{{0, 0}, {0, 1}}}},
	}
	if !reflect.DeepEqual(pl, want) {
		t.Errorf("plan\n%+v\nwant\n%+v", pl, want)
	}
}

// A plan the devices or EAL cannot carry is refused with the line a user
// sees: what was asked (shards times tx_queues), what the device allows,
// and the key to change.
func TestMakePlan_refusalsSayWhatToChange(t *testing.T) {
	port := "ports:\n  - device: net_ring0\n    address: 10.0.0.1/24\n"
	for _, tc := range []struct {
		name, yaml string
		dev        device
		want       string
	}{
		{"shards times tx_queues", port + "    lcores: [1, 2]\n    tx_queues: 8\n", ring("net_ring0", 1),
			"ports[0] (net_ring0): 2 shards × 8 tx_queues = 16 TX queues (each shard has tx_queues of its own), the device allows at most 1: lower ports[0].tx_queues (0 shares the device's out) or the shards (ports[0].lcores)"},
		{"tx_queues", "lcores: [1]\n" + port + "    tx_queues: 8\n", ring("net_ring0", 1),
			"ports[0] (net_ring0): tx_queues 8, the device allows at most 1 TX queue: lower ports[0].tx_queues (0 takes as many as the device allows, up to 8)"},
		{"a TX queue a shard", port + "    lcores: [1, 2, 1]\n", ring("net_ring0", 2),
			"ports[0] (net_ring0): 3 shards need a TX queue each, the device allows at most 2 TX queues: give the port fewer shards (ports[0].lcores)"},
		{"rx_queues", port + "    lcores: [1]\n    rx_queues: 4\n", ring("net_ring0", 1),
			"ports[0] (net_ring0): rx_queues 4, the device allows at most 1 RX queue: lower ports[0].rx_queues (0 takes 1)"},
		{"memif's paired RX queues", port + "    lcores: [1, 2]\n    tx_queues: 4\n",
			device{Name: "net_ring0", Driver: "net_memif", MaxRxQueues: 4, MaxTxQueues: 8},
			"ports[0] (net_ring0): net_memif pairs each TX queue with an RX queue: 2 shards × 4 TX queues = 8 RX queues, the device allows at most 4: lower ports[0].tx_queues or the shards (ports[0].lcores)"},
		{"not a worker lcore", "lcores: [7]\n" + port, ring("net_ring0", 1),
			"lcores[0]: lcore 7 is not an EAL worker lcore (workers: [1 2]; the main lcore is 0); change -l or lcores"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := makePlan(planSpec(t, tc.yaml), []device{tc.dev}, []uint{1, 2}, 0)
			if err == nil || err.Error() != tc.want {
				t.Errorf("got  %v\nwant %s", err, tc.want)
			}
		})
	}
}

// The plan's errors reach the user as the validate phase's: a port of
// two shards of 8 TX queues each on a ring port of one queue.
func TestStart_moreShardsThanQueuesNamesTheFix(t *testing.T) {
	dpdktest.Need(t)
	workers := dpdk.WorkerLcores()
	if len(workers) == 0 {
		t.Skip("no EAL worker lcore")
	}
	name := fmt.Sprintf("dplan%d", shardSeq.Add(1))
	ports, rings, err := host.NewRingPorts(name, 1)
	defer host.CloseRingPorts(ports, rings)
	if err != nil {
		t.Fatal(err)
	}
	spec := planSpec(t, fmt.Sprintf(`
ports:
  - device: net_ring_%[1]s0
    address: 10.0.0.1/24
    lcores: [%[2]d, %[2]d]
    tx_queues: 8
metrics:
  address: ""
`, name, workers[0]))
	d, err := Start(spec, zerolog.Nop(), Options{SkipEAL: true})
	if err == nil {
		d.Stop()
		t.Fatal("started")
	}
	want := fmt.Sprintf("start-up phase validate: ports[0] (net_ring_%s0): 2 shards × 8 tx_queues = 16 TX queues (each shard has tx_queues of its own), "+
		"the device allows at most 1: lower ports[0].tx_queues (0 shares the device's out) or the shards (ports[0].lcores)", name)
	if err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}
