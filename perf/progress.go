package perf

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Progress is a one-line progress bar on a terminal (redrawn with \r:
// scenario, step, percent, elapsed) or, when the writer is not a
// terminal, one plain line per step. A nil *Progress does nothing.
type Progress struct {
	mu       sync.Mutex
	w        io.Writer
	tty      bool
	scenario string
	steps    int // steps in all
	step     int // the current step, from 1
	name     string
	frac     float64 // done of the current step
	start    time.Time
	drawn    time.Time
	width    int // of the last line drawn
	done     bool
}

// NewProgress returns a progress bar for scenario on w, which has steps
// steps in all.
func NewProgress(w io.Writer, scenario string, steps int) *Progress {
	return &Progress{w: w, tty: isTerminal(w), scenario: scenario, steps: max(steps, 1), start: time.Now()}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Step starts the next step.
func (p *Progress) Step(name string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.step++
	p.name, p.frac = name, 0
	if !p.tty {
		fmt.Fprintf(p.w, "%s: [%d/%d] %s\n", p.scenario, p.step, p.steps, name)
		return
	}
	p.draw()
}

// Set says how much of the current step is done (0..1). It redraws at
// most ten times a second, so a measuring loop may call it often.
func (p *Progress) Set(frac float64) {
	if p == nil || !p.tty {
		return
	}
	if !p.mu.TryLock() {
		return
	}
	defer p.mu.Unlock()
	p.frac = min(max(frac, 0), 1)
	if time.Since(p.drawn) >= 100*time.Millisecond {
		p.draw()
	}
}

// Done ends the bar (a newline on a terminal); calls after the first do
// nothing.
func (p *Progress) Done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	p.done = true
	if p.tty {
		p.step, p.frac, p.name = p.steps, 1, "done"
		p.draw()
		fmt.Fprintln(p.w)
	} else {
		fmt.Fprintf(p.w, "%s: done in %v\n", p.scenario, time.Since(p.start).Round(100*time.Millisecond))
	}
}

// draw draws the line: the whole scenario's progress, the step's name.
func (p *Progress) draw() {
	pct := 0.0
	if p.step > 0 {
		pct = 100 * (float64(p.step-1) + p.frac) / float64(p.steps)
	}
	const barWidth = 20
	n := int(pct / 100 * barWidth)
	line := fmt.Sprintf("%s [%s%s] %3.0f%% %d/%d %s (%v)", p.scenario, strings.Repeat("#", n), strings.Repeat(".", barWidth-n),
		pct, p.step, p.steps, p.name, time.Since(p.start).Round(time.Second))
	pad := ""
	if len(line) < p.width {
		pad = strings.Repeat(" ", p.width-len(line))
	}
	p.width = len(line)
	fmt.Fprintf(p.w, "\r%s%s", line, pad)
	p.drawn = time.Now()
}

// Steps is the number of steps taken so far.
func (p *Progress) Steps() int {
	if p == nil {
		return 0
	}
	return p.step
}
