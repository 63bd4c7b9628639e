package dpdk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// Capture writes packets to a pcapng file that tshark and Wireshark open:
// one interface per port, nanosecond timestamps, and each packet's
// direction (received or sent) in its flags.
//
// The polling loop calls Record (or RecordMbufs), which only copies the
// packet into a chunk of memory; a goroutine writes full chunks to the
// file, so the loop never makes a system call for capture. When the writer
// falls behind, whole records are dropped and counted (Dropped), never
// blocking the loop. With last > 0, only the last `last` packets are kept,
// in memory, and written at Close.
//
// Record must be called from one goroutine at a time (the loop's).
type Capture struct {
	scratch []byte // a chained packet, made contiguous for Record
	f       *os.File
	path    string
	hdr     []byte // the section and interface blocks that start every file
	ifaces  int
	snaplen int

	// Size bound (LimitSize), the writer's: the current file's bytes,
	// and whether capture stopped at the bound.
	maxBytes int64
	files    int
	size     int64
	stopped  bool

	// Streaming mode.
	cur     *captureChunk
	free    chan *captureChunk
	full    chan *captureChunk
	done    chan error
	dropped atomic.Uint64

	// Last-N mode.
	last  int
	ring  [][]byte // records, each a whole Enhanced Packet Block
	next  int
	count int

	closeOnce sync.Once
	closeErr  error
	written   atomic.Uint64
}

// Direction of a captured packet.
type Direction uint8

const (
	Inbound  Direction = 1 // received
	Outbound Direction = 2 // sent
)

type captureChunk struct {
	buf     []byte
	records uint64 // packets in buf
}

const (
	captureChunkSize = 1 << 20
	captureChunks    = 8
	// pcapng block types and options.
	blockSHB         = 0x0A0D0D0A
	blockIDB         = 0x00000001
	blockEPB         = 0x00000006
	byteOrderMagic   = 0x1A2B3C4D
	linkTypeEthernet = 1
	optEnd           = 0
	optIfName        = 2
	optIfTsresol     = 9
	optEPBFlags      = 2
)

