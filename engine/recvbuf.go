package engine

import "github.com/homa-dpdk/homa-dpdk/wire"

// Memory for incoming messages.
//
// A DATA packet names its message's length, and anyone can send one: a
// stranger's packet claiming a megabyte must not make the endpoint hold a
// megabyte. So memory for an incoming message is committed as its bytes
// arrive, never from the length claimed:
//
//   - Until the message is committed, its bytes go into staging: chunks
//     of stageChunkSize bytes that the endpoint owns, taken as the bytes
//     that fill them arrive (a one-byte packet takes one chunk), from a
//     pool of at most Config.MaxStagingBytes (DropStagingFull beyond it).
//     A message stages only bytes below twice commitBytes (below) or
//     below its granted offset, whichever is further (DropPastStaging
//     beyond): scheduled bytes may overtake unscheduled ones, which go
//     at the lowest priority for the longest messages.
//   - The message is committed when min(length, commitBytes) of its
//     bytes have arrived, commitBytes being Config.UnschedBytes (at most
//     maxCommitBytes) rounded up to whole packets: a message no longer
//     than that is committed by its last byte, a longer one once its
//     sender has sent that much (its unscheduled bytes, or as many,
//     whatever was lost). It is committed sooner, saving the staging
//     copy, once a full packet's payload has arrived and the memory it
//     takes (heldSize: its length, or for a worker's pool its length in
//     whole 64 KB pages, PortHooks.RecvBufUnit) is at most
//     earlyCommitRatio times the bytes that have: a 64 KB page, after
//     4,096 bytes (the third full packet). Counting pages matters: by
//     bytes, one packet claiming 16 packets' length took a page, 45
//     times the packet. Committing asks the port's PortHooks.RecvBuf for
//     length bytes (or allocates them on the heap, within
//     Config.MaxRecvHeapBytes), copies the staged bytes in and frees the
//     chunks; the packet that commits, and every later one, is written
//     straight into the buffer.
//
// So a peer holds at most a chunk per packet it sends (and the staging
// pool bounds them all), and makes the endpoint commit a message's
// memory only by sending real bytes first: at most earlyCommitRatio (16)
// times them, or heldSize(length) / commitBytes times when it waits for
// commitBytes, which is largest for the longest message: 25.4 times at
// the defaults (a 1,000,000-byte message's 16 pages after 41,296 bytes,
// 29 packets; more only from peers allowed longer messages, which
// Config.KernelPeer does not name).
// Config.MaxServerRPCs and MaxServerRPCsPerPeer bound how many messages
// it may start. When the pool is spent, a request silent for ResendTicks
// gives up its chunks (evictStaleRequest), so requests that never finish
// cannot hold it; when a committed buffer finds no memory, requests that
// hold some without finishing give it up (recvpool.go).

// stageChunkSize is the size of one staging chunk, bytes.
const stageChunkSize = 2048

// maxCommitBytes bounds commitBytes when Config.UnschedBytes is larger
// (a configuration that sends whole messages unscheduled): a message is
// committed after that many bytes at most, so staging stays small.
const maxCommitBytes = 64 << 10

// stageChunk is staging memory for stageChunkSize bytes of one message,
// at offsets [i·stageChunkSize, (i+1)·stageChunkSize) for its index i.
type stageChunk [stageChunkSize]byte

// roundUp returns n rounded up to a multiple of m.
func roundUp(n, m int) int { return (n + m - 1) / m * m }

// initRecvMem sizes the staging pool from the configuration.
func (e *Endpoint) initRecvMem() {
	e.unschedLimit = roundUp(e.cfg.UnschedBytes, e.payload)
	if e.cfg.IP6 != [16]byte{} { // IPv6 senders' packets are smaller: their unscheduled bytes end elsewhere
		e.unschedLimit = max(e.unschedLimit, roundUp(e.cfg.UnschedBytes, wire.PayloadPerPacket(e.cfg.MTU, wire.IPv6HeaderLen)))
	}
	u := min(e.cfg.UnschedBytes, maxCommitBytes)
	e.commitBytes = (u + e.payload - 1) / e.payload * e.payload
	span := 2 * e.commitBytes
	e.stageSlots = (span + stageChunkSize - 1) / stageChunkSize
	e.maxChunks = e.cfg.MaxStagingBytes / stageChunkSize
}

