package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/host"
)

// memifDevice is what the daemon needs to know of a net_memif port's
// arguments.
type memifDevice struct {
	role     string // "server" (memif's default) or "client"
	socket   string // the control socket ("/run/memif.sock" by default)
	abstract bool   // in the abstract namespace (memif's default): no file
	bsize    int    // bytes of each descriptor's buffer (memif's default 2048)
}

// memifOf returns the net_memif arguments of port i — those given with
// ports[i].device, or else with EAL's --vdev of that name — and false for
// other devices.
func memifOf(spec *config.Spec, i int) (memifDevice, bool) {
	name, args := vdevOf(spec, i)
	if !strings.HasPrefix(name, "net_memif") {
		return memifDevice{}, false
	}
	return parseMemif(args), true
}

// vdevOf returns port i's device name and its arguments: those given with
// ports[i].device, or else with EAL's --vdev of that name ("" for none).
func vdevOf(spec *config.Spec, i int) (name, args string) {
	name, args, hasArgs := strings.Cut(spec.Ports[i].Device, ",")
	if !hasArgs {
		for _, v := range ealVdevs(spec.EAL) {
			if n, a, _ := strings.Cut(v, ","); n == name {
				args = a
			}
		}
	}
	return name, args
}

// ealVdevs lists the arguments of EAL's --vdev options.
func ealVdevs(eal []string) []string {
	var vdevs []string
	for i, a := range eal {
		switch {
		case a == "--vdev" && i+1 < len(eal):
			vdevs = append(vdevs, eal[i+1])
		case strings.HasPrefix(a, "--vdev="):
			vdevs = append(vdevs, strings.TrimPrefix(a, "--vdev="))
		}
	}
	return vdevs
}

// parseMemif reads net_memif's devargs (key=value, comma-separated).
func parseMemif(args string) memifDevice {
	m := memifDevice{role: "server", socket: "/run/memif.sock", abstract: true, bsize: 2048}
	for _, kv := range strings.Split(args, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "role":
			m.role = v
		case "socket":
			m.socket = v
		case "socket-abstract":
			m.abstract = v != "no"
		case "bsize":
			if n, err := strconv.Atoi(v); err == nil {
				m.bsize = n // memif itself refuses what is not 1..65535
			}
		}
	}
	return m
}

// memifServerSockets lists the sockets of the memif servers that EAL or
// the ports make, where they are files (not abstract).
func memifServerSockets(spec *config.Spec) []string { return memifSockets(spec, true) }

// memifSockets lists the sockets of the memif devices that EAL or the
// ports make, where they are files (not abstract): the servers' alone
// where servers.
func memifSockets(spec *config.Spec, servers bool) []string {
	var socks []string
	add := func(name, args string) {
		if m := parseMemif(args); strings.HasPrefix(name, "net_memif") && (m.role == "server" || !servers) && !m.abstract {
			socks = append(socks, m.socket)
		}
	}
	for _, v := range ealVdevs(spec.EAL) {
		name, args, _ := strings.Cut(v, ",")
		add(name, args)
	}
	for _, ps := range spec.Ports {
		if name, args, ok := strings.Cut(ps.Device, ","); ok {
			add(name, args)
		}
	}
	return socks
}

// makeMemifSocketDirs makes the directories of spec's memif sockets that
// are files, as the workers' socket's is made (hub.Set): EAL's memif
// refuses a socket whose directory is missing ("Invalid socket
// directory"), and /run starts empty after a boot.
func makeMemifSocketDirs(spec *config.Spec) error {
	for _, sock := range memifSockets(spec, false) {
		if err := os.MkdirAll(filepath.Dir(sock), 0o755); err != nil {
			return fmt.Errorf("memif socket %s: making its directory: %w", sock, err)
		}
	}
	return nil
}

// removeStaleSocket removes the socket file at path when nothing listens
// on it: left by a memif server that was killed (memif removes its file
// only when it closes the port), it would make the next one fail to bind.
// It reports whether it removed one.
func removeStaleSocket(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSocket == 0 {
		return false
	}
	c, err := net.Dial("unixpacket", path)
	if err == nil {
		c.Close()
		return false // a server listens: its port's start will say so
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return false
	}
	return os.Remove(path) == nil
}

// memifSocketInUse returns an error that names the first memif server
// socket of spec on which a server listens already (another homa-dpdk run
// of the same config): EAL's memif would fail to bind it ("Address already
// in use") and the port would be missing.
func memifSocketInUse(spec *config.Spec) error {
	for _, sock := range memifServerSockets(spec) {
		if fi, err := os.Lstat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
			continue
		}
		c, err := net.Dial("unixpacket", sock)
		if err != nil {
			continue // nobody listens: a stale file, removed at start-up
		}
		c.Close()
		return fmt.Errorf("memif server socket %s: a memif server listens on it already (another homa-dpdk run of this config?): stop that one, or give this port another socket=", sock)
	}
	return nil
}

