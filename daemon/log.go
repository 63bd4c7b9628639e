package daemon

import (
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// NewLogger is the program's logger on f at level (debug, info, warn,
// error; info when empty or unknown): format "json" writes one JSON
// object per line; any other writes a line per event for people, with
// colours only when f is a terminal (a file or a pipe gets plain text).
func NewLogger(f *os.File, format, level string) zerolog.Logger {
	lv, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		lv = zerolog.InfoLevel
	}
	var w io.Writer = f
	if format != "json" {
		w = zerolog.ConsoleWriter{Out: f, TimeFormat: time.TimeOnly, NoColor: !IsTerminal(f)}
	}
	return zerolog.New(w).Level(lv).With().Timestamp().Logger()
}

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
