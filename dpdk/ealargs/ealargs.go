// Package ealargs builds EAL argument lists and finds out how EAL can get
// its memory on this machine. It is pure Go, so that a program which only
// starts DPDK processes (dpdk-testpmd, a daemon) needs none of the cgo of
// package dpdk; package dpdk offers the same functions to its users.
package ealargs

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// Memory describes how EAL can get its memory on this machine.
type Memory struct {
	HugeDir   string // a mounted hugetlbfs with 2 MB pages, or ""
	FreePages int    // 2 MB hugepages free and not reserved by another process
	Reason    string // why hugepages are not used, when they are not
}

// MinFreeHugepages is how many free 2 MB pages (256 MB) ProbeMemory wants
// before it chooses hugepages.
const MinFreeHugepages = 128

// hugeSys is where the kernel tells of its 2 MB hugepages.
var hugeSys = "/sys/kernel/mm/hugepages/hugepages-2048kB"

// ProbeMemory looks at /proc/mounts and /sys for usable 2 MB hugepages.
// Pages that are free but reserved (resv_hugepages: mapped by another
// process, not touched yet) are not usable: they count as taken.
func ProbeMemory() Memory {
	var m Memory
	free, resv, err := Hugepages()
	if err != nil {
		m.Reason = "the kernel offers no 2 MB hugepages"
		return m
	}
	m.FreePages = max(free-resv, 0)
	f, err := os.Open("/proc/mounts")
	if err != nil {
		m.Reason = "cannot read /proc/mounts"
		return m
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 4 && fields[2] == "hugetlbfs" && !strings.Contains(fields[3], "pagesize=1G") {
			m.HugeDir = fields[1]
			break
		}
	}
	switch {
	case m.HugeDir == "":
		m.Reason = "no hugetlbfs is mounted"
	case m.FreePages < MinFreeHugepages:
		m.Reason = "only " + strconv.Itoa(m.FreePages) + " free 2 MB hugepages (" + strconv.Itoa(free) + " free, " +
			strconv.Itoa(resv) + " of them reserved by other processes; want " + strconv.Itoa(MinFreeHugepages) + ")"
	}
	return m
}

// Hugepages are the machine's free 2 MB hugepages and how many of those
// other processes have reserved (resv_hugepages, 0 when unreadable); err
// when the kernel has no 2 MB hugepages.
func Hugepages() (free, reserved int, err error) {
	if free, err = readCount(hugeSys + "/free_hugepages"); err != nil {
		return 0, 0, err
	}
	reserved, _ = readCount(hugeSys + "/resv_hugepages")
	return free, reserved, nil
}

// readCount reads a file holding one decimal number.
func readCount(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// UseHugepages reports whether EAL should run on hugepages.
func (m Memory) UseHugepages() bool { return m.Reason == "" }

// Args returns the EAL memory arguments: hugepages on HugeDir when usable,
// otherwise --no-huge with megabytes of ordinary memory.
func (m Memory) Args(megabytes int) []string {
	if m.UseHugepages() {
		return []string{"--huge-dir", m.HugeDir}
	}
	return []string{"--no-huge", "-m", strconv.Itoa(megabytes)}
}

// VirtualDevices returns the EAL arguments for a process that uses virtual
// devices only: the lcores, --no-pci (never touch the machine's own NIC),
// quiet EAL logging, hugepages when usable (in-memory: no files left
// behind) or --no-huge with megabytes of memory and a file prefix of its
// own (--no-huge implies legacy memory, which --in-memory refuses).
func VirtualDevices(lcores string, mem Memory, megabytes int, prefix string) []string {
	args := []string{"-l", lcores, "--no-pci", "--log-level", "lib.eal:error"}
	if mem.UseHugepages() {
		args = append(args, "--in-memory")
	} else {
		args = append(args, "--file-prefix", prefix)
	}
	return append(args, mem.Args(megabytes)...)
}
