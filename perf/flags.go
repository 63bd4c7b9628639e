package perf

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Flags are the flags the scenarios' commands share, bound to a
// command's flag set: --smoke and --out always, --no-veth where it
// measures kernel TCP across a veth pair; and the kinds of flag several
// take (lists of names, loads and numbers, seconds), bound to the fields
// of a scenario's configuration. SmokeOver then makes that configuration
// the scenario's smoke size with the flags given on the command line
// over it.
type Flags struct {
	fs     *pflag.FlagSet
	Smoke  bool
	Out    string
	NoVeth bool
}

// BindFlags binds --smoke (smoke says what it runs; "": tiny counts and
// durations) and --out to fs, and --no-veth with veth.
func BindFlags(fs *pflag.FlagSet, smoke string, veth bool) *Flags {
	f := &Flags{fs: fs}
	fs.BoolVar(&f.Smoke, "smoke", false, cmp.Or(smoke, "tiny counts and durations (CI runs this once)"))
	fs.StringVar(&f.Out, "out", "", "results directory (default results/<timestamp>)")
	if veth {
		fs.BoolVar(&f.NoVeth, "no-veth", false, "skip kernel TCP across a veth pair between network namespaces")
	}
	return f
}

// Dir makes the results directory: --out, or results/<timestamp>.
func (f *Flags) Dir() (string, error) { return ResultsDir(f.Out) }

// Options are the options of a run from the flags, its text going to w:
// what the scenarios that start the daemon need checked (two CPUs: its
// polling loop and the workers) and the results directory made.
func (f *Flags) Options(w io.Writer) (Options, error) {
	if runtime.NumCPU() < 2 {
		return Options{}, fmt.Errorf("the scenario needs two CPUs (the daemon's polling loop and the workers); this machine has %d", runtime.NumCPU())
	}
	self, err := os.Executable()
	if err != nil {
		return Options{}, err
	}
	dir, err := f.Dir()
	if err != nil {
		return Options{}, err
	}
	return Options{Self: self, Dir: dir, Smoke: f.Smoke, NoVeth: f.NoVeth, Out: w}, nil
}

// SmokeOver makes *cfg smoke() when --smoke was given, then sets every
// flag given on the command line again, so that they win over the smoke
// size.
func SmokeOver[C any](f *Flags, cfg *C, smoke func() C) error {
	if !f.Smoke {
		return nil
	}
	given := map[string]string{}
	f.fs.Visit(func(fl *pflag.Flag) { given[fl.Name] = fl.Value.String() })
	*cfg = smoke()
	var err error
	f.fs.Visit(func(fl *pflag.Flag) {
		if e := fl.Value.Set(given[fl.Name]); e != nil && err == nil {
			err = fmt.Errorf("--%s: %w", fl.Name, e)
		}
	})
	return err
}

// Names binds a comma-separated list of names to *p, each trimmed and
// passed through norm (nil: as given).
func (f *Flags) Names(p *[]string, name, usage string, norm func(string) string) {
	same := func(s string) string { return s }
	if norm == nil {
		norm = same
	}
	f.fs.Var(list[string]{p, func(s string) (string, error) {
		if s == "" {
			return "", fmt.Errorf("an empty name")
		}
		return norm(s), nil
	}, same}, name, usage)
}

// Loads binds a comma-separated list of offered loads to *p, as
// fractions: 80, 80% and 0.8 are all 0.8; each must be below 100%.
func (f *Flags) Loads(p *[]float64, name, usage string) {
	f.fs.Var(list[float64]{p, ParseLoad, func(v float64) string {
		return strconv.FormatFloat(100*v, 'g', 6, 64) + "%"
	}}, name, usage)
}

// ParseLoad reads an offered load: a percentage (80, 80%) or a fraction
// (0.8), above 0 and below 100%.
func ParseLoad(s string) (float64, error) {
	t := strings.TrimSuffix(s, "%")
	v, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, fmt.Errorf("load %q is not a number", s)
	}
	if v > 1 || t != s {
		v /= 100
	}
	if !(v > 0 && v < 1) {
		return 0, fmt.Errorf("load %q: want above 0 and below 100%%", s)
	}
	return v, nil
}

// Ints binds a comma-separated list of whole numbers to *p.
func (f *Flags) Ints(p *[]int, name, usage string) {
	f.fs.Var(list[int]{p, strconv.Atoi, strconv.Itoa}, name, usage)
}

// Seconds binds a time given in seconds (2, 0.5) to *p.
func (f *Flags) Seconds(p *time.Duration, name, usage string) { f.fs.Var(seconds{p}, name, usage) }

// list is a flag of comma-separated values, each parsed; setting it
// replaces the whole list.
type list[T any] struct {
	p     *[]T
	parse func(string) (T, error)
	show  func(T) string
}

func (l list[T]) Set(s string) error {
	var out []T
	for _, item := range strings.Split(s, ",") {
		v, err := l.parse(strings.TrimSpace(item))
		if err != nil {
			return err
		}
		out = append(out, v)
	}
	*l.p = out
	return nil
}

func (l list[T]) String() string {
	parts := make([]string, len(*l.p))
	for i, v := range *l.p {
		parts[i] = l.show(v)
	}
	return strings.Join(parts, ",")
}

func (l list[T]) Type() string { return "list" }

// seconds is a duration flag given in seconds.
type seconds struct{ p *time.Duration }

func (s seconds) Set(v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		return fmt.Errorf("%q: want seconds, e.g. 2 or 0.5", v)
	}
	*s.p = time.Duration(f * float64(time.Second))
	return nil
}

func (s seconds) String() string {
	return strconv.FormatFloat(s.p.Seconds(), 'g', -1, 64)
}

func (s seconds) Type() string { return "seconds" }