// NewCapture creates the file at path with one interface per name (e.g.
// port names) and starts the writer. snaplen bounds the bytes kept per
// packet (0: 65535); last > 0 keeps only the last `last` packets.
func NewCapture(path string, ifaceNames []string, snaplen, last int) (*Capture, error) {
	if len(ifaceNames) == 0 {
		return nil, errors.New("capture: no interface")
	}
	if last < 0 {
		return nil, fmt.Errorf("capture: last %d is negative", last)
	}
	if snaplen <= 0 || snaplen > 65535 {
		snaplen = 65535
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	c := &Capture{f: f, path: path, ifaces: len(ifaceNames), snaplen: snaplen, last: last}
	c.hdr = appendSHB(c.hdr)
	for _, n := range ifaceNames {
		c.hdr = appendIDB(c.hdr, n, snaplen)
	}
	if _, err := f.Write(c.hdr); err != nil {
		f.Close()
		return nil, fmt.Errorf("capture %s: %w", path, err)
	}
	c.size = int64(len(c.hdr))
	if last > 0 {
		c.ring = make([][]byte, last)
		for i := range c.ring {
			// Room for a 1500-byte MTU frame; a larger one grows its slot once.
			c.ring[i] = make([]byte, 0, epbLen(min(snaplen, 1518)))
		}
		return c, nil
	}
	c.free = make(chan *captureChunk, captureChunks)
	c.full = make(chan *captureChunk, captureChunks)
	c.done = make(chan error, 1)
	for range captureChunks - 1 {
		c.free <- &captureChunk{buf: make([]byte, 0, captureChunkSize)}
	}
	c.cur = &captureChunk{buf: make([]byte, 0, captureChunkSize)}
	go c.writer()
	return c, nil
}

// LimitSize bounds each capture file to maxBytes (0: no bound; at least
// a chunk, 1 MiB; a file holds whole chunks, so it may pass the bound by
// its own first blocks, under a KB): past it, with files > 1, the file is renamed path.1
// (path.1 to path.2, and so on; path.files-1 is overwritten, the oldest
// lost) and the capture goes on in a new path; with files <= 1 capture
// stops, the packets counted in Dropped. Streaming mode only; call it
// before the first Record.
func (c *Capture) LimitSize(maxBytes int64, files int) error {
	switch {
	case c.last > 0:
		return errors.New("capture: a size limit applies to streaming captures, not to the last-N mode")
	case maxBytes != 0 && maxBytes < captureChunkSize:
		return fmt.Errorf("capture: size limit %d is under one chunk (%d bytes)", maxBytes, captureChunkSize)
	}
	c.maxBytes, c.files = maxBytes, files
	return nil
}

func (c *Capture) writer() {
	var err error
	for ch := range c.full {
		if err == nil && c.maxBytes > 0 && !c.stopped && c.size+int64(len(ch.buf)) > c.maxBytes {
			err = c.rotate()
		}
		switch {
		case c.stopped || err != nil:
			c.dropped.Add(ch.records)
		default:
			var n int
			n, err = c.f.Write(ch.buf)
			c.size += int64(n)
		}
		ch.buf, ch.records = ch.buf[:0], 0
		c.free <- ch
	}
	c.done <- err
}

// rotate starts a new file at the size bound, or stops the capture.
func (c *Capture) rotate() error {
	if c.files <= 1 {
		c.stopped = true
		return nil
	}
	if err := c.f.Close(); err != nil {
		return err
	}
	for i := c.files - 1; i >= 1; i-- {
		from := c.path
		if i > 1 {
			from = fmt.Sprintf("%s.%d", c.path, i-1)
		}
		if err := os.Rename(from, fmt.Sprintf("%s.%d", c.path, i)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	f, err := os.Create(c.path)
	if err != nil {
		return err
	}
	c.f = f
	n, err := f.Write(c.hdr)
	c.size = int64(n)
	return err
}

// Record captures one packet seen on interface iface at time ts (ns since
// the Unix epoch). The bytes are copied; data may be reused at once.
func (c *Capture) Record(iface int, dir Direction, ts int64, data []byte) {
	if iface < 0 || iface >= c.ifaces {
		c.dropped.Add(1)
		return
	}
	n := epbLen(min(len(data), c.snaplen))
	if c.last > 0 {
		rec := appendEPB(c.ring[c.next][:0], iface, dir, ts, data, c.snaplen)
		c.ring[c.next] = rec
		c.next = (c.next + 1) % c.last
		c.count = min(c.count+1, c.last)
		c.written.Add(1)
		return
	}
	if len(c.cur.buf)+n > cap(c.cur.buf) {
		select {
		case nc := <-c.free:
			c.full <- c.cur // never blocks: at most captureChunks chunks exist
			c.cur = nc
		default:
			c.dropped.Add(1) // the writer is behind: drop rather than wait
			return
		}
	}
	c.cur.buf = appendEPB(c.cur.buf, iface, dir, ts, data, c.snaplen)
	c.cur.records++
	c.written.Add(1)
}

// Captured is the number of packets recorded (in last-N mode, including
// those later overwritten).
func (c *Capture) Captured() uint64 { return c.written.Load() }

// Dropped is the number of packets not captured because the writer was
// behind, the size limit stopped the capture (LimitSize with one file),
// or the interface index was wrong.
func (c *Capture) Dropped() uint64 { return c.dropped.Load() }

// Close writes what is pending and closes the file. The loop must have
// stopped calling Record.
func (c *Capture) Close() error {
	c.closeOnce.Do(func() {
		var err error
		if c.last > 0 {
			for i := range c.count {
				rec := c.ring[(c.next-c.count+i+c.last)%c.last]
				if _, werr := c.f.Write(rec); werr != nil && err == nil {
					err = werr
				}
			}
		} else {
			if len(c.cur.buf) > 0 {
				c.full <- c.cur
			}
			close(c.full)
			err = <-c.done
		}
		if cerr := c.f.Close(); cerr != nil && err == nil {
			err = cerr
		}
		if err != nil {
			c.closeErr = fmt.Errorf("capture: %w", err)
		}
	})
	return c.closeErr
}

// RecordMbufs captures a burst of mbufs (all their segments).
func (c *Capture) RecordMbufs(iface int, dir Direction, ts int64, pkts []*Mbuf) {
	for _, m := range pkts {
		if m.NumSegs() == 1 {
			c.Record(iface, dir, ts, m.Data())
			continue
		}
		c.scratch = m.AppendData(c.scratch[:0])
		c.Record(iface, dir, ts, c.scratch)
	}
}

func pad4(n int) int { return (n + 3) &^ 3 }

// epbLen is the length of an Enhanced Packet Block holding n captured
// bytes and the flags option.
func epbLen(n int) int { return 28 + pad4(n) + 8 + 4 + 4 }

func appendU32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
func appendU16(b []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(b, v) }

func appendOpt(b []byte, code uint16, val []byte) []byte {
	b = appendU16(b, code)
	b = appendU16(b, uint16(len(val)))
	b = append(b, val...)
	return append(b, make([]byte, pad4(len(val))-len(val))...)
}

func appendSHB(b []byte) []byte {
	const l = 28
	b = appendU32(b, blockSHB)
	b = appendU32(b, l)
	b = appendU32(b, byteOrderMagic)
	b = appendU16(b, 1) // version 1.0
	b = appendU16(b, 0)
	b = binary.LittleEndian.AppendUint64(b, ^uint64(0)) // section length unknown
	return appendU32(b, l)
}

func appendIDB(b []byte, name string, snaplen int) []byte {
	var opts []byte
	opts = appendOpt(opts, optIfName, []byte(name))
	opts = appendOpt(opts, optIfTsresol, []byte{9}) // nanoseconds
	opts = appendOpt(opts, optEnd, nil)
	l := uint32(20 + len(opts))
	b = appendU32(b, blockIDB)
	b = appendU32(b, l)
	b = appendU16(b, linkTypeEthernet)
	b = appendU16(b, 0)
	b = appendU32(b, uint32(snaplen))
	b = append(b, opts...)
	return appendU32(b, l)
}

func appendEPB(b []byte, iface int, dir Direction, ts int64, data []byte, snaplen int) []byte {
	capLen := min(len(data), snaplen)
	l := uint32(epbLen(capLen))
	b = appendU32(b, blockEPB)
	b = appendU32(b, l)
	b = appendU32(b, uint32(iface))
	b = appendU32(b, uint32(uint64(ts)>>32))
	b = appendU32(b, uint32(ts))
	b = appendU32(b, uint32(capLen))
	b = appendU32(b, uint32(len(data)))
	b = append(b, data[:capLen]...)
	for range pad4(capLen) - capLen {
		b = append(b, 0)
	}
	b = appendU16(b, optEPBFlags)
	b = appendU16(b, 4)
	b = appendU32(b, uint32(dir))
	b = appendU32(b, 0) // opt_endofopt
	return appendU32(b, l)
}
