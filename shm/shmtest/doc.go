// Package shmtest is a test peer for the worker interface: a small,
// scriptable engine side of the protocol of shm/doc.go, for the tests of
// the worker libraries — the Go client (client/) in process, the Python
// package (python/) as a process through the command in cmd/shmfake. It
// is not the engine: the daemon's is hub/, on the Homa transport, and
// nothing outside tests should use this one.
//
// What is real: the control socket (shm.Listen: credentials, the memfd
// and the eventfd), the rings (shm.Producer and shm.Consumer), the
// entries (shm.ParseSubmission, shm.Completion.Encode), the receive-page
// account (shm.PagePool) and the wake-up protocol (TakeWaiter, Wake). A
// worker cannot tell this peer from the daemon by its bytes.
//
// What is fake: the network. Every attached worker is on one host
// (Config.Host), which the regions' headers name when Config.HostInfo
// says what to name (shm.FeatureHostInfo). A Send to a port another worker (or the same one) bound
// becomes a Request in that worker's pool; its Reply becomes the
// Response in the client's pool. A Send to another address fails with
// Unreachable, to an unbound port with PortUnreachable. Ports can be
// scripted (Script): the engine answers itself, with the request's own
// bytes or with an error code. A request that finds no free pages at its
// server waits there until pages come back, as a Homa client's
// retransmissions would. RPCs never time out.
//
// Tests steer it with methods that take the engine's lock: limits
// (SetMaxRPCs), stalling the loop (Pause, Resume), refusing attaches
// (Refuse), ending a session from the daemon's side (Kill), raw
// completions (Inject) and pages handed to a worker out of band (Hold);
// Session reports what a test checks afterwards (the layout, pool pages,
// wake-ups, malformed submissions, corrupt ring indices).
//
// Start reading at engine.go (the configuration, the sessions and the
// polling loop), then rpc.go (what each submission does) and control.go
// (the test hooks).
package shmtest
