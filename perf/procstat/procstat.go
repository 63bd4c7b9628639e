package procstat

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk/ealargs"
	"golang.org/x/sys/unix"
)

// What /proc says of a process: its CPU time and page faults
// (/proc/PID/stat), and how its worker regions are mapped
// (/proc/PID/smaps). The starts scenario reads them around each phase,
// and around each of a fresh daemon's first RPCs, as evidence for where
// a slow start's time goes.

// Counters are the counters of /proc/PID/stat that the harness uses:
// page faults (minor: the page was in memory or was made there, major:
// it was read from storage) and CPU time in clock ticks, all threads.
type Counters struct {
	MinFlt, MajFlt int64
	UTime, STime   int64 // clock ticks (clkTck a second)
}

// ClkTck is sysconf(_SC_CLK_TCK) on Linux.
const ClkTck = 100

// ParseStat reads the counters from the text of /proc/PID/stat.
// The fields after the command name are counted from the closing
// parenthesis, since the name may hold spaces and parentheses itself.
func ParseStat(b []byte) (Counters, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Counters{}, fmt.Errorf("/proc/PID/stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return Counters{}, fmt.Errorf("/proc/PID/stat: %d fields after the name", len(f))
	}
	// f[0] is field 3 (state): minflt is field 10, majflt 12, utime 14,
	// stime 15.
	var c Counters
	var err error
	for _, x := range []struct {
		to    *int64
		field int
	}{{&c.MinFlt, 10}, {&c.MajFlt, 12}, {&c.UTime, 14}, {&c.STime, 15}} {
		if *x.to, err = strconv.ParseInt(f[x.field-3], 10, 64); err != nil {
			return Counters{}, fmt.Errorf("/proc/PID/stat field %d: %w", x.field, err)
		}
	}
	return c, nil
}

// StatReader reads one process's /proc/PID/stat again and again through
// one open file (a pread each time), cheaply enough to read between two
// RPCs.
type StatReader struct {
	f   *os.File
	buf [1024]byte
}

func OpenStat(pid int) (*StatReader, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	return &StatReader{f: f}, nil
}

func (r *StatReader) Read() (Counters, error) {
	n, err := r.f.ReadAt(r.buf[:], 0)
	if err != nil && err != io.EOF {
		return Counters{}, err
	}
	return ParseStat(r.buf[:n])
}

func (r *StatReader) Close() { r.f.Close() }

// Hugepages are the machine's free 2 MB Hugepages and how many of those
// are reserved (-1, -1: unreadable).
func Hugepages() (free, reserved int) {
	free, reserved, err := ealargs.Hugepages()
	if err != nil {
		return -1, -1
	}
	return free, reserved
}

// CPUModel is the machine's CPU as /proc/cpuinfo names it ("" when
// unreadable).
func CPUModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// LoopThread is the thread of process pid that runs its polling loop:
// the EAL worker lcore's, the first thread named as EAL names them
// (rte-worker-N; threads the Go runtime starts from it inherit the name,
// but come later and have higher ids). ok is false when none is found.
func LoopThread(pid int) (tid int, ok bool) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, false
	}
	for _, e := range ents {
		t, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/comm", pid, t))
		if c := string(comm); (strings.HasPrefix(c, "rte-worker-") || strings.HasPrefix(c, "lcore-worker-")) && (!ok || t < tid) {
			tid, ok = t, true
		}
	}
	return tid, ok
}

// ThreadSwitches are a thread's context switches so far: voluntary (it
// slept: a busy-polling loop's thread sleeps only when the Go scheduler
// parks it) and involuntary (another thread took its CPU).
func ThreadSwitches(pid, tid int) (voluntary, involuntary int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/status", pid, tid))
	if err != nil {
		return 0, 0, err
	}
	return parseSwitches(string(b))
}

// parseSwitches reads the context switches from the text of
// /proc/PID/task/TID/status.
func parseSwitches(status string) (voluntary, involuntary int64, err error) {
	found := 0
	for _, l := range strings.Split(status, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		var to *int64
		switch k {
		case "voluntary_ctxt_switches":
			to = &voluntary
		case "nonvoluntary_ctxt_switches":
			to = &involuntary
		default:
			continue
		}
		if *to, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil {
			return 0, 0, fmt.Errorf("%s: %w", k, err)
		}
		found++
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("no context switch counts in the thread's status")
	}
	return voluntary, involuntary, nil
}

// SelfFaults are this process's minor and major page faults (getrusage).
func SelfFaults() (minor, major int64) {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	return ru.Minflt, ru.Majflt
}

// RegionMem is how a process maps the worker regions (the daemon's
// memfds named homa-worker): how many mappings, their size, how much of
// them is resident in this process's page tables, and their page size.
type RegionMem struct {
	Mappings   int    `json:"mappings"`
	SizeKB     int64  `json:"size_kb"`
	ResidentKB int64  `json:"resident_kb"` // Rss plus hugetlb pages mapped (smaps counts those apart)
	PageKB     int64  `json:"page_kb"`     // the largest KernelPageSize among them: 2048 on hugetlb, 4 otherwise
	Hugetlb    bool   `json:"hugetlb"`     // every mapping is on 2 MB pages
	Error      string `json:"error,omitempty"`
}

// regionName is in the smaps path of a worker region's mapping:
// "/memfd:homa-worker (deleted)" (shm.newSession names its memfds so).
const regionName = "memfd:homa-worker"

// RegionMemOf reads how process pid maps the worker regions; an error is
// kept in the result (smaps of another process needs root, or its owner).
func RegionMemOf(pid int) RegionMem {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return RegionMem{Error: err.Error()}
	}
	defer f.Close()
	return parseRegionSmaps(f)
}

// parseRegionSmaps sums the smaps entries of the mappings whose path
// names a worker region.
func parseRegionSmaps(r io.Reader) RegionMem {
	var m RegionMem
	in, huge := false, 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		key, rest, ok := strings.Cut(line, ":")
		if ok && !strings.Contains(key, " ") && !strings.Contains(key, "-") {
			// "Key:   123 kB"
			if !in {
				continue
			}
			v, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			switch key {
			case "Size":
				m.SizeKB += v
			case "Rss", "Shared_Hugetlb", "Private_Hugetlb":
				m.ResidentKB += v
			case "KernelPageSize":
				m.PageKB = max(m.PageKB, v)
				if v == 2048 {
					huge++
				}
			}
			continue
		}
		// A mapping's header: "addr-addr perms offset dev inode path".
		in = strings.Contains(line, regionName)
		if in {
			m.Mappings++
		}
	}
	if err := sc.Err(); err != nil {
		m.Error = err.Error()
	}
	m.Hugetlb = m.Mappings > 0 && huge == m.Mappings
	return m
}

// CPU is a process's user and system CPU time so far (/proc/PID/stat,
// all its threads; 10 ms ticks).
func CPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	c, err := ParseStat(b)
	if err != nil {
		return 0, err
	}
	return time.Duration(c.UTime+c.STime) * time.Second / ClkTck, nil
}

// Pages names the regions' pages: "2 MB", "4 KB", or "?" when unread.
func (m RegionMem) Pages() string {
	switch {
	case m.Error != "" || m.Mappings == 0:
		return "?"
	case m.Hugetlb:
		return "2 MB"
	}
	return fmt.Sprintf("%d KB", m.PageKB)
}
