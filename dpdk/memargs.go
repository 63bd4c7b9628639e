package dpdk

import (
	"os"
	"strconv"

	"github.com/homa-dpdk/homa-dpdk/dpdk/ealargs"
)

// Memory describes how EAL can get its memory on this machine (see
// package ealargs, where it lives so that cgo-free programs can use it).
type Memory = ealargs.Memory

// MinFreeHugepages is how many free 2 MB pages (256 MB) ProbeMemory wants
// before it chooses hugepages.
const MinFreeHugepages = ealargs.MinFreeHugepages

// ProbeMemory looks at /proc/mounts and /sys for usable 2 MB hugepages.
func ProbeMemory() Memory { return ealargs.ProbeMemory() }

// VirtualDeviceArgs are EAL arguments for a process that uses virtual
// devices only (ealargs.VirtualDevices).
func VirtualDeviceArgs(lcores string, mem Memory, megabytes int, prefix string) []string {
	return ealargs.VirtualDevices(lcores, mem, megabytes, prefix)
}

// ArgsOr is given, the EAL arguments from the command line, or, when
// none were given (nil), the arguments for virtual devices on lcores
// (VirtualDeviceArgs: 1 GB, a file prefix of this process's own).
func ArgsOr(given []string, lcores string, mem Memory) []string {
	if given != nil {
		return given
	}
	return VirtualDeviceArgs(lcores, mem, 1024, "homa"+strconv.Itoa(os.Getpid()))
}