// earlyCommitRatio: a message whose receive memory (heldSize: its
// length, or its pool pages) is at most this many times the bytes of it
// that have arrived (a full packet's payload at least) is committed
// without waiting for commitAt bytes.
const earlyCommitRatio = 16

// commitAt is how many bytes of a message of n bytes must arrive before
// it is committed at the latest.
func (e *Endpoint) commitAt(n int) int { return min(n, e.commitBytes) }

// commitsAt reports whether a message of n bytes to port p is committed
// once got of its bytes have arrived.
func (e *Endpoint) commitsAt(p *Port, n, got int) bool {
	return got >= e.commitAt(n) || got >= e.payload && heldSize(p, n) <= earlyCommitRatio*got
}

// stageRoom makes sure staging chunks hold [offset, end) of r's incoming
// message, which is not committed. When the pool is spent, a stale
// staged request makes room (evictStaleRequest). It reports false,
// counted, when the range lies past what the message may stage or no
// chunk is left.
func (e *Endpoint) stageRoom(r *rpc, offset, end int) bool {
	in := &r.in
	if end > max(e.stageSlots*stageChunkSize, in.g.Granted) {
		e.m.drop(DropPastStaging)
		return false
	}
	last := (end - 1) / stageChunkSize
	if in.stage == nil {
		in.stage = e.takeSlots()
	}
	if last >= len(in.stage) {
		// Granted bytes past the first slots: a longer table, from the
		// heap (rare: they overtook the unscheduled bytes).
		n := min(max(last+1, 2*len(in.stage)), (in.length+stageChunkSize-1)/stageChunkSize)
		in.stage = append(in.stage, make([]*stageChunk, n-len(in.stage))...)
	}
	for i := offset / stageChunkSize; i <= last; i++ {
		if in.stage[i] != nil {
			continue
		}
		c := e.takeChunk()
		if c == nil && e.evictStaleRequest(r, true) {
			c = e.takeChunk()
		}
		if c == nil {
			e.m.drop(DropStagingFull)
			return false
		}
		in.stage[i] = c
	}
	return true
}

// stageCopy copies payload, at offset of in, into its staging chunks
// (stageRoom made them).
func stageCopy(in *inMsg, offset int, payload []byte) {
	for len(payload) > 0 {
		c := in.stage[offset/stageChunkSize]
		n := copy(c[offset%stageChunkSize:], payload)
		payload = payload[n:]
		offset += n
	}
}

// commit gives r's incoming message its buffer: length bytes from the
// port's RecvBuf, or from the heap within Config.MaxRecvHeapBytes; the
// staged bytes are copied in and their chunks freed. When there is no
// buffer, a held request makes room if one may (evictForBuffer,
// recvpool.go). When there is still none, counted in DropNoRecvSpace or
// DropRecvHeapFull, commit reports false and the packet is dropped: a
// request ends (its client retries), a response that can fit once memory
// comes free waits (its RPC asks for the bytes again by RESEND, as after
// a loss, and commit is tried again when they come), and one that cannot
// fails with ErrNoBufferSpace.
func (e *Endpoint) commit(r *rpc) bool {
	in := &r.in
	n := in.length
	buf, heap := e.takeBuf(r, n)
	for i := 0; buf == nil && i < maxEvictScan; i++ {
		held := len(e.heldBufs)
		if !e.evictForBuffer(r, n) || len(e.heldBufs) > held {
			break // none to evict, or its buffer comes back only once the copier is past it
		}
		buf, heap = e.takeBuf(r, n)
	}
	if buf == nil {
		if r.port.hooks.RecvBuf == nil {
			return e.refuseIn(r, DropRecvHeapFull, n <= e.cfg.MaxRecvHeapBytes)
		}
		fits := r.port.hooks.RecvBufFits
		return e.refuseIn(r, DropNoRecvSpace, fits != nil && fits(n))
	}
	for i, c := range in.stage {
		if c != nil {
			lo := i * stageChunkSize
			if lo < n {
				copy(buf[lo:min(lo+stageChunkSize, n)], c[:])
			}
		}
	}
	e.freeStage(in)
	in.buf, in.heap = buf, heap
	return true
}

