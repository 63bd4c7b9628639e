package dpdk

/*
#include "shim.h"
*/
import "C"

import "unsafe"

// Mbuf is a DPDK packet buffer (struct rte_mbuf). Pointers to it live in C
// memory; Go code handles them as *Mbuf and never copies the struct.
type Mbuf C.struct_rte_mbuf

// Offsets of rte_mbuf fields, from the headers (shim.h).
const (
	offBufAddr   = uintptr(C.HOMA_MBUF_OFF_BUF_ADDR)
	offDataOff   = uintptr(C.HOMA_MBUF_OFF_DATA_OFF)
	offRefcnt    = uintptr(C.HOMA_MBUF_OFF_REFCNT)
	offNbSegs    = uintptr(C.HOMA_MBUF_OFF_NB_SEGS)
	offPort      = uintptr(C.HOMA_MBUF_OFF_PORT)
	offOlFlags   = uintptr(C.HOMA_MBUF_OFF_OL_FLAGS)
	offPktLen    = uintptr(C.HOMA_MBUF_OFF_PKT_LEN)
	offDataLen   = uintptr(C.HOMA_MBUF_OFF_DATA_LEN)
	offBufLen    = uintptr(C.HOMA_MBUF_OFF_BUF_LEN)
	offTxOffload = uintptr(C.HOMA_MBUF_OFF_TX_OFFLOAD)
	offNext      = uintptr(C.HOMA_MBUF_OFF_NEXT)

	l2LenBits = uint(C.HOMA_MBUF_L2_LEN_BITS)
	l3LenBits = uint(C.HOMA_MBUF_L3_LEN_BITS)
)

// Offload flags of an mbuf (ol_flags) for IPv4 header checksum offload.
const (
	// TxIPv4 says the packet is IPv4 (RTE_MBUF_F_TX_IPV4).
	TxIPv4 = uint64(C.RTE_MBUF_F_TX_IPV4)
	// TxIPCksum asks the NIC to compute the IPv4 header checksum
	// (RTE_MBUF_F_TX_IP_CKSUM); the port must have been configured with
	// TxOffloadIPv4Cksum.
	TxIPCksum = uint64(C.RTE_MBUF_F_TX_IP_CKSUM)
)

// DataLen is the number of data bytes in this segment.
func (m *Mbuf) DataLen() int { return int(*m.u16(offDataLen)) }

// PktLen is the number of data bytes in the whole packet (all segments).
func (m *Mbuf) PktLen() int { return int(*m.u32(offPktLen)) }

// NumSegs is the number of segments of the packet.
func (m *Mbuf) NumSegs() int { return int(*m.u16(offNbSegs)) }

// Port is the input port of a received packet.
func (m *Mbuf) Port() uint16 { return *m.u16(offPort) }

// Headroom is the free space before the data.
func (m *Mbuf) Headroom() int { return int(*m.u16(offDataOff)) }

// Tailroom is the free space after the data of this segment.
func (m *Mbuf) Tailroom() int {
	return int(*m.u16(offBufLen)) - int(*m.u16(offDataOff)) - int(*m.u16(offDataLen))
}

// Data returns the data of this segment as a slice over the mbuf's own
// memory, without copying. The slice is valid until the mbuf is freed or
// handed to TxBurst (which then owns it), and its length is fixed: after
// Prepend, Append, Adj or Trim call Data again. Copy the bytes to keep them.
func (m *Mbuf) Data() []byte {
	return unsafe.Slice(m.dataPtr(), *m.u16(offDataLen))
}

// CopyData returns a copy of the packet's bytes (all segments), for use
// after the mbuf is gone.
func (m *Mbuf) CopyData() []byte { return m.AppendData(make([]byte, 0, m.PktLen())) }

// Prepend moves the start of the data back by n bytes and returns the new
// first n bytes (valid as Data's result is), or nil when the headroom is
// smaller than n.
func (m *Mbuf) Prepend(n int) []byte {
	off := m.u16(offDataOff)
	if n < 0 || n > int(*off) {
		return nil
	}
	*off -= uint16(n)
	*m.u16(offDataLen) += uint16(n)
	*m.u32(offPktLen) += uint32(n)
	return unsafe.Slice(m.dataPtr(), n)
}

