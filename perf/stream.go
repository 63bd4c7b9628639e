package perf

import (
	"time"
)

// StreamSize is one message size of the throughput scenario: its
// window and warm-up.
type StreamSize struct {
	Size   int `json:"size_bytes"`      // message bytes (MB: 10^6, as sizeName)
	Window int `json:"window"`          // messages outstanding
	Warmup int `json:"warmup_messages"` // messages before measuring
}

// StreamSizes are the default sizes: NCCL's shape (512 KiB slices, 8 in
// flight per connection: its 4 MiB buffer in 8 slots), then 1 MB, 8 MB
// and 64 MB. The window is 4 messages from 1 MB to 8 MB (32 MB in
// flight) and 2 at 64 MB, all that the demo's worker regions hold (128
// MiB of arena and of pool, demo/workers.go: 128 MB of requests in
// flight in the client's arena, 2 x 977 pages of the server's pool); the
// warm-up is about 50 MB of messages, at least a window's.
var StreamSizes = []StreamSize{
	{Size: 512 << 10, Window: 8, Warmup: 100},
	{Size: 1_000_000, Window: 4, Warmup: 50},
	{Size: 8_000_000, Window: 4, Warmup: 8},
	{Size: 64_000_000, Window: 2, Warmup: 2},
}

// StreamSizesFor are the default sizes and measuring time per size, or
// the --smoke ones (1 MB alone, a second per transport).
func StreamSizesFor(smoke bool) ([]StreamSize, time.Duration) {
	if smoke {
		return []StreamSize{{Size: 1_000_000, Window: 4, Warmup: 5}}, time.Second
	}
	return StreamSizes, 10 * time.Second
}

// StreamRun is one transport's figures at one size. Homa's runs are
// named by link (homaSeries: homa-memif, homa-ring), kernel TCP's by path
// (tcp-loopback, tcp-veth).
type StreamRun struct {
	Transport string  `json:"transport"`
	MTU       int     `json:"mtu,omitempty"`        // Homa's IP MTU when not 1500
	Size      int     `json:"size_bytes,omitempty"` // message bytes (none: a skipped transport)
	Window    int     `json:"window,omitempty"`     // messages outstanding
	Messages  int64   `json:"messages"`
	Seconds   float64 `json:"seconds"`
	Gbps      float64 `json:"gbps"` // payload bits per second / 1e9
	// CPU over the measuring window: the harness process (getrusage) and,
	// for Homa, the daemon (/proc/PID/stat), in seconds.
	HarnessCPU float64 `json:"harness_cpu_s"`
	DaemonCPU  float64 `json:"daemon_cpu_s"`
	CPUPerGB   float64 `json:"cpu_s_per_gb"` // (harness + daemon) CPU seconds per GB of payload
	Skipped    string  `json:"skipped,omitempty"`
	// Send is, for a Homa run, its sending host's DATA payload bytes by
	// how they left (nil: not read; SendUnread says why).
	Send       *SendBytes `json:"send_bytes,omitempty"`
	SendUnread string     `json:"send_bytes_unread,omitempty"`
}

// SendBytes are the DATA payload bytes a Homa host sent over a run,
// retransmissions included, by how: copied into the frame, or sent from
// the worker's own buffer (its engine's counters data_bytes_copied and
// data_bytes_zero_copy, read from the daemon's metrics endpoint before
// and after the run).
type SendBytes struct {
	Copied   uint64 `json:"copied"`
	ZeroCopy uint64 `json:"zero_copy"`
}

// Sub is s less an earlier reading o.
func (s SendBytes) Sub(o SendBytes) SendBytes {
	return SendBytes{Copied: s.Copied - o.Copied, ZeroCopy: s.ZeroCopy - o.ZeroCopy}
}

// Total is the payload bytes sent either way.
func (s SendBytes) Total() uint64 { return s.Copied + s.ZeroCopy }

// CopiesPerByte is the send side's copies per payload byte: the bytes
// copied over all bytes sent (0 when nothing was sent: see Total).
func (s SendBytes) CopiesPerByte() float64 {
	if s.Total() == 0 {
		return 0
	}
	return float64(s.Copied) / float64(s.Total())
}

// StreamRunner is a result with streaming runs (the throughput
// scenario's), which perf all hands the floor scenario.
type StreamRunner interface{ StreamRuns() []StreamRun }
