// Package shm is the engine side of the worker interface: the layout of
// the shared region a worker process maps, the single-producer
// single-consumer rings inside it, and the entries those rings carry. The
// Go client (client/) and libhoma (native/, the C library under every
// other client: Python, the C++ torch backend) read the same layout; this
// package is its source of truth. Start reading at layout.go (where things
// are), then ring.go (how entries move), then entry.go (what they say).
//
// # The region
//
// One region per worker, in a memfd the daemon creates and passes over
// the control socket. From offset 0:
//
//	header   4 KB    magic "HOMASHM1", version, sizes and offsets, the host served (layout.go)
//	SQ       ring    submission ring, worker → engine
//	CQ       ring    completion ring, engine → worker
//	arena    bytes   transmit arena: payloads of requests and replies
//	pool     pages   receive pool: 64 KB pages holding received messages
//
// All references between them are offsets: a submission names an arena
// range (Offset, Length), a completion names a run of consecutive pool
// pages (Page, Pages). Nothing in the region is a pointer, so it means the
// same in every process that maps it, at any address.
//
// # Who writes what
//
//	header     engine, once, before the worker maps it; never read back by the engine
//	SQ slots   worker (producer); engine copies each out before decoding
//	SQ tail    worker;  SQ head: engine
//	CQ slots   engine (producer); worker copies each out before decoding
//	CQ tail    engine;  CQ head: worker
//	CQ wait    worker sets it to sleep; the engine swaps it back to 0 when it wakes the worker
//	arena      worker writes a payload, then submits it; the engine reads it
//	           until it reports the range released (CompFlagReleased or CompReleased)
//	pool       engine writes a message's pages, then completes it; the worker
//	           reads them until it sends ReturnPages
//
// The engine treats everything in the region as hostile input: the worker
// can write any byte at any moment, including the header and the engine's
// own ring indices. So the engine keeps its own copy of the Layout and of
// its own ring indices (Producer and Consumer hold them privately and only
// ever store them to the region), and it decodes an entry only after
// copying it out of its slot (Pop), so the worker cannot change an entry
// between its check and its use. Payload bytes in the arena are not
// copied first: a worker that changes them while they are sent corrupts
// only its own message.
//
// # Memory ordering
//
// Each ring index has exactly one writer. The producer writes a slot with
// ordinary stores, then stores the new tail with sync/atomic; the
// consumer loads the tail with sync/atomic, then reads the slots below it.
// Go's atomics are sequentially consistent, which includes release on the
// store and acquire on the load, so the slot bytes are visible before the
// tail that covers them. The same pair, the other way round, protects
// reuse: the consumer finishes copying a slot before it stores the new
// head, and the producer overwrites a slot only after loading a head past
// it. Across processes this holds because the atomics compile to the
// hardware's ordered instructions (on amd64 a plain MOV load and an XCHG
// store; on arm64 LDAR and STLR), which order accesses to shared memory
// whoever mapped it. A non-Go peer must give the same guarantees: libhoma
// stores its index with a C11 release store once per burst and loads the
// other end's with an acquire load (native/src/ring.h). One step needs
// more than release and acquire: going to sleep is a store (the wait
// flag) followed by a load (the tail), which x86 may reorder, so a worker
// must fence between them (Go's atomic store is an XCHG; libhoma issues a
// seq_cst fence) — otherwise both sides can miss each other and a wake-up
// is lost. The same holds for the doorbell the other way round: a push's
// tail store, a fence, then the load of the wait flag.
//
// The indices are free-running u64 counters (entries ever pushed or
// popped); slot = index mod Entries, so Entries is a power of two, and the
// count in the ring is tail - head in wrapping arithmetic, which stays
// right across 2^64. The tail and the head live 128 bytes apart, so the
// two writers never share a cache line or its adjacent-line prefetch pair.
// Each end caches the other's index and reloads it only when the cached
// value cannot satisfy the call (too few entries for Pop/PopBurst, too
// little room for Push/PushBurst) or for Len and Free, so a busy ring
// costs about one shared-line transfer per burst, not per entry.
//
// Sleeping: a consumer that wants to sleep sets its wait flag, loads the
// tail once more, and sleeps only if the ring is still empty; a producer
// stores the tail, then reads the flag and wakes the consumer if it is
// set. With sequentially consistent atomics at least one side sees the
// other, so no wake-up is lost. (The futex or eventfd itself belongs to
// the session code, not to this package.)
//
// # Attaching
//
// A worker connects to the daemon's control socket (a unix stream socket,
// mode 0660, in the daemon's group or the one its config names). The
// daemon checks the peer's credentials (SO_PEERCRED: root, a uid, the
// primary gid; SO_PEERGROUPS, or /proc/PID/status where the kernel lacks
// it: the supplementary gids) against its allow-lists and answers with
// one message: "ok\n" carrying two descriptors with SCM_RIGHTS — [0] the
// region's memfd, [1] the worker's wake-up eventfd (non-blocking, its
// session's own) — or
// "refused\n" (the credentials), or "error <text>\n" (any other reason:
// no region could be made, the daemon is stopping; "error session limit:
// <text>\n" when the worker's uid holds as many sessions as the daemon
// allows one uid), and then closes. After "ok" the worker maps the whole
// memfd (its size from fstat) shared, read-write, and checks the header.
// The connection stays open for the session's life, idle but for the
// doorbell request ("Waiting" below): when it
// closes (the worker exits, crashes or calls Close) the daemon aborts
// the worker's RPCs, unbinds its ports and frees the region. The daemon
// closes it too when the worker breaks the protocol (a corrupt ring
// index) or does not read its completions (see the backlog below).
//
// # Operations and their completions
//
// Every submission carries a cookie the worker chooses; completions that
// answer it echo it. Per op (fields not named are zero):
//
//	Bind(Port)              → Accepted(Port) | Error(Err)
//	Send(Peer, Offset, Length) → Accepted(RPCID: the new client id)
//	                          | Error(Err, flags Released)
//	    later:                 Response(RPCID, Peer, Length, Page, Pages)
//	                           | Error(RPCID, Err)       the RPC failed (timeout, aborted, ...)
//	                           Released(Offset, Length)  the arena range is free again
//	                                                     (before or after the Response: see below)
//	Reply(RPCID, Peer, Offset, Length) → Accepted(RPCID) | Error(RPCID, Err, flags Released)
//	    later:                 Released(Offset, Length)  the client acknowledged it, or it was abandoned
//	Abort(RPCID)            → Accepted(RPCID) | Error(RPCID, NoRPC); the RPC then
//	                          ends with its own Error(RPCID, Aborted) under its Send cookie
//	AbortAll                → Accepted, after the Error(Aborted) of each client RPC
//	ReturnPages(Page, Pages) → nothing | Error(BadPage) when the worker does not hold them all
//
// Two features (the header's Features, layout.go) cut what an exchange
// costs: a Send or Reply with SubFlagQuiet gets no Accepted (its outcome
// and its Released are all that come back; a quiet Send learns its RPC id
// from them), and a Send or Reply may give back a run of receive pages in
// its Page and Pages fields instead of a ReturnPages entry (entry.go,
// "Quiet submissions"). With both, a request/response exchange of a few
// KB costs the client Send, Released, Response and the server Request,
// Reply, Released: six entries, from ten.
//
// A message is at most the header's MaxMessage bytes (layout.go):
// 1,000,000 by default, kernel Homa's limit; a daemon configured for
// longer ones (up to 2^31 − 1 bytes) sizes its arenas and pools for them
// (its config refuses sizes that cannot hold one), and a message above 1,000,000 bytes to a peer that
// may run kernel Homa is refused with Error(PeerMessageLength) (a Reply so
// refused leaves the request to be answered again). A received message
// of n bytes takes PagesFor(n) consecutive pages: 1024 for 64 MiB.
//
// Requests to a bound port arrive as Request(Port, RPCID: the odd server
// id, Peer, Length, Page, Pages) with cookie 0. A completion of a
// refused submission (a bad entry, or a per-worker limit) is an Error
// with the submission's cookie and, for Send and Reply, the Released
// flag: the engine never read its arena range.
//
// Memory ownership. The transmit arena is the worker's to manage: it
// writes a payload into a free range, submits it, and may reuse the
// range after Released (or an Error with the Released flag). The engine
// sends Released only after its last read of the range: the RPC has ended
// (no retransmission possible) and every packet of the message has left.
// Where the port sends chained mbufs (software devices), the payloads of
// messages of 4 KB and more are not copied at all: each packet's payload is an mbuf attached to the
// arena as an external buffer, and Released waits until the last of them
// is freed by the port — so it may come after the Response. Elsewhere the
// payload is copied once into the mbuf and Released comes with the end
// of the RPC. Released is matched by cookie, never by RPC. Receive-pool
// pages belong to the engine until a Request or Response hands a run of
// consecutive pages to the worker; the worker reads the message there
// (byte i at pool offset Page*PageSize+i) and gives the pages back with
// ReturnPages, all at once or in parts. Returning pages the worker does
// not hold is an error completion and changes nothing.
//
// Per-worker limits (from the daemon's config): outstanding client RPCs
// plus requests not yet answered, and receive-pool pages held.
// Submissions beyond them get Error(Limit); a message that finds no free
// pages is dropped: a request's client retries, and a response that fits
// in the pool waits (its RPC asks for it again) until the worker returns
// pages; only a response longer than the whole pool fails its RPC with
// NoBufferSpace.
//
// Completions the CQ has no room for wait in the daemon, in order, up to
// a per-worker bound (workers.max_backlog). A worker at the bound has
// its submission ring left unread — its submissions wait there, and the
// ring fills, so a worker that finds its SQ full must read its CQ — and
// requests to its ports are dropped (their clients retry). A completion
// the daemon still owes past the bound (a response, a failure or a
// release of an RPC already under way) ends the session: the daemon
// closes the connection, as for a corrupt ring, and aborts its RPCs.
//
// Waiting. A worker that finds its completion ring empty may spin; to
// sleep it stores 1 in the ring's wait flag, loads the tail once more,
// and only if the ring is still empty waits for the eventfd to become
// readable (poll), reads it (8 bytes, to reset it; EAGAIN is fine) and
// stores 0 in the flag. After pushing completions the engine swaps the
// flag to 0 and, if it was 1, writes 1 to the eventfd. A worker that
// never sleeps never causes a system call on either side. Wake-ups can
// be spurious; a worker always rechecks the ring.
//
// The engine never sleeps on a worker: its polling loop reads every
// submission ring on each pass. The loop itself may sleep when idle (the
// daemon's runtime.idle: adaptive); then, where the header has
// FeatureDoorbell, the same protocol runs the other way round: before it
// sleeps the loop stores 1 in the wait flag of each submission ring and
// looks at the rings once more; a worker that pushes a submission then
// swaps the flag to 0 and, if it was 1, writes 1 (8 bytes) to its
// session's doorbell, an eventfd the loop sleeps on. A worker gets it by
// writing "doorbell\n" on its control connection after "ok"; the daemon
// answers "doorbell\n" with the descriptor (once per session) or
// "error <text>\n". A worker that does not ask is served as before, by
// the loop's next pass after its sleep (at most idle_max_sleep_us). Each
// session has a doorbell of its own: a worker can wake the loop, but
// cannot read another worker's ring. The daemon watches the doorbells
// edge-triggered and never reads them: each write is a ring, and what a
// worker does to its own descriptor (reads it, clears O_NONBLOCK) touches
// its own rings alone.
//
// # What is validated
//
// ParseHeader: magic, version, header, entry and page sizes; every size in
// range (MaxMessage 1..2^31 − 1; 0 from an older daemon reads as
// 1,000,000); ring entries powers of two; every offset a multiple of 64; every
// part inside RegionSize and RegionSize inside the mapping; no two parts
// overlapping. Errors are *LayoutError naming the field.
//
// Rings: the memory is exactly RingBytes(Entries) and 64-byte aligned.
// Every load of the other end's index is checked (0 ≤ tail - head ≤
// Entries); a bad value is ignored and counted (Corrupt), and the end
// carries on with the last good value. Slot addresses are masked, so no
// index value can reach outside the slots. A nonzero Corrupt count means
// the other side is broken: the session should end it.
//
// Entries: ParseSubmission checks every field a worker writes (op known,
// no flags, unused fields and reserved bytes zero, ports in range, peer
// address set, length within the largest message, arena range inside the
// arena without overflow, RPC id parity, page range inside the pool) and
// returns an ErrCode for the error completion. ParseCompletion does the
// same for the worker. What needs engine state (is the port bound, does
// the RPC exist, does the worker hold those pages) the engine checks.
//
// Nothing on the data path allocates: Push, Pop, their bursts, Encode and
// the Parse functions are tested with testing.AllocsPerRun.
package shm