// takeBuf returns a buffer of n bytes for r's incoming message from its
// port's RecvBuf, or from the heap (heap) within MaxRecvHeapBytes; nil
// when there is none.
func (e *Endpoint) takeBuf(r *rpc, n int) (buf []byte, heap bool) {
	h := &r.port.hooks
	if h.RecvBuf == nil {
		if e.recvHeap+n > e.cfg.MaxRecvHeapBytes {
			return nil, false
		}
		e.recvHeap += n
		return make([]byte, n), true
	}
	b, ok := h.RecvBuf(n)
	if !ok || len(b) < n {
		if ok && h.FreeRecvBuf != nil {
			h.FreeRecvBuf(b)
		}
		return nil, false
	}
	return b[:n:n], false
}

// refuseIn counts that r's incoming message found no buffer (cause) and
// ends r, unless r is a client RPC whose response can wait (fits) and
// has waited less than BufferWaitTicks: its RPC lives on and its resend
// timer asks for the dropped bytes again.
func (e *Endpoint) refuseIn(r *rpc, cause DropCause, fits bool) bool {
	e.m.drop(cause)
	if r.client && fits && r.bufWaitFrom == 0 {
		r.bufWaitFrom = e.ticks + 1
	}
	switch {
	case r.client && fits && e.ticks+1-r.bufWaitFrom < uint64(e.cfg.BufferWaitTicks):
		e.m.ResponsesWaitingForBuffer++
	case r.client:
		e.fail(r, ErrNoBufferSpace)
	default:
		e.end(r)
	}
	return false
}

// releaseIn frees the memory of in when its RPC ends undelivered: the
// staging chunks, the heap budget, or the owner's buffer (FreeRecvBuf);
// a buffer copies are still being made into waits for the copier
// (holdBuf, copier.go).
func (e *Endpoint) releaseIn(in *inMsg, h *PortHooks) {
	e.freeStage(in)
	if in.buf != nil && !e.holdBuf(in, h) {
		if in.heap {
			e.recvHeap -= in.length
		} else if h.FreeRecvBuf != nil {
			h.FreeRecvBuf(in.buf)
		}
	}
	in.buf, in.heap, in.copySeq = nil, false, 0
}

// delivered stops counting in's heap buffer, now the application's.
func (e *Endpoint) delivered(in *inMsg) {
	if in.heap {
		e.recvHeap -= in.length
	}
	in.buf, in.heap = nil, false
}

// freeStage returns in's staging chunks and slot table to the pool.
func (e *Endpoint) freeStage(in *inMsg) {
	if in.stage == nil {
		return
	}
	for i, c := range in.stage {
		if c != nil {
			e.freeChunks = append(e.freeChunks, c)
			e.stagedChunks--
			in.stage[i] = nil
		}
	}
	if len(in.stage) == e.stageSlots {
		e.freeSlots = append(e.freeSlots, in.stage)
	}
	in.stage = nil
}

// takeChunk returns a free staging chunk, or nil when the pool is spent.
func (e *Endpoint) takeChunk() *stageChunk {
	if n := len(e.freeChunks); n > 0 {
		c := e.freeChunks[n-1]
		e.freeChunks[n-1] = nil
		e.freeChunks = e.freeChunks[:n-1]
		e.stagedChunks++
		return c
	}
	if e.allocChunks >= e.maxChunks {
		return nil
	}
	e.allocChunks++
	e.stagedChunks++
	return new(stageChunk)
}

// takeSlots returns a cleared slot table for one message's chunks.
func (e *Endpoint) takeSlots() []*stageChunk {
	if n := len(e.freeSlots); n > 0 {
		s := e.freeSlots[n-1]
		e.freeSlots[n-1] = nil
		e.freeSlots = e.freeSlots[:n-1]
		return s
	}
	return make([]*stageChunk, e.stageSlots)
}

// StagedBytes returns the bytes of staging chunks that incoming messages
// not yet committed hold now (a gauge, at most Config.MaxStagingBytes).
func (e *Endpoint) StagedBytes() int { return e.stagedChunks * stageChunkSize }

// RecvHeapBytes returns the bytes of heap buffers committed to incoming
// messages not yet delivered, for ports without PortHooks.RecvBuf (a
// gauge, at most Config.MaxRecvHeapBytes).
func (e *Endpoint) RecvHeapBytes() int { return e.recvHeap }
