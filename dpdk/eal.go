package dpdk

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

var eal struct {
	mu          sync.Mutex
	initialized bool // EAL is up (Init succeeded and Cleanup not yet called)
	tried       bool // Init was called once, successfully or not
}

// Init initialises EAL from args, which are passed verbatim as argv[1:]
// (for example "-l", "0-1", "--no-huge", "--vdev", "net_null0"). It may be
// called once per process; a second call returns ErrAlreadyInitialized.
//
// On failure the *Error carries rte_errno, its text and the error lines DPDK
// logged (they usually name the bad argument or device). On success DPDK's
// start-up log is copied to standard error.
//
// The calling thread becomes EAL's main lcore. EAL pins it to the main
// lcore's CPU; Init restores the thread's previous affinity so that Go's
// other threads, which inherit affinity when created, are not confined to
// one CPU. It returns the number of arguments EAL consumed.
func Init(args []string) (int, error) {
	eal.mu.Lock()
	defer eal.mu.Unlock()
	if eal.tried {
		return 0, ErrAlreadyInitialized
	}
	eal.tried = true

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var saved unix.CPUSet
	haveSaved := unix.SchedGetaffinity(0, &saved) == nil

	argv := make([]*C.char, 0, len(args)+2)
	argv = append(argv, C.CString("homa-dpdk"))
	for _, a := range args {
		argv = append(argv, C.CString(a))
	}
	// EAL may keep pointers into argv (it permutes it), so the strings are
	// freed only after the call, and the array lives in C memory.
	cargv := (**C.char)(C.malloc(C.size_t(len(argv)+1) * C.size_t(unsafe.Sizeof(uintptr(0)))))
	slots := unsafe.Slice(cargv, len(argv)+1)
	copy(slots, argv)
	slots[len(argv)] = nil

	var logp *C.char
	var loglen C.size_t
	// getopt reports a bad option on standard error, outside DPDK's log,
	// and EAL prints its usage on standard output: capture both, then
	// pass them on (the usage only when asked for).
	restore := captureFD(2)
	restoreOut := captureFD(1)
	rc := C.homa_eal_init(C.int(len(argv)), cargv, &logp, &loglen)
	errno := int(C.homa_errno())
	stdoutText := restoreOut()
	stderrText := restore()
	log := stderrText
	if logp != nil {
		log += C.GoStringN(logp, C.int(loglen))
		C.free(unsafe.Pointer(logp))
	}
	for _, p := range argv {
		C.free(unsafe.Pointer(p))
	}
	C.free(unsafe.Pointer(cargv))
	if haveSaved {
		_ = unix.SchedSetaffinity(0, &saved)
	}
	if rc < 0 {
		os.Stderr.WriteString(stderrText)
		e := newError(fmt.Sprintf("EAL init %q", args), errno)
		e.Log = errorLines(log)
		if isUsage(stdoutText) {
			// 75 lines of EAL's options after a bad argument bury the
			// line that names it.
			e.Log += "; EAL's options: give -- --help"
		} else {
			os.Stdout.WriteString(stdoutText)
		}
		if h := memoryHint(log + stderrText); h != "" {
			e.Log += "; " + h
		}
		return 0, e
	}
	os.Stdout.WriteString(stdoutText)
	if log = quietHarmless(log); log != "" {
		os.Stderr.WriteString(log)
	}
	eal.initialized = true
	return int(rc), nil
}

// errorLines keeps the lines of a DPDK log that report a problem, joined
// with "; ", or the last line when none says so.
func errorLines(log string) string {
	var keep []string
	seen := map[string]bool{}
	lines := strings.Split(strings.TrimSpace(log), "\n")
	for _, l := range lines {
		l = strings.TrimSpace(l)
		ll := strings.ToLower(l)
		if seen[ll] {
			continue
		}
		seen[ll] = true
		for _, w := range []string{"error", "fail", "cannot", "invalid", "unrecognized", "unknown", "not ", "no ", "option"} {
			if strings.Contains(ll, w) {
				keep = append(keep, l)
				break
			}
		}
	}
	if len(keep) == 0 && len(lines) > 0 {
		keep = append(keep, strings.TrimSpace(lines[len(lines)-1]))
	}
	return strings.Join(keep, "; ")
}

// Initialized reports whether EAL is up.
func Initialized() bool {
	eal.mu.Lock()
	defer eal.mu.Unlock()
	return eal.initialized
}

