package perf

import "fmt"

// Goals are issue 14's targets, checked against one perf all run's
// figures: each row names its figure, where it comes from, the goal and
// whether this run met it. A row whose scenario failed or did not run
// says so instead of a figure.

// Goal is one row of the goals table.
type Goal struct {
	Goal   string  `json:"goal"`
	Source string  `json:"source"` // the scenario and series the figure comes from
	Figure float64 `json:"figure"`
	Want   string  `json:"want"` // e.g. ">= 1.00"
	Met    bool    `json:"met"`
	Absent string  `json:"absent,omitempty"` // why there is no figure
}

func AtLeast(g *Goal, v, want float64) {
	g.Figure, g.Met, g.Want = v, v >= want, fmt.Sprintf(">= %.2f", want)
}
func AtMost(g *Goal, v, want float64) {
	g.Figure, g.Met, g.Want = v, v <= want, fmt.Sprintf("<= %.2f", want)
}

// GoalLink is the link the goals are set on: a net_ring pair, which
// copies nothing, as kernel TCP's skbs change hands.
const GoalLink = "homa-ring"

// GoalTable is the goal rows as a table, titled title and how many of
// them were met: "TITLE (3 of 5 met)".
func GoalTable(title string, gs []Goal) Table {
	t := Table{Header: []string{"goal", "this run", "want", "met", "from"}}
	met := 0
	for _, g := range gs {
		fig, ok := fmt.Sprintf("%.2f", g.Figure), "no"
		if g.Figure >= 100 {
			fig = fmt.Sprintf("%.0f", g.Figure)
		}
		if g.Met {
			ok = "yes"
			met++
		}
		if g.Absent != "" {
			fig, ok = "—", "("+g.Absent+")"
		}
		t.Rows = append(t.Rows, []string{g.Goal, fig, g.Want, ok, g.Source})
	}
	t.Title = fmt.Sprintf("%s (%d of %d met)", title, met, len(gs))
	return t
}

// GoalsSection is the goals table's part of the perf all report.
func GoalsSection(gs []Goal) Section {
	return Section{Name: "goals", Title: "goals: issue 14's targets against this run",
		Method: "Each figure is this run's, from the section named in its row; ratios are against kernel TCP measured " +
			"in the same run, on the link that copies nothing (" + GoalLink + ", a net_ring pair).",
		Tables: []Table{GoalTable("goals of this run", gs)}}
}

// GoalsOf makes a scenario's Goals from its goal rows' function: the
// result perf all has for it, or none (nil) when it did not run.
func GoalsOf[R any](goals func(*R) []Goal) func(any) []Goal {
	return func(result any) []Goal {
		r, _ := result.(*R)
		return goals(r)
	}
}
