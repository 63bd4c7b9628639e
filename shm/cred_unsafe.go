//go:build linux

package shm

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxGroups is the most supplementary groups a Linux process can have
// (NGROUPS_MAX).
const maxGroups = 65536

// getsockoptPeerGroups reads SO_PEERGROUPS of a connected unix socket: the
// supplementary groups its peer had when it connected. x/sys has no
// getter for an array of gids (GetsockoptString stops at the first zero
// byte, and gid 0 is four of them), so this is the raw call: the kernel
// writes at most *len bytes of gid_t at buf and, when they do not fit,
// fails with ERANGE and sets *len to the bytes it needs.
func getsockoptPeerGroups(fd int) ([]uint32, error) {
	n := 64
	for {
		buf := make([]uint32, n)
		size := uint32(4 * n)
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERGROUPS,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&size)), 0)
		switch {
		case e == 0:
			return buf[:min(int(size/4), n)], nil
		case e == unix.ERANGE && int(size/4) > n && int(size/4) <= maxGroups:
			n = int(size / 4)
		default:
			return nil, e
		}
	}
}
