package config

import (
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// ealLcores is what EAL's arguments say of its lcores: the option that
// named them and, for each lcore id, the CPUs EAL runs it on. Lcore ids
// are EAL's; CPUs are the machine's. -l and -c run lcore n on CPU n;
// --lcores maps them (1@3: lcore 1 on CPU 3).
type ealLcores struct {
	opt  string          // "-l", "-c" or "--lcores"; "" when none named them
	arg  string          // the option's argument, as given
	cpus map[uint][]uint // lcore → its CPUs; nil when opt is ""
	main uint            // the main lcore: --main-lcore, else the lowest
	// mainOpt is whether --main-lcore named the main lcore.
	mainOpt bool
}

// parseEALLcores reads the lcore options of an EAL argument list: -l,
// -c and --lcores (either as "-l 0-1", "-l0-1" or "--lcores=..."), and
// --main-lcore. Without any of the first three EAL runs every CPU the
// process may use as the lcore of its number (opt ""; which CPUs those
// are is the machine's, so cpus is nil).
func parseEALLcores(args []string) (ealLcores, error) {
	var e ealLcores
	mainArg := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		opt, val := "", ""
		switch {
		case a == "-l" || a == "-c" || a == "--lcores" || a == "--main-lcore":
			opt = a
			if i+1 < len(args) {
				val = args[i+1]
			}
			i++
		case strings.HasPrefix(a, "--lcores=") || strings.HasPrefix(a, "--main-lcore="):
			opt, val, _ = strings.Cut(a, "=")
		case len(a) > 2 && (strings.HasPrefix(a, "-l") || strings.HasPrefix(a, "-c")) && a[2] != '-':
			opt, val = a[:2], a[2:]
		default:
			continue
		}
		if opt == "--main-lcore" {
			mainArg = val
			continue
		}
		if e.opt != "" {
			return e, fmt.Errorf("%s and %s both name the lcores; EAL takes one of -l, -c and --lcores", e.opt, opt)
		}
		cpus, err := parseLcoreOption(opt, val)
		if err != nil {
			return e, err
		}
		e.opt, e.arg, e.cpus = opt, val, cpus
	}
	if mainArg != "" {
		n, err := strconv.ParseUint(mainArg, 0, 16)
		if err != nil {
			return e, fmt.Errorf("--main-lcore %q is not an lcore id", mainArg)
		}
		e.main, e.mainOpt = uint(n), true
		if e.cpus != nil && e.cpus[e.main] == nil {
			return e, fmt.Errorf("--main-lcore %d is not one of EAL's lcores (%s %s gives lcores %s)", e.main, e.opt, e.arg, formatCPUs(e.lcores()))
		}
	} else if e.cpus != nil {
		e.main = e.lcores()[0]
	}
	return e, nil
}

// maxLcore bounds the lcore ids and CPUs of EAL's options (DPDK's
// CPU_SETSIZE); maxCPU those of any list read.
const (
	maxLcore = 1024
	maxCPU   = 1 << 16
)

func parseLcoreOption(opt, val string) (map[uint][]uint, error) {
	cpus := map[uint][]uint{}
	switch opt {
	case "-l":
		ids, err := parseCPUList(val)
		if err != nil || len(ids) == 0 || ids[len(ids)-1] >= maxLcore {
			return nil, fmt.Errorf("-l %q is not a list of lcores like 0-2 or 0,2,4", val)
		}
		for _, id := range ids {
			cpus[id] = []uint{id}
		}
	case "-c":
		mask, ok := new(big.Int).SetString(strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(val), "0x"), "0X"), 16)
		if !ok || mask.Sign() <= 0 || mask.BitLen() > maxLcore {
			return nil, fmt.Errorf("-c %q is not a hexadecimal mask of lcores like 0x3", val)
		}
		for id := 0; id < mask.BitLen(); id++ {
			if mask.Bit(id) == 1 {
				cpus[uint(id)] = []uint{uint(id)}
			}
		}
	case "--lcores":
		if err := parseLcoreMap(val, cpus); err != nil || len(cpus) == 0 || slices.Max(slices.Collect(maps.Keys(cpus))) >= maxLcore {
			return nil, fmt.Errorf("--lcores %q is not an lcore map like 0@0,1@2 or (1-2)@3", val)
		}
	}
	return cpus, nil
}

// parseLcoreMap reads --lcores's lcores[@cpus],...: lcores and cpus
// each a number, a range (2-4) or a group ((0,2-4)); without @cpus a
// group runs on its own CPUs as one set and a range each lcore on the
// CPU of its number.
func parseLcoreMap(s string, cpus map[uint][]uint) error {
	for s != "" {
		lset, rest, err := cutLcoreSet(s)
		if err != nil {
			return err
		}
		lcores, err := parseLcoreSet(lset)
		if err != nil {
			return err
		}
		var on []uint
		if after, ok := strings.CutPrefix(rest, "@"); ok {
			var cset string
			if cset, rest, err = cutLcoreSet(after); err != nil {
				return err
			}
			if on, err = parseLcoreSet(cset); err != nil {
				return err
			}
		} else if strings.HasPrefix(lset, "(") {
			on = lcores
		}
		for _, l := range lcores {
			if on == nil {
				cpus[l] = []uint{l}
			} else {
				cpus[l] = on
			}
		}
		switch {
		case rest == "":
			return nil
		case strings.HasPrefix(rest, ",") && len(rest) > 1:
			s = rest[1:]
		default:
			return fmt.Errorf("unexpected %q", rest)
		}
	}
	return fmt.Errorf("empty")
}

