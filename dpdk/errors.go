package dpdk

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"syscall"
)

// Error is a failed DPDK set-up call: the operation, DPDK's errno and its
// text (rte_strerror), and, for EAL initialisation, the error lines DPDK
// logged, which usually name the offending argument or device.
type Error struct {
	Op    string // what was being done, e.g. `configure port 0 (net_ring0)`
	Errno int    // rte_errno or the negated return code
	Text  string // rte_strerror(Errno)
	Log   string // DPDK's own error lines, when captured
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s (errno %d)", e.Op, e.Text, e.Errno)
	if e.Log != "" {
		s += ": " + e.Log
	}
	return s
}

// Unwrap returns the errno as a syscall.Errno so that errors.Is works with
// the standard errno values.
func (e *Error) Unwrap() error { return syscall.Errno(e.Errno) }

// newError builds an *Error from an errno (positive or negative).
func newError(op string, errno int) *Error {
	if errno < 0 {
		errno = -errno
	}
	return &Error{Op: op, Errno: errno, Text: C.GoString(C.rte_strerror(C.int(errno)))}
}

// rteErr builds an *Error from the calling thread's rte_errno. Call it in
// the same locked section as the failing call (see lockedCall).
func rteErr(op string) *Error { return newError(op, int(C.homa_errno())) }

var (
	// ErrNotInitialized is returned by calls that need EAL before Init.
	ErrNotInitialized = errors.New("dpdk: EAL is not initialised")
	// ErrAlreadyInitialized is returned by a second Init: EAL initialises
	// once per process, even after Cleanup.
	ErrAlreadyInitialized = errors.New("dpdk: EAL was already initialised in this process")
	// ErrNoMbufs is wrapped by the error a pool returns when it cannot
	// supply the mbufs asked for.
	ErrNoMbufs = errors.New("mbuf pool exhausted")
	// ErrNoPort is wrapped by PortByName for an unknown name.
	ErrNoPort = errors.New("no such port")
)
