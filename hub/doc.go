// Package hub serves one host's worker processes over shared memory: it
// accepts sessions on the control socket (shm.Server), reads each
// session's submission ring, validates every entry, turns them into
// engine calls, and pushes the engine's results as completions (see
// shm/doc.go for the protocol).
//
// A Hub talks to its host through a small interface (Host): the engine,
// and payload references for messages sent from a worker's memory
// without a copy. Sends to a peer whose address is still being resolved
// are the engine's to keep. It imports neither the DPDK binding nor
// the host package, builds without cgo, and is tested on the in-memory
// network (engine/memnet) with the real engine.
//
// Start reading at hub.go (New, Poll, Flush: the loop's side), then
// lifecycle.go (a session's attach, detach and end; Close and Stop),
// then session.go (one worker's submissions and completions).
package hub
