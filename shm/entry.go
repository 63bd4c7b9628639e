package shm

import (
	"encoding/binary"
	"net/netip"
	"strconv"
)

// Both rings carry 64-byte entries with one layout (little-endian):
//
//	off size field      submission (worker → engine)       completion (engine → worker)
//	  0  1   op         Op                                  CompOp
//	  1  1   flags      SubFlag bits (Send, Reply)          CompFlag bits
//	  2  2   port       Bind: server port to bind           local port the entry concerns
//	  4  4   length     Send/Reply: message bytes           message bytes / released bytes
//	  8  8   cookie     any value, echoed in completions    the submission's cookie
//	 16  8   rpc id     Reply: server id (odd); Abort:      RPC id (the client id for a
//	                    client id (even)                    response, the server id for a request)
//	 24  4   peer ip    Send/Reply: IPv4, network order     the other end of the RPC (IPv4)
//	 28  2   peer port  Send: server port; Reply: client's
//	 30  2   error      0                                   CompError: ErrCode
//	 32  8   offset     Send/Reply: first byte in arena     CompReleased: arena offset
//	 40  4   page       ReturnPages, Send, Reply: first     Request/Response: first pool page
//	                    pool page to give back
//	 44  4   pages      ReturnPages, Send, Reply: count     Request/Response: page count
//	 48 16   peer ip6   Send/Reply: IPv6, network order     the other end of the RPC (IPv6)
//
// A peer is IPv4 (peer ip set, peer ip6 zero) or IPv6 (peer ip zero,
// peer ip6 set, never an IPv4-mapped address); entries that name no peer
// have both zero.
//
// A received message lies in pages consecutive pool pages starting at
// page: byte i of the message is at pool offset page*PageSize+i. The
// worker gives them back with ReturnPages when it has read them, or,
// where the header has FeatureReturnOnSubmit, in the Page and Pages of
// its next Send or Reply (both zero: none). Such a run is given back
// before the Send or Reply is carried out, and even when that is then
// refused with an RPC error (16 and up); an entry refused as malformed
// (1..15: BadPage when the worker does not hold the run) gives back
// nothing.
//
// Quiet submissions. Where the header has FeatureQuietAccept, a Send or
// Reply with SubFlagQuiet is not answered with Accepted: a quiet Send's
// first completion is its outcome (Response or Error, with its cookie
// and its RPC id) and any Released; a quiet Reply's is its Released (or
// an Error, if refused). So a request and its response cost each side
// two entries when pages ride on submissions and the copy is released
// with the outcome: Send, Response; Request, Reply (plus Released where
// the engine reads the arena until the RPC ends).
const (
	entOp         = 0
	entFlags      = 1
	entPort       = 2
	entLength     = 4
	entCookie     = 8
	entRPC        = 16
	entPeerIP     = 24
	entPeerPort   = 28
	entErr        = 30
	entOffset     = 32
	entPage       = 40
	entPages      = 44
	entPeerIP6    = 48
	maxServerPort = 0x7fff // server ports are 1..0x7fff, as in the engine
)

// Op is what a submission asks of the engine.
type Op uint8

// Submission ops. 0 is never valid, so a zeroed slot is rejected.
const (
	OpBind        Op = 1 + iota // bind Port as a server port of this worker
	OpSend                      // send a request of Length bytes at Offset to PeerIP:PeerPort
	OpReply                     // answer request RPCID from PeerIP with Length bytes at Offset
	OpAbort                     // abort client RPC RPCID
	OpAbortAll                  // abort every client RPC of this worker
	OpReturnPages               // give back Pages pool pages from Page
	opEnd
)

var opNames = [...]string{OpBind: "bind", OpSend: "send", OpReply: "reply", OpAbort: "abort",
	OpAbortAll: "abort-all", OpReturnPages: "return-pages"}