// Cleanup releases EAL's resources (rte_eal_cleanup). EAL cannot be
// initialised again in this process afterwards.
func Cleanup() error {
	eal.mu.Lock()
	defer eal.mu.Unlock()
	if !eal.initialized {
		return ErrNotInitialized
	}
	eal.initialized = false
	if rc := C.rte_eal_cleanup(); rc < 0 {
		return newError("EAL cleanup", int(rc))
	}
	return nil
}

// LcoreCount is the number of lcores EAL was given (rte_lcore_count).
func LcoreCount() int { return int(C.rte_lcore_count()) }

// MainLcore is the id of the main lcore.
func MainLcore() uint { return uint(C.rte_get_main_lcore()) }

// LcoreID is the DPDK lcore id of the calling thread, or LcoreIDAny. It is
// only meaningful on a goroutine locked to its thread.
func LcoreID() uint { return uint(C.rte_lcore_id()) }

// WorkerLcores lists the enabled worker lcores (all but the main one), in
// increasing order.
func WorkerLcores() []uint {
	var ids []uint
	for i := C.rte_get_next_lcore(C.uint(^uint32(0)), 1, 0); int(i) < MaxLcore; i = C.rte_get_next_lcore(i, 1, 0) {
		ids = append(ids, uint(i))
	}
	return ids
}

// LcoreCPU is the first CPU the lcore is pinned to (rte_lcore_to_cpu_id),
// or -1 for an unknown lcore.
func LcoreCPU(lcore uint) int { return int(C.rte_lcore_to_cpu_id(C.int(lcore))) }

// LcoreSocket is the NUMA socket of an lcore.
func LcoreSocket(lcore uint) int { return int(C.rte_lcore_to_socket_id(C.uint(lcore))) }

// SocketID is the NUMA socket of the calling thread (SOCKET_ID_ANY, -1, for
// a thread DPDK does not know).
func SocketID() int { return int(C.rte_socket_id()) }

// SocketCount is the number of NUMA sockets EAL detected.
func SocketCount() int { return int(C.rte_socket_count()) }

// captureFD points file descriptor fd at a temporary file until the
// returned function is called; that function restores it and returns what
// was written. When capturing is impossible it does nothing.
func captureFD(fd int) func() string {
	f, err := os.CreateTemp("", "homa-eal-out")
	if err != nil {
		return func() string { return "" }
	}
	os.Remove(f.Name())
	saved, err := unix.Dup(fd)
	if err != nil {
		f.Close()
		return func() string { return "" }
	}
	if err := unix.Dup2(int(f.Fd()), fd); err != nil {
		unix.Close(saved)
		f.Close()
		return func() string { return "" }
	}
	return func() string {
		_ = unix.Dup2(saved, fd)
		unix.Close(saved)
		defer f.Close()
		b, _ := os.ReadFile("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
		return string(b)
	}
}

// isUsage reports whether EAL printed its usage.
func isUsage(out string) bool { return strings.Contains(out, "EAL common options:") }

// memoryHint says what to do when EAL could not get its memory: no
// hugetlbfs mounted, one it may not write, or no free hugepages.
func memoryHint(log string) string {
	l := strings.ToLower(log)
	for _, sign := range []string{"cannot get hugepage information", "cannot init memory", "not enough memory available",
		"cannot create lock on", "cannot allocate memory for hugepages"} {
		if strings.Contains(l, sign) {
			return "EAL could not get hugepages (none free, hugetlbfs not mounted, or not writable by this user): mount hugetlbfs and reserve 2 MB pages (scripts/setup.sh does), or run with --no-huge -m MB (or --in-memory on hugepages)"
		}
	}
	return ""
}

// harmless are DPDK log lines known to say nothing wrong on the machines
// homa-dpdk runs on; quietHarmless drops them from the logs it passes on
// (EAL's start-up, a vdev's creation), at any log.dpdk_level.
var harmless = []string{
	"No available 1048576 kB hugepages reported",
	"No legacy callbacks, legacy socket not created",
	"mp action callback",
	"Multi-process socket",
}

func quietHarmless(log string) string {
	if log == "" {
		return log
	}
	var keep []string
	for _, l := range strings.SplitAfter(log, "\n") {
		quiet := false
		for _, h := range harmless {
			quiet = quiet || strings.Contains(l, h)
		}
		if !quiet && l != "" {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}

// Version is the version of the DPDK library linked, e.g. "DPDK 22.11.5"
// (rte_version; no EAL needed).
func Version() string { return C.GoString(C.rte_version()) }
