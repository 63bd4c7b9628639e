package perf

import (
	"fmt"
	"slices"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// RTTPoint is one size's percentiles.
type RTTPoint struct {
	Size  int     `json:"size_bytes"`
	Count int64   `json:"round_trips"`
	P50Us float64 `json:"p50_us"`
	P99Us float64 `json:"p99_us"`
	MaxUs float64 `json:"max_us"`
}

// SizeList names sizes: "100 B, 1 KB and 1 MB".
func SizeList(sizes []int) string {
	var names []string
	for _, n := range sizes {
		names = append(names, SizeName(n))
	}
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// LinkDistortions is what rtt's and throughput's distortions say of the
// two links Homa is measured on.
const LinkDistortions = `The links: net_memif copies every byte of every packet into its shared-memory ` +
	`ring on send and out of it on receive, both copies on the one polling core that also runs both Homa ` +
	`stacks, so large messages pay for both ends' protocol work and the copies on one CPU. net_ring passes ` +
	`the mbufs themselves from one host's port to the other's: no copy in the link, the analogue of a NIC's ` +
	`DMA, which moves the bytes without the CPU, though here nothing moves them at all and there is no wire, ` +
	`no serialisation delay and no descriptor or DMA cost. A ring pair can join only hosts in one process, ` +
	`which the demo's two hosts are; homa-ring is Homa's protocol and worker path with the link's cost taken ` +
	`out, a floor that a deployment over NICs does not reach, and the gap between homa-memif and homa-ring is ` +
	`roughly what memif's copies and ring handling cost. Both links are paced as 100 Gb/s NICs (the ` +
	`engine's pacer and the TX scheduler's NIC-queue estimate): net_memif reports 100 Gb/s and the demo gives ` +
	`the ring ports that rate, since a ring has no speed of its own (net_ring reports 10 Gb/s).`

func Point(size int, h *hdrhistogram.Histogram) RTTPoint {
	us := func(q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1e3 }
	return RTTPoint{Size: size, Count: h.TotalCount(), P50Us: us(50), P99Us: us(99), MaxUs: float64(h.Max()) / 1e3}
}

func Payload(size int) []byte {
	m := make([]byte, size)
	for i := range m {
		m[i] = byte(i*13 + 1)
	}
	return m
}

// SizeName is a message size as the reports write it: 100 B, 10 KB, 1 MB
// (KB 10^3 and MB 10^6 bytes; a size that is neither stays in bytes).
func SizeName(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%d MB", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%d KB", n/1000)
	case n >= 1<<20 && n%(1<<20) == 0: // binary sizes (NCCL's 512 KiB slices) in binary units
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1024 && n%1024 == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// Median is the median of xs (0: none); xs is not changed.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