// memifLinkHint says, for the memif ports among spec's whose links are
// not up (up(i) false), what their links wait for; "" when none is.
func memifLinkHint(spec *config.Spec, up func(i int) bool) string {
	var hints []string
	for _, w := range memifWaits(spec, up) {
		hints = append(hints, w.name+" is a memif "+w.role+" on "+w.where+": its link comes up when a memif "+w.peer+
			" opens the same socket ("+w.who()+"); homa-dpdk demo runs a pair of hosts without one")
	}
	return strings.Join(hints, "; ")
}

// memifWait is what a memif port whose link is down waits for.
type memifWait struct {
	name, role string
	where      string // its socket, "(abstract)" after it in the abstract namespace
	peer       string // the role that must open it
}

// who says who may open w's socket.
func (w memifWait) who() string {
	return "another homa-dpdk run whose port is net_memif with role=" + w.peer + " there, or any memif application"
}

// memifWaits lists the memif ports among spec's whose links are not up
// (up(i) false).
func memifWaits(spec *config.Spec, up func(i int) bool) []memifWait {
	var ws []memifWait
	for i := range spec.Ports {
		m, ok := memifOf(spec, i)
		if !ok || up(i) {
			continue
		}
		name, _ := vdevOf(spec, i)
		w := memifWait{name: name, role: m.role, where: m.socket, peer: "client"}
		if m.abstract {
			w.where += " (abstract)"
		}
		if m.role == "client" {
			w.peer = "server"
		}
		ws = append(ws, w)
	}
	return ws
}

// logMemifWaits logs, as the link phase begins, what each memif port
// whose link is not up yet waits for, and how long it may.
func (d *Daemon) logMemifWaits() {
	up := func(i int) bool { l, err := d.ports[i].Link(); return err == nil && l.Up }
	for _, w := range memifWaits(d.spec, up) {
		d.Log.Info().Str("port", w.name).Str("role", w.role).Str("socket", w.where).Str("wait", linkWait.String()).
			Msg("link phase: waiting for a memif " + w.peer + " to open the same socket (" + w.who() + ")")
	}
}

// clientWithoutServer reports whether err, from SetupPort of port i, is a
// net_memif client's start that failed for want of its server: memif
// dials only when the port starts, and fails it while nothing listens on
// the socket (the peer not up yet). st is what SetupPort did before.
func clientWithoutServer(spec *config.Spec, i int, st host.StartedPort, err error) bool {
	var pe *host.PortError
	m, ok := memifOf(spec, i)
	return ok && m.role == "client" && st.Driver == "net_memif" && errors.As(err, &pe) && pe.Setting == ""
}

// dialClients dials again, until deadline, the memif clients whose links
// are down: one whose server was not up when it started (setupPort left
// it stopped: clientWithoutServer), and one whose server took its
// connection before its own port was ready, so that the handshake ended
// without a link (two daemons started at once). Each is restarted on
// EAL's interrupt thread (dpdk.Port.Redial) after a wait that doubles
// from 100 ms to 1 s; each failed dial logs a line of memif's. It returns
// nil once every memif client's link is up (other ports are left to the
// link wait), ctx's cause when ctx ends first, and at the deadline an
// error that names the port and its socket.
func (d *Daemon) dialClients(ctx context.Context, deadline time.Time) error {
	type client struct {
		i       int
		wait    time.Duration // before the next dial
		next    time.Time     // of the next dial
		dials   int           // redials since its link was last seen up
		errLast error         // the last redial's start, if it failed
	}
	start := time.Now()
	var clients []*client
	for i := range d.ports {
		if m, ok := memifOf(d.spec, i); ok && m.role == "client" {
			clients = append(clients, &client{i: i, wait: 100 * time.Millisecond, next: start.Add(100 * time.Millisecond)})
		}
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		var down *client
		for _, c := range clients {
			p := d.ports[c.i]
			pending, err := p.RedialResult()
			if !pending && err != nil {
				c.errLast = err
			}
			if !pending && p.Started() && p.LinkUp() {
				if c.dials > 0 {
					d.Log.Info().Str("port", p.Name).Int("redials", c.dials).Str("after", took(time.Since(start))).Msg("memif client: connected to its server")
					c.dials = 0
				}
				continue
			}
			down = c
			if now := time.Now(); !pending && !now.Before(c.next) && p.Redial(0) == nil {
				c.dials++
				c.wait = min(2*c.wait, time.Second)
				c.next = now.Add(c.wait)
			}
		}
		if down == nil {
			return nil
		}
		if time.Now().After(deadline) {
			p := d.ports[down.i]
			m, _ := memifOf(d.spec, down.i)
			if !p.Started() {
				err := fmt.Errorf("%s: no memif server accepted its dial on %s within %v", p.Name, m.socket, linkWait)
				if down.errLast != nil {
					err = fmt.Errorf("%w (its last start: %w)", err, down.errLast)
				}
				return err
			}
			return fmt.Errorf("link of %s still down after %v (is the peer up?)", p.Name, linkWait)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-tick.C:
		}
	}
}
