package shm

import (
	"encoding/binary"
	"os"
	"testing"
	"unsafe"
)

// presentPages counts the 4 KB pages of b that this process's page tables
// map now (/proc/self/pagemap, bit 63 of each page's entry): a page
// counted here is touched without a page fault.
func presentPages(t *testing.T, b []byte) (present, pages int) {
	t.Helper()
	const page = 4096
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if start%page != 0 || len(b)%page != 0 {
		t.Fatalf("%d bytes at %#x: not whole pages", len(b), start)
	}
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Skipf("pagemap: %v", err)
	}
	defer f.Close()
	pages = len(b) / page
	ents := make([]byte, 8*pages)
	if _, err := f.ReadAt(ents, int64(start/page*8)); err != nil {
		t.Fatalf("pagemap: %v", err)
	}
	for i := range pages {
		if binary.LittleEndian.Uint64(ents[8*i:])&(1<<63) != 0 {
			present++
		}
	}
	return present, pages
}