// Append extends the data of the last segment by n bytes and returns the
// new n bytes (valid as Data's result is), or nil when the tailroom is too
// small.
func (m *Mbuf) Append(n int) []byte {
	if n < 0 || n > 0xffff {
		return nil
	}
	if m.NumSegs() != 1 {
		p := C.homa_pktmbuf_append((*C.struct_rte_mbuf)(m), C.uint16_t(n))
		if p == nil {
			return nil
		}
		return unsafe.Slice((*byte)(unsafe.Pointer(p)), n)
	}
	if n > m.Tailroom() {
		return nil
	}
	dl := m.u16(offDataLen)
	tail := unsafe.Add(unsafe.Pointer(m.dataPtr()), *dl)
	*dl += uint16(n)
	*m.u32(offPktLen) += uint32(n)
	return unsafe.Slice((*byte)(tail), n)
}

// Adj removes n bytes from the start of the packet; it reports false, and
// changes nothing, when the first segment has fewer than n bytes.
func (m *Mbuf) Adj(n int) bool {
	dl := m.u16(offDataLen)
	if n < 0 || n > int(*dl) {
		return false
	}
	*m.u16(offDataOff) += uint16(n)
	*dl -= uint16(n)
	*m.u32(offPktLen) -= uint32(n)
	return true
}

// Trim removes n bytes from the end of the packet; it reports false, and
// changes nothing, when the last segment has fewer than n bytes.
func (m *Mbuf) Trim(n int) bool {
	if n < 0 || n > 0xffff {
		return false
	}
	if m.NumSegs() != 1 {
		return C.homa_pktmbuf_trim((*C.struct_rte_mbuf)(m), C.uint16_t(n)) == 0
	}
	dl := m.u16(offDataLen)
	if n > int(*dl) {
		return false
	}
	*dl -= uint16(n)
	*m.u32(offPktLen) -= uint32(n)
	return true
}

// SetLen sets a single-segment mbuf's data length to n (from the current
// data start), as a freshly allocated mbuf is filled; false when n exceeds
// the buffer.
func (m *Mbuf) SetLen(n int) bool {
	if n < 0 || n > int(*m.u16(offBufLen))-int(*m.u16(offDataOff)) || m.NumSegs() != 1 {
		return false
	}
	*m.u16(offDataLen) = uint16(n)
	*m.u32(offPktLen) = uint32(n)
	return true
}

// OlFlags returns the offload flags.
func (m *Mbuf) OlFlags() uint64 { return *m.u64(offOlFlags) }

// SetOlFlags replaces the offload flags.
func (m *Mbuf) SetOlFlags(f uint64) { *m.u64(offOlFlags) = f }

// SetIPv4CksumOffload asks the NIC to fill in the IPv4 header checksum of
// this packet: it sets TxIPv4|TxIPCksum and the L2 and L3 header lengths
// (l2Len includes any VLAN tag). The IPv4 checksum field must be zero.
func (m *Mbuf) SetIPv4CksumOffload(l2Len, l3Len int) {
	*m.u64(offOlFlags) |= TxIPv4 | TxIPCksum
	mask := uint64(1)<<(l2LenBits+l3LenBits) - 1
	v := uint64(l2Len)&(1<<l2LenBits-1) | (uint64(l3Len)&(1<<l3LenBits-1))<<l2LenBits
	p := m.u64(offTxOffload)
	*p = *p&^mask | v
}

// TxOffloadLens returns the L2 and L3 lengths set for TX offloads.
func (m *Mbuf) TxOffloadLens() (l2Len, l3Len int) {
	v := *m.u64(offTxOffload)
	return int(v & (1<<l2LenBits - 1)), int(v >> l2LenBits & (1<<l3LenBits - 1))
}

// Refcnt is the mbuf's reference count.
func (m *Mbuf) Refcnt() int { return int(*m.u16(offRefcnt)) }

// Shared reports whether another reference than the caller's holds the
// mbuf (its reference count is above 1), read atomically: after a Batch
// with HoldSent sent it, whether the driver, or a ring pair's peer that
// received it, has not freed it yet.
func (m *Mbuf) Shared() bool { return m.loadRefcnt() > 1 }

// Free returns the mbuf (and its chain) to its pool. It is a C call: free
// bursts with FreeBulk.
func (m *Mbuf) Free() { C.rte_pktmbuf_free((*C.struct_rte_mbuf)(m)) }

