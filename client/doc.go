// Package client is the worker side of the shared-memory interface: a Go
// program (no cgo) attaches to the homa-dpdk daemon's control socket and
// sends and receives Homa RPCs through its region. The protocol —
// attaching, operations and their completions, who owns which memory,
// per-worker limits and how to wait — is written down in package shm
// (shm/doc.go); this package follows it. The Python package mirrors this
// API name for name.
//
// Where to start reading: client.go (Dial, Close, Stats), rpc.go (the
// operations), then completion.go (how completions are read and
// dispatched), wait.go (spinning, then sleeping on the eventfd), daemon.go
// (noticing that the daemon has gone), arena.go (the transmit arena's
// allocator), message.go and errors.go.
//
// # Use
//
//	c, err := client.Dial("/run/homa-dpdk/workers.sock", client.Options{})
//	...
//	defer c.Close()
//	resp, err := c.Call(dst, req, time.Second) // Send, then Wait for its id
//	...
//	use(resp.Data)
//	resp.Release() // gives its receive-pool pages back to the daemon
//
// A server binds a port, then loops on Receive and Reply:
//
//	c.Bind(99)
//	for {
//		m, err := c.Receive(-1)
//		...
//		c.Reply(m, answer(m.Data))
//		m.Release()
//	}
//
// Reply waits for the daemon to accept the reply, so a server answers one
// request per pass of the daemon's loop at best; ReplyAsync returns as
// soon as the reply is on the ring, and a refusal comes back later through
// Receive as a failed Message with the request's ID.
//
// # Concurrency
//
// A Client has no locks: it is used by one goroutine at a time, and so are
// its Messages (Release submits to the Client's ring). Programs with
// several goroutines either give each its own Client (each is a separate
// session with its own region) or serialise the calls themselves.
//
// A wait that has spun for Options.Spin sleeps in a blocking system call
// (ppoll on the eventfd and the control connection), holding its goroutine's P until the runtime's
// monitor hands the P to another goroutine, which can take up to 10 ms. A
// program whose waiting Clients outnumber GOMAXPROCS should raise
// GOMAXPROCS above their number, or a woken Client, and any other
// goroutine, may wait that long for a P.
//
// # Memory
//
// Send, Call and Reply copy the message into the transmit arena, so the
// caller's slice is free again when they return. A received Message's
// Data is a view of the receive pool, not a copy: it stays valid until
// Release (or Close, which unmaps the region). Every Message that carries
// Data must be released, or the daemon runs out of pool pages for this
// worker and drops or fails what arrives next.
//
// # Requests, responses, Wait and Receive
//
// Completions are read in bursts and dispatched at once: released arena
// ranges are freed, answers to the submission being waited for are taken,
// and requests and RPC results are queued in the order they arrived.
// Wait(id) takes the result of one client RPC out of that queue, leaving
// the others in order; Receive takes the oldest entry, a request or the
// result of any client RPC. A result goes to whichever asks for it first:
// once Receive has returned it, Wait for its id reports ErrNoRPC. Call
// waits for its own RPC, and if that wait times out it aborts the RPC and
// drops its result, so nothing of it reaches Receive later.
//
// # Timeouts
//
// A timeout argument bounds the wait for a message: a negative timeout
// waits without limit, zero takes only what has already arrived, and a
// positive one waits up to that long; running out returns ErrWaitTimeout.
// Waiting spins on the completion ring for Options.Spin, then sleeps on
// the session's eventfd. Submissions themselves are answered by the
// daemon in microseconds; a call gives up after 10 seconds without an
// answer (ErrNoAnswer), and Send waits at most as long for arena space
// (ErrArenaFull).
//
// No wait outlives the daemon. The session's control connection stays
// open and silent while the daemon is there, and closes when the daemon
// exits, is killed (the kernel closes it) or ends the session. A wait
// that finds nothing on the ring watches it — the sleep polls it with the
// eventfd; a spin, and a wait whose time has run out, read it at most once
// a millisecond — so every wait under way (Call, Wait,
// Receive, Send for its acceptance or for arena room, Reply) returns
// ErrDaemonGone within about a millisecond of the daemon's end, once the
// completions it pushed before it went are read, and every later call
// returns ErrDaemonGone too: only Close is left to do. Nothing of this
// costs a system call while completions keep coming. ErrNoAnswer, then,
// is a daemon still there but stuck.
//
// # Trust
//
// The daemon is trusted to be the daemon, not to be bug-free: every
// completion is validated (shm.ParseCompletion against this region's
// limits) before it is used, and one that is malformed, or names an RPC or
// arena range this client does not have, is counted in Stats and skipped
// (its pages, if valid, are given back). Nothing the daemon writes makes
// this package panic or read outside the region.
package client
