// Package dpdk is homa-dpdk's thin binding to DPDK 22.11 (the only cgo in
// the project): EAL, mbuf pools and mbufs, ethdev ports with multiple RX and
// TX queues, rte_ring, and launching Go code on EAL lcores.
//
// Where to start: Init brings up EAL from an argument list; NewPktMbufPool
// makes a pool; PortByName or NewVdev finds a port; Port.Configure,
// Port.RxQueueSetup, Port.TxQueueSetup and Port.Start make it run; then
// Port.RxBurst and Port.TxBurst move packets.
//
// Cost model. Each burst is exactly one cgo call (~30-40 ns here) and
// allocates nothing: the mbuf pointer array is a Go slice the caller keeps
// and reuses. Per-packet work (reading lengths, the payload view, prepend,
// append, offload flags) is done in Go on the rte_mbuf's memory, without a
// C call, for single-segment mbufs.
//
// Threads. EAL initialises once per process, even after Cleanup. The
// thread that calls Init becomes the main lcore; Init restores that
// thread's CPU affinity afterwards so that the Go runtime's other threads
// are not confined to the main lcore's CPU. Per-lcore mempool caches only
// work on threads with a DPDK lcore id: EAL worker lcores (RemoteLaunch) or
// threads registered with ThreadRegister.
//
// Errors. Set-up calls return *Error, which carries rte_errno and its text
// and unwraps to a syscall.Errno, so errors.Is(err, syscall.ENODEV) works.
// The data path returns counts, never errors.
package dpdk