// cutLcoreSet splits s after its first set: a group up to its ")", or up
// to the next "@" or ",".
func cutLcoreSet(s string) (set, rest string, err error) {
	if strings.HasPrefix(s, "(") {
		end := strings.IndexByte(s, ')')
		if end < 0 {
			return "", "", fmt.Errorf("unclosed group")
		}
		return s[:end+1], s[end+1:], nil
	}
	end := strings.IndexAny(s, "@,")
	if end < 0 {
		end = len(s)
	}
	return s[:end], s[end:], nil
}

// parseLcoreSet reads a number, a range or a group of them, sorted.
func parseLcoreSet(s string) ([]uint, error) {
	if inner, ok := strings.CutPrefix(s, "("); ok {
		s = strings.TrimSuffix(inner, ")")
	} else if strings.Contains(s, ",") {
		return nil, fmt.Errorf("a list outside a group")
	}
	return parseCPUList(s)
}

// parseCPUList reads a list like 0-2,5 (the form of -l and of
// /sys/devices/system/cpu/online), sorted, without repeats.
func parseCPUList(s string) ([]uint, error) {
	var ids []uint
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 32)
		if err != nil || a >= maxCPU {
			return nil, fmt.Errorf("%q is not a number below %d", lo, maxCPU)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(strings.TrimSpace(hi), 10, 32); err != nil || b >= maxCPU {
				return nil, fmt.Errorf("%q is not a number below %d", hi, maxCPU)
			}
		}
		for n := min(a, b); n <= max(a, b); n++ {
			ids = append(ids, uint(n))
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// formatCPUs writes sorted ids as ranges: 0-2,5.
func formatCPUs(ids []uint) string {
	var b strings.Builder
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, ids[i])
		if j > i {
			fmt.Fprintf(&b, "-%d", ids[j])
		}
		i = j + 1
	}
	return b.String()
}

// lcores are EAL's lcore ids, sorted; nil when no option named them.
func (e ealLcores) lcores() []uint {
	ids := make([]uint, 0, len(e.cpus))
	for id := range e.cpus {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// cpusOf are the CPUs lcore runs on, where that is known from the
// arguments alone: its --lcores CPUs, or its own number (-l, -c, or no
// option). nil for an lcore the option does not name.
func (e ealLcores) cpusOf(lcore uint) []uint {
	if e.opt == "" {
		return []uint{lcore}
	}
	return e.cpus[lcore]
}

// how says how EAL places lcore on CPUs, for messages.
func (e ealLcores) how(lcore uint) string {
	switch e.opt {
	case "":
		return "EAL, given no -l, -c or --lcores, runs each lcore on the CPU of its number"
	case "--lcores":
		cpus := e.cpus[lcore]
		if len(cpus) == 1 {
			return fmt.Sprintf("EAL's --lcores %s runs lcore %d on CPU %d", e.arg, lcore, cpus[0])
		}
		return fmt.Sprintf("EAL's --lcores %s runs lcore %d on CPUs %s", e.arg, lcore, formatCPUs(cpus))
	}
	return fmt.Sprintf("EAL's %s %s runs each lcore on the CPU of its number", e.opt, e.arg)
}

// mainHow says which lcore is the main one and why: "the first as the
// main one", "--main-lcore 2 as the main one".
func (e ealLcores) mainHow() string {
	if e.mainOpt {
		return fmt.Sprintf("--main-lcore %d as the main one", e.main)
	}
	return "the first as the main one"
}

// workers are EAL's lcores but the main one.
func (e ealLcores) workers() []uint {
	return slices.DeleteFunc(e.lcores(), func(l uint) bool { return l == e.main })
}

// withLcore is the option's argument with lcore added, as an example of
// the fix: -l 0-2, -c 0x7, --lcores ...,2@5 (the lowest CPU no lcore runs
// on).
func (e ealLcores) withLcore(lcore uint) string {
	switch e.opt {
	case "-l":
		return "-l " + formatCPUs(append(e.lcores(), lcore))
	case "-c":
		mask := new(big.Int)
		for _, l := range append(e.lcores(), lcore) {
			mask.SetBit(mask, int(l), 1)
		}
		return "-c 0x" + mask.Text(16)
	}
	return fmt.Sprintf("%d@%d", lcore, e.freeCPU(nil))
}

// freeCPU is the lowest CPU that no lcore EAL names runs on and that is
// not in taken.
func (e ealLcores) freeCPU(taken map[uint]bool) uint {
	used := map[uint]bool{}
	for c := range taken {
		used[c] = true
	}
	for _, cpus := range e.cpus {
		for _, c := range cpus {
			used[c] = true
		}
	}
	var c uint
	for used[c] {
		c++
	}
	return c
}
