package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/homa-dpdk/homa-dpdk/shm"
	"github.com/homa-dpdk/homa-dpdk/shm/shmtest"
)

// layoutJSON is shm.Layout by the Python package's names (homa_dpdk.layout).
type layoutJSON struct {
	RegionSize  uint64 `json:"region_size"`
	SQOffset    uint64 `json:"sq_offset"`
	SQEntries   uint64 `json:"sq_entries"`
	CQOffset    uint64 `json:"cq_offset"`
	CQEntries   uint64 `json:"cq_entries"`
	ArenaOffset uint64 `json:"arena_offset"`
	ArenaSize   uint64 `json:"arena_size"`
	PoolOffset  uint64 `json:"pool_offset"`
	PoolPages   uint64 `json:"pool_pages"`
	MaxMessage  uint32 `json:"max_message"`
}

// sessionJSON is shmtest.SessionInfo, answered to "session N".
type sessionJSON struct {
	Index          int        `json:"index"`
	PID            int        `json:"pid"`
	Port           uint16     `json:"port"`
	Live           bool       `json:"live"`
	Layout         layoutJSON `json:"layout"`
	Hugetlb        bool       `json:"hugetlb"`
	PagesFree      int        `json:"pages_free"`
	PagesHeld      int        `json:"pages_held"`
	RPCs           int        `json:"rpcs"`
	Submissions    uint64     `json:"submissions"`
	BadSubmissions uint64     `json:"bad_submissions"`
	Wakeups        uint64     `json:"wakeups"`
	Quiet          uint64     `json:"quiet"`
	PrioritySends  uint64     `json:"priority_sends"`
	LastPriority   int        `json:"last_priority"`
	PagesOnSubmit  uint64     `json:"pages_on_submit"`
	SQCorrupt      uint64     `json:"sq_corrupt"`
	CQCorrupt      uint64     `json:"cq_corrupt"`
}

var errNoSession = errors.New("no such live session")

// command runs one command line (split in words) and returns its answer.
func command(e *shmtest.Engine, w []string) (any, error) {
	if len(w) == 0 {
		return nil, errors.New("empty command")
	}
	ok := struct{}{}
	switch {
	case w[0] == "pause" && len(w) == 1:
		e.Pause()
		return ok, nil
	case w[0] == "resume" && len(w) == 1:
		e.Resume()
		return ok, nil
	case w[0] == "refuse" && len(w) == 2 && (w[1] == "on" || w[1] == "off"):
		e.Refuse(w[1] == "on")
		return ok, nil
	case w[0] == "sessions" && len(w) == 1:
		return map[string]uint64{"attached": uint64(e.Sessions()), "doorbell_wakeups": e.DoorbellWakeups()}, nil
	case w[0] == "max-rpcs" && len(w) == 2:
		n, err := strconv.Atoi(w[1])
		if err != nil || n < 0 {
			return nil, fmt.Errorf("max-rpcs %q", w[1])
		}
		e.SetMaxRPCs(n)
		return ok, nil
	case w[0] == "script" && len(w) == 3:
		return ok, script(e, w[1], w[2])
	}
	if len(w) < 2 {
		return nil, fmt.Errorf("unknown command %q", w)
	}
	i, err := strconv.Atoi(w[1])
	if err != nil {
		return nil, fmt.Errorf("%s: session %q", w[0], w[1])
	}
	switch {
	case w[0] == "kill" && len(w) == 2:
		if !e.Kill(i) {
			return nil, errNoSession
		}
		return ok, nil
	case w[0] == "inject" && len(w) == 3:
		var s shm.Slot
		b, err := hex.DecodeString(w[2])
		if err != nil || len(b) != len(s) {
			return nil, fmt.Errorf("inject: want %d bytes in hex", len(s))
		}
		copy(s[:], b)
		if !e.Inject(i, s) {
			return nil, errNoSession
		}
		return ok, nil
	case w[0] == "hold" && len(w) == 3:
		n, err := strconv.Atoi(w[2])
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("hold: pages %q", w[2])
		}
		page, held := e.Hold(i, n)
		if !held {
			return nil, errors.New("hold: no live session, or no run of free pages")
		}
		return map[string]int{"page": page}, nil
	case w[0] == "session" && len(w) == 2:
		info, found := e.Session(i)
		if !found {
			return nil, errors.New("no such session")
		}
		return sessionAnswer(info), nil
	}
	return nil, fmt.Errorf("unknown command %q", w)
}

// script is "script PORT echo|CODE".
func script(e *shmtest.Engine, port, what string) error {
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return fmt.Errorf("script: port %q", port)
	}
	code := shm.ErrCodeNone
	if what != "echo" {
		c, err := strconv.ParseUint(what, 10, 16)
		if err != nil || c == 0 {
			return fmt.Errorf("script: want echo or an error code, not %q", what)
		}
		code = shm.ErrCode(c)
	}
	e.Script(uint16(p), code)
	return nil
}

func sessionAnswer(s shmtest.SessionInfo) sessionJSON {
	l := s.Layout
	return sessionJSON{Index: s.Index, PID: s.PID, Port: s.Port, Live: s.Live, Hugetlb: s.Hugetlb,
		Layout: layoutJSON{RegionSize: l.RegionSize, SQOffset: l.SQOffset, SQEntries: l.SQEntries,
			CQOffset: l.CQOffset, CQEntries: l.CQEntries, ArenaOffset: l.ArenaOffset, ArenaSize: l.ArenaSize,
			PoolOffset: l.PoolOffset, PoolPages: l.PoolPages, MaxMessage: l.MaxMessage},
		PagesFree: s.PagesFree, PagesHeld: s.PagesHeld, RPCs: s.RPCs, Submissions: s.Submissions,
		BadSubmissions: s.BadSubmissions, Wakeups: s.Wakeups, Quiet: s.Quiet, PrioritySends: s.PrioritySends, LastPriority: s.LastPriority, PagesOnSubmit: s.PagesOnSubmit, SQCorrupt: s.SQCorrupt, CQCorrupt: s.CQCorrupt}
}