func (o Op) String() string {
	if o > 0 && o < opEnd {
		return opNames[o]
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// SubFlag bits in a submission's flags (Send and Reply only).
const (
	// SubFlagQuiet: no Accepted when the engine accepts it (needs
	// FeatureQuietAccept; see "Quiet submissions" above).
	SubFlagQuiet uint8 = 1 << 0
	// SubFlagPriority (Send only; needs FeaturePriority): the request's
	// unscheduled packets go at the priority level in the flags' bits 2-4
	// (PriorityFlags) instead of the level its length gives under the
	// peer's cutoffs. The receiver still chooses the level of granted
	// bytes, as Homa's receivers do.
	SubFlagPriority  uint8 = 1 << 1
	subPriorityShift       = 2
	subPriorityMask  uint8 = 7 << subPriorityShift
	subFlagsKnown          = SubFlagQuiet | SubFlagPriority | subPriorityMask
)

// PriorityFlags are the flag bits of a Send whose unscheduled packets go
// at level (0 lowest to 7 highest; SubFlagPriority).
func PriorityFlags(level int) uint8 {
	return SubFlagPriority | uint8(level&7)<<subPriorityShift
}

// Priority is the level a Send asks for with SubFlagPriority, or -1
// when it names none.
func (s *Submission) Priority() int {
	if s.Flags&SubFlagPriority == 0 {
		return -1
	}
	return int(s.Flags&subPriorityMask) >> subPriorityShift
}

// CompOp is what a completion reports.
type CompOp uint8

// Completion ops.
const (
	CompAccepted CompOp = 1 + iota // the submission with Cookie was carried out; Send: RPCID is its id
	CompRequest                    // a request for server Port: RPCID (server id), Peer, Length in Pages from Page
	CompResponse                   // the response to client RPC RPCID (sent with Cookie), in Pages from Page
	CompError                      // a submission was refused, or RPC RPCID ended: Err says why
	CompReleased                   // the engine no longer reads arena [Offset, Offset+Length) of Cookie's message
	compEnd
)

var compNames = [...]string{CompAccepted: "accepted", CompRequest: "request", CompResponse: "response",
	CompError: "error", CompReleased: "released"}

func (o CompOp) String() string {
	if o > 0 && o < compEnd {
		return compNames[o]
	}
	return "comp(" + strconv.Itoa(int(o)) + ")"
}

// CompFlag bits in a completion's flags.
const (
	// CompFlagReleased on CompAccepted or CompError of a Send or Reply:
	// the engine has copied the payload and the arena bytes are free
	// again (no CompReleased follows).
	CompFlagReleased uint8 = 1 << iota
	compFlagsKnown         = CompFlagReleased
)

// ErrCode is why an entry failed: a field a worker wrote (1..15) or what
// happened to the RPC (16 and up). It travels in CompError completions.
type ErrCode uint16

const (
	ErrCodeNone ErrCode = iota
	// Bad submissions, found by Validate before the engine acts.
	ErrCodeBadOp        // op not a known Op
	ErrCodeBadFlags     // unknown flag bits
	ErrCodeBadReserved  // a reserved byte, or a field the op does not use, is not zero
	ErrCodeBadPort      // port out of range for the op
	ErrCodeBadPeer      // no peer address (IPv4 0.0.0.0 and IPv6 ::), both, or an IPv4-mapped IPv6 one
	ErrCodeBadLength    // length 0 or above the largest message
	ErrCodeBadArena     // [offset, offset+length) not inside the transmit arena
	ErrCodeBadPage      // page range empty or not inside the receive pool
	ErrCodeBadRPC       // RPC id of the wrong kind (Reply: odd server id; Abort: even, nonzero client id)
	ErrCodeBadCompError // completion: error code where none belongs, or none where one does
	errCodeBadEnd
)

// Errors the engine reports for RPCs and accepted submissions.
const (
	ErrCodeTimeout         ErrCode = 16 + iota // peer silent too long
	ErrCodeUnreachable                         // peer address cannot be resolved
	ErrCodePortUnreachable                     // server port unreachable at the peer
	ErrCodeAborted                             // Abort, AbortAll, or the worker's session ended
	ErrCodeNoBufferSpace                       // no receive-pool pages for the message
	ErrCodeNoRPC                               // no such RPC, or not in a state for this
	ErrCodePortInUse                           // Bind: port taken
	ErrCodeLimit                               // a per-worker limit (outstanding RPCs, bytes)
	ErrCodePeerRestarted                       // peer lost the RPC
	ErrCodeClosed                              // the port or session is closed
	// ErrCodePeerMessageLength: Send or Reply of a message above
	// DefaultMaxMessage to a peer that may run kernel Homa, which takes
	// no longer ones (the daemon's protocol.long_message_peers does not
	// name it). A refused Reply leaves the request to be answered again.
	ErrCodePeerMessageLength
	errCodeEnd
)

var errNames = [...]string{
	ErrCodeNone: "none", ErrCodeBadOp: "bad op", ErrCodeBadFlags: "bad flags",
	ErrCodeBadReserved: "nonzero reserved or unused field", ErrCodeBadPort: "bad port",
	ErrCodeBadPeer: "bad peer address", ErrCodeBadLength: "bad length",
	ErrCodeBadArena: "range outside the transmit arena", ErrCodeBadPage: "page range outside the receive pool",
	ErrCodeBadRPC: "bad RPC id", ErrCodeBadCompError: "bad error code",
	ErrCodeTimeout: "timeout", ErrCodeUnreachable: "peer unreachable",
	ErrCodePortUnreachable: "port unreachable", ErrCodeAborted: "aborted",
	ErrCodeNoBufferSpace: "no buffer space", ErrCodeNoRPC: "no such RPC",
	ErrCodePortInUse: "port in use", ErrCodeLimit: "worker limit reached",
	ErrCodePeerRestarted: "peer restarted", ErrCodeClosed: "closed",
	ErrCodePeerMessageLength: "message too long for the peer (kernel Homa's 1,000,000 bytes)",
}

func (e ErrCode) String() string {
	if int(e) < len(errNames) && errNames[e] != "" {
		return errNames[e]
	}
	return "error(" + strconv.Itoa(int(e)) + ")"
}

// known reports whether e is a defined code.
func (e ErrCode) known() bool { return e < errCodeBadEnd || (e >= ErrCodeTimeout && e < errCodeEnd) }

// Limits are what entries are checked against: the sizes of one region
// and its largest message (Layout.MaxMessage, or the engine's if less;
// Layout.Limits).
type Limits struct {
	ArenaSize  uint64 // transmit arena bytes
	PoolPages  uint64 // receive pool pages
	MaxMessage uint32 // largest message in bytes
}

// Submission is a decoded submission entry. The fields an op does not use
// (see the table above) must be zero.
type Submission struct {
	Op       Op
	Flags    uint8
	Port     uint16   // local server port (Bind)
	Length   uint32   // message bytes (Send, Reply)
	Cookie   uint64   // worker's tag, echoed in completions; any value
	RPCID    uint64   // Reply: server id; Abort: client id
	PeerIP   [4]byte  // an IPv4 peer, or zero
	PeerIP6  [16]byte // an IPv6 peer, or zero
	PeerPort uint16
	Offset   uint64 // arena offset of the message (Send, Reply)
	Page     uint32 // first pool page (ReturnPages)
	Pages    uint32 // page count (ReturnPages)
}

// Completion is a decoded completion entry.
type Completion struct {
	Op       CompOp
	Flags    uint8
	Port     uint16
	Length   uint32
	Cookie   uint64
	RPCID    uint64
	PeerIP   [4]byte  // an IPv4 peer, or zero
	PeerIP6  [16]byte // an IPv6 peer, or zero
	PeerPort uint16
	Err      ErrCode
	Offset   uint64
	Page     uint32
	Pages    uint32
}

// fields is the raw content common to both directions.
type fields struct {
	op, flags   uint8
	port        uint16
	length      uint32
	cookie, rpc uint64
	ip          [4]byte
	ip6         [16]byte
	peerPort    uint16
	err         uint16
	offset      uint64
	page, pages uint32
}

func (f *fields) encode(s *Slot) {
	le := binary.LittleEndian
	s[entOp], s[entFlags] = f.op, f.flags
	le.PutUint16(s[entPort:], f.port)
	le.PutUint32(s[entLength:], f.length)
	le.PutUint64(s[entCookie:], f.cookie)
	le.PutUint64(s[entRPC:], f.rpc)
	copy(s[entPeerIP:entPeerIP+4], f.ip[:])
	le.PutUint16(s[entPeerPort:], f.peerPort)
	le.PutUint16(s[entErr:], f.err)
	le.PutUint64(s[entOffset:], f.offset)
	le.PutUint32(s[entPage:], f.page)
	le.PutUint32(s[entPages:], f.pages)
	copy(s[entPeerIP6:entPeerIP6+16], f.ip6[:])
}

func (f *fields) decode(s *Slot) {
	le := binary.LittleEndian
	f.op, f.flags = s[entOp], s[entFlags]
	f.port = le.Uint16(s[entPort:])
	f.length = le.Uint32(s[entLength:])
	f.cookie = le.Uint64(s[entCookie:])
	f.rpc = le.Uint64(s[entRPC:])
	f.ip = [4]byte(s[entPeerIP : entPeerIP+4])
	f.peerPort = le.Uint16(s[entPeerPort:])
	f.err = le.Uint16(s[entErr:])
	f.offset = le.Uint64(s[entOffset:])
	f.page = le.Uint32(s[entPage:])
	f.pages = le.Uint32(s[entPages:])
	f.ip6 = [16]byte(s[entPeerIP6 : entPeerIP6+16])
}

// Encode writes s into dst.
func (s *Submission) Encode(dst *Slot) {
	f := fields{op: uint8(s.Op), flags: s.Flags, port: s.Port, length: s.Length, cookie: s.Cookie,
		rpc: s.RPCID, ip: s.PeerIP, ip6: s.PeerIP6, peerPort: s.PeerPort, offset: s.Offset, page: s.Page, pages: s.Pages}
	f.encode(dst)
}

// ParseSubmission decodes src, which a worker wrote and may be anything,
// and validates it. On ErrCodeNone every field is safe to use as Validate
// describes; otherwise the engine answers with a CompError carrying the
// code and the returned Cookie (and counts it).
func ParseSubmission(src *Slot, lim *Limits) (Submission, ErrCode) {
	var f fields
	f.decode(src)
	s := Submission{Op: Op(f.op), Flags: f.flags, Port: f.port, Length: f.length, Cookie: f.cookie,
		RPCID: f.rpc, PeerIP: f.ip, PeerIP6: f.ip6, PeerPort: f.peerPort, Offset: f.offset, Page: f.page, Pages: f.pages}
	if s.Op == 0 || s.Op >= opEnd {
		return s, ErrCodeBadOp
	}
	if f.err != 0 {
		return s, ErrCodeBadReserved
	}
	return s, s.Validate(lim)
}

// Which fields each op uses; the others must be zero.
const (
	usePort   = 1 << iota // Port
	useLength             // Length (with Offset: an arena range)
	useRPC                // RPCID
	usePeer               // PeerIP, PeerPort
	useOffset             // Offset
	usePages              // Page, Pages
)

var opUses = [opEnd]uint8{
	OpBind:        usePort,
	OpSend:        usePeer | useOffset | useLength | usePages,
	OpReply:       useRPC | usePeer | useOffset | useLength | usePages,
	OpAbort:       useRPC,
	OpAbortAll:    0,
	OpReturnPages: usePages,
}

// Validate checks every field of s against lim: the op is known, flags
// are known and on an op that takes them (SubFlagQuiet: Send and Reply),
// fields the op does not use are zero, ports are in range (a
// server port 1..0x7fff for Bind and Send's destination, nonzero for a
// Reply's client), the peer address is not 0.0.0.0, the length is
// 1..MaxMessage and [Offset, Offset+Length) lies inside the arena, the
// RPC id has the right parity (Reply: odd server id; Abort: even nonzero
// client id), and [Page, Page+Pages) is a nonempty range of the pool
// (ReturnPages; Send and Reply: unless both are zero).
// What it cannot check (ports bound, RPCs that exist, pages the worker
// really holds) is the engine's.
func (s *Submission) Validate(lim *Limits) ErrCode {
	if s.Op == 0 || s.Op >= opEnd {
		return ErrCodeBadOp
	}
	if s.Flags&^subFlagsKnown != 0 || (s.Flags != 0 && s.Op != OpSend && s.Op != OpReply) ||
		(s.Flags&(SubFlagPriority|subPriorityMask) != 0 && s.Op != OpSend) ||
		(s.Flags&subPriorityMask != 0 && s.Flags&SubFlagPriority == 0) {
		return ErrCodeBadFlags
	}
	use := opUses[s.Op]
	if s.setFields()&^use != 0 {
		return ErrCodeBadReserved
	}
	if use&usePort != 0 && (s.Port == 0 || s.Port > maxServerPort) {
		return ErrCodeBadPort
	}
	if use&usePeer != 0 {
		if !onePeer(s.PeerIP, s.PeerIP6) {
			return ErrCodeBadPeer
		}
		if s.PeerPort == 0 || (s.Op == OpSend && s.PeerPort > maxServerPort) {
			return ErrCodeBadPort
		}
	}
	if use&useLength != 0 {
		if s.Length == 0 || s.Length > lim.MaxMessage {
			return ErrCodeBadLength
		}
		if !inArena(s.Offset, uint64(s.Length), lim) {
			return ErrCodeBadArena
		}
	}
	if use&useRPC != 0 {
		odd := s.RPCID&1 == 1
		if (s.Op == OpReply) != odd || s.RPCID == 0 {
			return ErrCodeBadRPC
		}
	}
	if use&usePages != 0 && !inPool(s.Page, s.Pages, lim) && (s.Op == OpReturnPages || s.Page != 0 || s.Pages != 0) {
		return ErrCodeBadPage
	}
	return ErrCodeNone
}

// setFields returns the use bits of the fields that are not zero.
func (s *Submission) setFields() uint8 {
	var set uint8
	if s.Port != 0 {
		set |= usePort
	}
	if s.Length != 0 {
		set |= useLength
	}
	if s.RPCID != 0 {
		set |= useRPC
	}
	if s.PeerIP != [4]byte{} || s.PeerIP6 != [16]byte{} || s.PeerPort != 0 {
		set |= usePeer
	}
	if s.Offset != 0 {
		set |= useOffset
	}
	if s.Page != 0 || s.Pages != 0 {
		set |= usePages
	}
	return set
}

// onePeer reports whether exactly one of the two addresses is set, and
// the IPv6 one is not an IPv4-mapped address.
func onePeer(ip [4]byte, ip6 [16]byte) bool {
	v4, v6 := ip != [4]byte{}, ip6 != [16]byte{}
	return v4 != v6 && !(v6 && [12]byte(ip6[:12]) == [12]byte{10: 0xff, 11: 0xff})
}

func inArena(off, n uint64, lim *Limits) bool { return off <= lim.ArenaSize && n <= lim.ArenaSize-off }

func inPool(page, pages uint32, lim *Limits) bool {
	return pages > 0 && uint64(page) < lim.PoolPages && uint64(pages) <= lim.PoolPages-uint64(page)
}

// Encode writes c into dst.
func (c *Completion) Encode(dst *Slot) {
	f := fields{op: uint8(c.Op), flags: c.Flags, port: c.Port, length: c.Length, cookie: c.Cookie,
		rpc: c.RPCID, ip: c.PeerIP, ip6: c.PeerIP6, peerPort: c.PeerPort, err: uint16(c.Err), offset: c.Offset,
		page: c.Page, pages: c.Pages}
	f.encode(dst)
}

// ParseCompletion decodes src, which the engine wrote, and validates it
// as a worker should before using it: the op is known, flags are known,
// reserved bytes are zero, Err is set exactly on CompError and known, a
// message's pages are a range of the pool that holds Length bytes
// (1..MaxMessage), and a released range lies inside the arena.
func ParseCompletion(src *Slot, lim *Limits) (Completion, ErrCode) {
	var f fields
	f.decode(src)
	c := Completion{Op: CompOp(f.op), Flags: f.flags, Port: f.port, Length: f.length, Cookie: f.cookie,
		RPCID: f.rpc, PeerIP: f.ip, PeerIP6: f.ip6, PeerPort: f.peerPort, Err: ErrCode(f.err), Offset: f.offset,
		Page: f.page, Pages: f.pages}
	switch {
	case c.Op == 0 || c.Op >= compEnd:
		return c, ErrCodeBadOp
	case c.Flags&^compFlagsKnown != 0:
		return c, ErrCodeBadFlags
	case c.PeerIP != [4]byte{} && c.PeerIP6 != [16]byte{}:
		return c, ErrCodeBadPeer
	case (c.Op == CompError) != (c.Err != ErrCodeNone) || !c.Err.known():
		return c, ErrCodeBadCompError
	}
	switch c.Op {
	case CompRequest, CompResponse:
		if c.Length == 0 || c.Length > lim.MaxMessage {
			return c, ErrCodeBadLength
		}
		if !inPool(c.Page, c.Pages, lim) || uint64(c.Length) > uint64(c.Pages)*PageSize {
			return c, ErrCodeBadPage
		}
	case CompReleased:
		if !inArena(c.Offset, uint64(c.Length), lim) {
			return c, ErrCodeBadArena
		}
	}
	return c, ErrCodeNone
}

// PeerFields returns a as entries carry a peer: an IPv4 address (or an
// IPv4-mapped one) in the 4-byte field, an IPv6 one in the 16-byte field;
// both zero for the zero Addr.
func PeerFields(a netip.Addr) (ip [4]byte, ip6 [16]byte) {
	switch a = a.Unmap(); {
	case a.Is4():
		ip = a.As4()
	case a.Is6():
		ip6 = a.As16()
	}
	return ip, ip6
}

// PeerAddr is PeerFields' inverse: the peer an entry's fields name, or
// the zero Addr when both are zero.
func PeerAddr(ip [4]byte, ip6 [16]byte) netip.Addr {
	switch {
	case ip6 != [16]byte{}:
		return netip.AddrFrom16(ip6)
	case ip != [4]byte{}:
		return netip.AddrFrom4(ip)
	}
	return netip.Addr{}
}
