package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
)

// The stop signals, SIGINT and SIGTERM. main catches them before it does
// anything else, so that one that comes at any moment of `run`'s or
// `demo --workers`' start-up (the flags and the config read, EAL coming
// up) stops the command cleanly: its context ends, it logs the phase,
// releases what it made and exits 0. Caught from main's first instant, a
// SIGINT is also taken when the process started with it ignored (a
// script's `cmd &`), as the demo did once up: it is not dropped. (Before
// main, in the program's first milliseconds, a signal has its default
// effect: docs/operating.md.)
//
// The other commands have no clean stop: once one is chosen
// (PersistentPreRunE), the signals go back to their default effect, and a
// signal that came while the flags were parsed is raised again then, as
// if it had never been caught.
type stopSignals struct {
	ch     chan os.Signal
	ctx    context.Context // ends, its cause a signalError, on the first signal
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	mode    stopMode
	pending os.Signal // the first signal, while mode is undecided
}

// stopMode is what a stop signal does.
type stopMode int

const (
	undecided stopMode = iota // the command is not chosen yet: remember it, end ctx
	clean                     // the command stops on ctx: end it
	dflt                      // the signal's default effect: signal.Reset, raised again
)

// catchStopSignals catches SIGINT and SIGTERM, undecided, from now on.
func catchStopSignals() *stopSignals {
	s := &stopSignals{ch: make(chan os.Signal, 2)}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	signal.Notify(s.ch, syscall.SIGINT, syscall.SIGTERM)
	go s.loop()
	return s
}

func (s *stopSignals) loop() {
	for sig := range s.ch {
		s.mu.Lock()
		switch s.mode {
		case undecided:
			if s.pending == nil {
				s.pending = sig
			}
			s.cancel(signalError{sig})
		case clean:
			s.cancel(signalError{sig}) // a second one changes nothing: the stop runs
		case dflt:
			raise(sig) // one that Notify passed on before decide's Reset took effect
		}
		s.mu.Unlock()
	}
}

// decide is the root command's PersistentPreRunE: cmd stops cleanly on
// its context (run; demo with --workers), or the signals get their
// default effect from here on.
func (s *stopSignals) decide(cmd *cobra.Command, _ []string) error {
	if stopsOnContext(cmd) {
		s.mu.Lock()
		s.mode, s.pending = clean, nil // one that came already ended ctx
		s.mu.Unlock()
		return nil
	}
	s.giveBack()
	return nil
}

// giveBack, while undecided, restores the signals' default effect (SIGINT
// ignored again if it was at the start) and raises one that came. main
// calls it too once the command has returned: for --help, a flag's error
// and the like, which choose no command.
func (s *stopSignals) giveBack() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mode != undecided {
		return
	}
	s.mode = dflt
	signal.Reset(syscall.SIGINT, syscall.SIGTERM)
	if s.pending != nil {
		raise(s.pending)
	}
}

// stopsOnContext says whether cmd stops cleanly when its context ends.
func stopsOnContext(cmd *cobra.Command) bool {
	switch cmd.Name() {
	case "run":
		return true
	case "demo":
		w, _ := cmd.Flags().GetString("workers")
		return w != ""
	}
	return false
}

// raise sends sig to this process again, with the signals reset: its
// default effect (the end of the process, or nothing for a SIGINT that
// was ignored at the start).
func raise(sig os.Signal) {
	if n, ok := sig.(syscall.Signal); ok {
		syscall.Kill(os.Getpid(), n)
	}
}

// signalError is the cause of a context that a signal ended.
type signalError struct{ sig os.Signal }

func (e signalError) Error() string { return "signal " + e.sig.String() }

// signalOf names the signal that ended ctx ("terminated"), or its cause.
func signalOf(ctx context.Context) string {
	var se signalError
	if errors.As(context.Cause(ctx), &se) {
		return se.sig.String()
	}
	return context.Cause(ctx).Error()
}
