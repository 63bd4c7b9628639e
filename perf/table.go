package perf

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/spf13/pflag"
)

// Scenario is one scenario of the harness as the command line, perf all
// and the report see it. Each scenario package registers its own in an
// init function (Register); the program imports every one, and this
// package imports none. The command line makes `perf NAME` from it, perf
// all runs those with an All in Order, and the goals table takes each
// one's rows in GoalOrder.
type Scenario struct {
	// Name is its command (`perf NAME`) and its report section's name.
	Name string
	// Order places it in `perf --help` and in perf all (ascending).
	Order int
	// Use follows the name in the usage line: "[--smoke] [--out DIR]".
	Use string
	// Short says in a line what it measures; Long in full (its --help).
	Short, Long string
	// Hidden keeps it out of `perf --help` (a peer process it starts).
	Hidden bool
	// Title heads its report section, and the section that says it failed.
	Title string
	// Key is its result's key in perf all's all.json ("": none).
	Key string
	// Command binds the command's flags to fs and returns its body; nil:
	// DirCommand(All), the flags every directory-writing scenario takes.
	Command func(fs *pflag.FlagSet) func(Invocation) error
	// All runs it into o.Dir and returns what perf all reports; prior
	// holds the results of the scenarios run before it in the same perf
	// all, by Name (nil: it runs as its own command). nil: perf all does
	// not run it.
	All func(o Options, prior map[string]any) (Outcome, error)
	// Goals are its rows of the goals table from its result in this run
	// (nil: it did not run or failed). nil: it has none.
	Goals func(result any) []Goal
	// GoalOrder places its rows in the goals table (ascending).
	GoalOrder int
}

// Invocation is what a scenario's command gets from the command line.
type Invocation struct {
	Out, Err io.Writer
	// EAL are the EAL arguments given after --; nil: none given (the
	// scenario's defaults for virtual devices).
	EAL []string
	// Changed says whether a flag was given.
	Changed func(flag string) bool
}

// Options are a scenario run's: the program to start daemons and child
// processes with, the results directory and the common flags.
type Options struct {
	Self    string // this program (os.Executable)
	Dir     string // results directory
	Smoke   bool   // tiny counts and durations
	NoVeth  bool   // skip kernel TCP across a veth pair
	Testpmd string // join Homa's hosts through this dpdk-testpmd ("": directly)
	Out     io.Writer
}

// Outcome is what a scenario's run gives perf all: its result (for
// all.json under its Key and for its goal rows), its report sections and
// the files it wrote.
type Outcome struct {
	Result   any
	Sections []Section
	Files    string // e.g. "rtt.json"
}

var table []Scenario

// Register adds s to the table; a second scenario of the same name is a
// programming error.
func Register(s Scenario) {
	if s.Name == "" || Lookup(s.Name) != nil {
		panic(fmt.Sprintf("perf: scenario %q registered twice or without a name", s.Name))
	}
	table = append(table, s)
	slices.SortStableFunc(table, func(a, b Scenario) int { return a.Order - b.Order })
}

// Scenarios are the registered scenarios in Order.
func Scenarios() []Scenario { return slices.Clone(table) }

// Lookup is the scenario named name, or nil.
func Lookup(name string) *Scenario {
	for i := range table {
		if table[i].Name == name {
			return &table[i]
		}
	}
	return nil
}

// DirCommand is the command of a scenario that writes a results
// directory: the flags --smoke, --out and --no-veth, two CPUs checked,
// the directory made, then run (with no prior results), and where the
// results are.
func DirCommand(run func(o Options, prior map[string]any) (Outcome, error)) func(fs *pflag.FlagSet) func(Invocation) error {
	return func(fs *pflag.FlagSet) func(Invocation) error {
		f := BindFlags(fs, "", true)
		return func(inv Invocation) error {
			o, err := f.Options(inv.Out)
			if err == nil {
				_, err = run(o, nil)
			}
			if err == nil {
				fmt.Fprintf(inv.Out, "results in %s\n", o.Dir)
			}
			return err
		}
	}
}

// Reporter is a scenario's result, which makes its report.
type Reporter interface{ Report() Report }

// Measured runs measure under a progress line of steps named name, then
// writes its result's report: the text on o.Out, the files into o.Dir.
// It is a scenario's run for perf all and for its command.
func Measured[R Reporter](o Options, name string, steps int, measure func(*Progress) (R, error)) (Outcome, error) {
	prog := NewProgress(os.Stderr, name, steps)
	res, err := measure(prog)
	prog.Done()
	if err != nil {
		return Outcome{}, err
	}
	rep := res.Report()
	rep.Text(o.Out)
	imgs, err := rep.WriteFiles(o.Dir)
	if err != nil {
		return Outcome{}, err
	}
	return Outcome{Result: res, Sections: []Section{rep.Section(imgs)}, Files: rep.JSON}, nil
}