// ExtBuf is the shared information of one external buffer (memory not
// owned by a mempool, such as a worker's shared-memory arena) that mbufs
// can be attached to, so that the NIC sends from it without a copy. Its
// release count grows each time the last mbuf attached to it is freed — by
// the application, or by the driver once the packet has been transmitted —
// which tells the owner that the memory may be reused.
type ExtBuf struct {
	shinfo   *C.struct_rte_mbuf_ext_shared_info
	released *uint64 // C memory, written atomically by the free callback
}

// NewExtBuf makes the shared information for one external buffer.
func NewExtBuf() (*ExtBuf, error) {
	if !Initialized() {
		return nil, ErrNotInitialized
	}
	var rel *C.uint64_t
	sh := C.homa_extbuf_new(&rel)
	if sh == nil {
		return nil, newError("allocate external buffer info", 12) // ENOMEM
	}
	return &ExtBuf{shinfo: sh, released: (*uint64)(unsafe.Pointer(rel))}, nil
}

// Released is how many times all mbufs attached to the buffer were freed
// (and, with Hold, the owner let go too).
func (e *ExtBuf) Released() uint64 { return loadU64(e.released) }

// Hold takes a reference for the buffer's owner: until Unhold, the release
// count cannot grow, however many attached mbufs come and go. An owner
// that attaches a message's packets one at a time holds the buffer for the
// message's life; the count then grows exactly once, when the message is
// done and its last packet has left. C calls.
func (e *ExtBuf) Hold() { C.homa_extbuf_hold(e.shinfo) }

// Unhold drops the owner's reference (counting the release at once when
// no mbuf is attached any more).
func (e *ExtBuf) Unhold() { C.homa_extbuf_unhold(e.shinfo) }

// Close frees the shared information; no mbuf may still be attached.
func (e *ExtBuf) Close() {
	if e.shinfo != nil {
		C.homa_extbuf_free(e.shinfo)
		e.shinfo = nil
	}
}

// AttachExtBuf makes m's data point into an external buffer: buf (which
// must stay mapped and unchanged until e.Released grows) with IO address
// iova (for virtual devices and IOVA-as-VA, the virtual address; for a
// physical NIC the memory must be registered with DPDK and DMA-mapped). The
// data length starts at 0: use SetLen or Append. It is a C call; it
// increments the buffer's reference count.
func (m *Mbuf) AttachExtBuf(buf []byte, iova uint64, e *ExtBuf) bool {
	if len(buf) == 0 || len(buf) > 0xffff || e.shinfo == nil {
		return false
	}
	C.homa_extbuf_attach((*C.struct_rte_mbuf)(m), unsafe.Pointer(&buf[0]), C.uint64_t(iova), C.uint16_t(len(buf)), e.shinfo)
	return true
}

// AttachChain is AttachExtBuf, SetLen(len(buf)) and Chain in one C call:
// body's data becomes buf (in e) and body is chained to m. On false
// (the chain would be too long) body is attached but not chained: free it.
func (m *Mbuf) AttachChain(body *Mbuf, buf []byte, iova uint64, e *ExtBuf) bool {
	if len(buf) == 0 || len(buf) > 0xffff || e.shinfo == nil {
		return false
	}
	return C.homa_attach_chain((*C.struct_rte_mbuf)(m), (*C.struct_rte_mbuf)(body), unsafe.Pointer(&buf[0]),
		C.uint64_t(iova), C.uint16_t(len(buf)), e.shinfo) == 0
}

// Chain appends tail (and its segments) to m's chain, updating m's packet
// length and segment count; false when the chain would be too long. The
// port must have TxOffloadMultiSegs to send it. It is a C call.
func (m *Mbuf) Chain(tail *Mbuf) bool {
	return C.homa_chain((*C.struct_rte_mbuf)(m), (*C.struct_rte_mbuf)(tail)) == 0
}

// AppendData appends the packet's bytes, all segments, to dst and returns
// it; with room in dst it allocates nothing.
func (m *Mbuf) AppendData(dst []byte) []byte {
	for s := m; s != nil; s = s.nextSeg() {
		dst = append(dst, s.Data()...)
	}
	return dst
}

// Next returns the next segment of a chained mbuf, or nil for the last.
func (m *Mbuf) Next() *Mbuf { return m.nextSeg() }

// IsExternal reports whether the mbuf's data lives in an external buffer.
func (m *Mbuf) IsExternal() bool { return m.OlFlags()&uint64(C.RTE_MBUF_F_EXTERNAL) != 0 }
