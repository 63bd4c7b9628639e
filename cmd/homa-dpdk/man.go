package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// manCmd writes the manual page homa-dpdk(8), made from the commands'
// own help: deploy/man/homa-dpdk.8 is its output (a test keeps the two
// the same).
func manCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "man [FILE]",
		Short:  "Write the manual page homa-dpdk(8) (roff) to FILE, or to standard output",
		Hidden: true,
		Args:   cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return writeMan(cmd.OutOrStdout(), cmd.Root())
			}
			f, err := os.Create(args[0])
			if err != nil {
				return err
			}
			if err := writeMan(f, cmd.Root()); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		},
	}
}

// writeMan writes the page for root and every visible command under it.
func writeMan(w io.Writer, root *cobra.Command) error {
	var b strings.Builder
	b.WriteString(`.\" Made by "homa-dpdk man" from the program's own help; do not edit.
.TH HOMA-DPDK 8 "" "homa-dpdk" "System Administration"
.SH NAME
homa-dpdk \- the Homa transport in user space on DPDK
.SH SYNOPSIS
.B homa-dpdk
.I command
[\fIflags\fR] [\fB\-\-\fR \fIEAL arguments\fR]
.SH DESCRIPTION
`)
	b.WriteString(roff(root.Short) + ".\n")
	b.WriteString(`.PP
homa-dpdk runs the Homa transport (a receiver-driven datacenter RPC transport,
wire-compatible with the Linux kernel's Homa) on DPDK ports polled from pinned
cores, and serves collocated worker processes through shared-memory rings.
The arguments after
.B \-\-
go to DPDK's EAL verbatim (for example
.BR "\-l 0-1 \-\-vdev net_ring0" ).
.SH COMMANDS
`)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			if sub.Runnable() {
				manCommand(&b, sub)
			}
			walk(sub)
		}
	}
	walk(root)
	b.WriteString(`.SH ENVIRONMENT
.TP
.B HOMA_\fISECTION\fB_\fIKEY\fR
sets the config key
.IR section.key
(for example
.B HOMA_PROTOCOL_MAX_INCOMING
sets
.BR protocol.max_incoming );
flags win over the environment, the environment over the file. A HOMA_ variable
shaped like a key that names none is refused.
.SH FILES
.TP
.I /etc/homa-dpdk/homa.yaml
the daemon's config in the container image
.TP
.I /etc/homa-dpdk/example.yaml
every config key, documented (config/example.yaml in the source)
.TP
.I /run/homa-dpdk/
worker control sockets
.SH EXIT STATUS
0 on success and on a clean stop (SIGINT, SIGTERM); 1 on any error, with a
message that names the start-up phase and the config key at fault.
.SH SEE ALSO
.BR dpdk-testpmd (1),
.BR tshark (1)
with tools/wireshark/homa.lua,
.BR promtool (1)
`)
	_, err := io.WriteString(w, b.String())
	return err
}

// manCommand writes one command's entry: its use line, its description
// and its flags.
func manCommand(b *strings.Builder, c *cobra.Command) {
	fmt.Fprintf(b, ".SS %s\n", roff(c.CommandPath()))
	use := strings.TrimPrefix(c.UseLine(), "homa-dpdk ")
	fmt.Fprintf(b, ".B homa-dpdk %s\n.PP\n", roff(use))
	text := c.Long
	if text == "" {
		text = c.Short + "."
	}
	for i, para := range strings.Split(strings.TrimSpace(text), "\n\n") {
		if i > 0 {
			b.WriteString(".PP\n")
		}
		b.WriteString(roff(strings.Join(strings.Fields(para), " ")) + "\n")
	}
	c.NonInheritedFlags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		name := "\\-\\-" + roff(f.Name)
		if f.Shorthand != "" {
			name = "\\-" + f.Shorthand + ", " + name
		}
		if t := f.Value.Type(); t != "bool" {
			name += " \\fI" + t + "\\fR"
		}
		usage := f.Usage
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "[]" {
			usage += " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(b, ".TP\n.B %s\n%s\n", name, roff(usage))
	})
}

// roff escapes text for a roff line: backslashes, hyphens, a leading dot
// or quote that roff would take as a request, and characters outside
// ASCII.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	var b strings.Builder
	for _, r := range s {
		if r > 127 { // roff is ASCII: other characters by their code point
			fmt.Fprintf(&b, `\[u%04X]`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
