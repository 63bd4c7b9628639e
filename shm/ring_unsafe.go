package shm

import "unsafe"

// The ring's indices are words in memory that another process may map.
// Go's sync/atomic works on any properly aligned word; these helpers make
// *uint64 and *uint32 views of bytes the caller has checked (newRing: the
// memory is 64-byte aligned and long enough, so the offsets are aligned
// and in range). The views keep the backing array alive like any slice
// element pointer; for mmapped memory the owner must not unmap it while
// a ring end is in use.

// u64At returns the 8-byte word at mem[off:]. off must be a multiple of 8
// and mem 8-byte aligned.
func u64At(mem []byte, off int) *uint64 {
	_ = mem[off+7]
	return (*uint64)(unsafe.Pointer(&mem[off]))
}

// u32At returns the 4-byte word at mem[off:]. off must be a multiple of 4
// and mem 4-byte aligned.
func u32At(mem []byte, off int) *uint32 {
	_ = mem[off+3]
	return (*uint32)(unsafe.Pointer(&mem[off]))
}

// isAligned reports whether mem starts at a multiple of align (a power of
// two). Empty memory is not aligned.
func isAligned(mem []byte, align uintptr) bool {
	return len(mem) > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(mem)))&(align-1) == 0
}
