package daemon

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/config"
	"github.com/homa-dpdk/homa-dpdk/dpdk"
	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
	"github.com/homa-dpdk/homa-dpdk/host"
	"github.com/rs/zerolog"
)

// Two daemons in two processes — each `homa-dpdk run`'s own start-up
// (config, EAL, ports, link, one polling loop on a worker lcore) on a
// net_memif port — exchange RPCs. The processes are this test binary,
// re-executed with memifRoleEnv set; their in-loop applications (an echo
// server, a client) stand in for the workers of the shared-memory
// interface.
const memifRoleEnv = "HOMA_TEST_MEMIF_HOST"

// memifChild runs one daemon; it returns the exit code.
func memifChild(role string) int {
	vdev := os.Getenv("HOMA_TEST_VDEV")
	if vdev == "" {
		vdev = "net_memif_h,role=%s,id=0,socket=" + os.Getenv("HOMA_TEST_SOCK") + ",socket-abstract=no"
	}
	err := runMemifDaemon(role, vdev, os.Getenv("HOMA_TEST_RPCS"), os.Getenv("HOMA_TEST_LOSS"))
	if err != nil {
		fmt.Fprintln(os.Stderr, role+":", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "child: exit at %s\n", time.Now().Format("15:04:05.000000"))
	return 0
}

// runMemifDaemon runs one daemon on the vdev (a %s in it takes the memif
// role): the echo server (10.0.0.2) or the client (10.0.0.1). Commands on
// its standard input: "stop" (quiet the loops), "count" (the client's
// RPCs so far); it stops the ports when the input closes, and the whole
// daemon on SIGTERM.
func runMemifDaemon(role, vdev, rpcsArg, lossArg string) error {
	// The echo server is the memif server (unless HOMA_TEST_MEMIF_ROLE
	// says), polled on lcore 1 (CPU 1); the client polls on lcore 0
	// (CPU 0), its main lcore being 1.
	memRole, last, mainLcore, loopLcore := "server", 2, 0, 1
	if role == "client" {
		memRole, last, mainLcore, loopLcore = "client", 1, 1, 0
	}
	if r := os.Getenv("HOMA_TEST_MEMIF_ROLE"); r != "" {
		memRole = r
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	mem := dpdk.ProbeMemory()
	if strings.Contains(vdev, "%s") {
		vdev = fmt.Sprintf(vdev, memRole)
	}
	device, _, _ := strings.Cut(vdev, ",")
	eal := append(dpdk.VirtualDeviceArgs("0,1", mem, 512, fmt.Sprintf("homamemif%d", os.Getpid())),
		"--main-lcore", strconv.Itoa(mainLcore), "--vdev", vdev)
	addr, addr6 := fmt.Sprintf("10.0.0.%d/24", last), ""
	switch os.Getenv("HOMA_TEST_V6") {
	case "": // IPv4 only
	case "only": // an IPv6-only port
		addr = fmt.Sprintf("2001:db8::%d/64", last)
	default: // IPv6 too: the client's RPCs go over it
		addr6 = fmt.Sprintf("    address6: 2001:db8::%d/64\n", last)
	}
	shards := 1
	if os.Getenv("HOMA_TEST_SHARDS") == "2" { // the port as two shards on the loop's lcore
		addr6 += fmt.Sprintf("    lcores: [%d, %d]\n", loopLcore, loopLcore)
		shards = 2
	}
	if cpu := os.Getenv("HOMA_TEST_COPIER"); cpu != "" { // receive copies on a copier thread, one CPU a shard
		addr6 += fmt.Sprintf("    copier_cpus: [%s]\n", strings.Repeat(cpu+", ", shards-1)+cpu)
	}
	yaml := fmt.Sprintf(`lcores: [%d]
ports:
  - device: %s
    address: %s
%smetrics:
  address: ""
faults:
  drop: %s
  seed: %d
arp:
  timeout: 20ms
  retries: 50
log:
  level: warn
protocol:
  timeout_ticks: 2000 # 2 s: a machine loaded by other work can starve a daemon for 100 ms
%s
workers:
  enabled: %t
  socket: %q
  zero_copy_min: %s
%s
`, loopLcore, device, addr, addr6, lossArg, last, os.Getenv("HOMA_TEST_PROTOCOL"), os.Getenv("HOMA_TEST_WORKERS") != "", os.Getenv("HOMA_TEST_WORKERS"),
		cmp.Or(os.Getenv("HOMA_TEST_ZERO_COPY_MIN"), "4096"), os.Getenv("HOMA_TEST_YAML"))
	path := filepath.Join(os.TempDir(), fmt.Sprintf("homa-memif-%d.yaml", os.Getpid()))
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		return err
	}
	defer os.Remove(path)
	spec, err := config.Load(config.Source{File: path})
	if err != nil {
		return err
	}
	spec.EAL = eal
	var mc *memifClient
	var finished func() (bool, error)
	count, summary := func() string { return "" }, func() string { return "" }
	prepare := func(hosts []*host.Host) error {
		h := hosts[0]
		if role == "server" {
			srv, err := h.Endpoint().Bind(99)
			if err != nil {
				panic(err)
			}
			h.AddApp(host.AppFunc(func(int64) {
				for m, ok := srv.Receive(); ok; m, ok = srv.Receive() {
					srv.Reply(m, m.Data)
				}
			}))
			finished = func() (bool, error) { return false, nil }
			return nil
		}
		n, _ := strconv.Atoi(rpcsArg)
		c, err := newMemifClient(h, n, os.Getenv("HOMA_TEST_TOLERANT") != "")
		if err != nil {
			return err
		}
		mc, finished, count, summary = c, c.finished, c.count, c.summary
		if p := os.Getenv("HOMA_TEST_STRANGER"); p != "" {
			port, _ := strconv.Atoi(p)
			h.AddApp(newStrangerApp(h, [4]byte{10, 0, 0, 2}, uint16(port)))
		}
		return nil
	}
	log := zerolog.New(os.Stderr).Level(zerolog.WarnLevel).With().Timestamp().Logger()
	prepareShards := func(ports [][]*host.Host) error {
		if mc != nil {
			mc.shards = ports[0]
		}
		return nil
	}
	d, err := Start(spec, log, Options{Prepare: prepare, PrepareShards: prepareShards})
	if err != nil {
		return err
	}
	fmt.Println("up") // links up, loop running
	cmds := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			cmds <- sc.Text()
		}
		close(cmds)
	}()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	reported := false
	for {
		select {
		case c, ok := <-cmds:
			if !ok { // leave: the loop is already quiet
				return d.StopPorts()
			}
			switch c {
			case "stop":
				if err := d.StopLoops(); err != nil {
					return err
				}
				fmt.Println("quiet", strings.TrimSpace(d.Hosts()[0].Summary()))
			case "count":
				fmt.Println("count", count())
			}
		case <-sigs:
			// When the stop was slow the parent prints these: how long the
			// signal took to arrive here, and the stop itself.
			start := time.Now()
			slow := time.AfterFunc(time.Second, func() { // what every goroutine does, for the parent's report
				fmt.Fprintf(os.Stderr, "child: the stop still runs 1 s after SIGTERM; its goroutines:\n")
				pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
			})
			err := d.Stop()
			slow.Stop()
			fmt.Fprintf(os.Stderr, "child: SIGTERM seen at %s, stop took %v\n", start.Format("15:04:05.000000"), time.Since(start))
			return err
		case <-tick.C:
			if done, err := finished(); err != nil {
				return err
			} else if done && !reported {
				fmt.Printf("done %s\n", summary())
				reported = true
			}
		}
	}
}

// memifProc is the parent's handle on a child host.
type memifProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr tailBuffer // the child's last stderr output, for failure messages
	// stderrDone is closed at the end of the child's stderr, the pipe
	// stderrPipe.
	stderrDone chan struct{}
	stderrPipe string
	memifSock  string // HOMA_TEST_SOCK: the memif socket it serves or dials
}

// tailBuffer keeps the last 4 KB written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > 4096 {
		b.buf = b.buf[len(b.buf)-4096:]
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

func startMemifProc(t *testing.T, role, sock string, rpcs int, loss float64) *memifProc {
	t.Helper()
	return startDaemonChild(t, "", role, "HOMA_TEST_SOCK="+sock, rpcs, loss)
}

// startDaemonChild runs this test binary as one daemon (see memifChild),
// inside network namespace ns when ns is not "", with env set.
func startDaemonChild(t *testing.T, ns, role, env string, rpcs int, loss float64, more ...string) *memifProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if ns != "" {
		cmd = exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^$")
	}
	cmd.Env = append(os.Environ(), memifRoleEnv+"="+role, env,
		"HOMA_TEST_RPCS="+strconv.Itoa(rpcs), "HOMA_TEST_LOSS="+strconv.FormatFloat(loss, 'f', -1, 64))
	cmd.Env = append(cmd.Env, more...)
	p := &memifProc{cmd: cmd, lines: make(chan string, 16), stderrDone: make(chan struct{})}
	if sock, ok := strings.CutPrefix(env, "HOMA_TEST_SOCK="); ok {
		p.memifSock = sock
	}
	// The child's stderr is a pipe of our own, not exec's, so that the
	// child's exit (cmd.Wait: wait4 alone) and the end of its stderr are
	// timed apart (terminate).
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = w
	p.stdin, _ = cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	p.stderrPipe = pipeName(r)
	go func() {
		io.Copy(io.MultiWriter(os.Stderr, &p.stderr), r)
		r.Close()
		close(p.stderrDone)
	}()
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() { cmd.Process.Kill(); p.waitAll() })
	return p
}

// waitAll reaps the child and waits (at most 5 s) for the end of its
// stderr, so that p.stderr holds all of it.
func (p *memifProc) waitAll() error {
	err := p.cmd.Wait()
	select {
	case <-p.stderrDone:
	case <-time.After(5 * time.Second):
	}
	return err
}

// pipeName is the pipe f is an end of, as /proc/PID/fd links name it
// ("pipe:[inode]").
func pipeName(f *os.File) string {
	var st syscall.Stat_t
	if syscall.Fstat(int(f.Fd()), &st) != nil {
		return ""
	}
	return fmt.Sprintf("pipe:[%d]", st.Ino)
}

// pipeHolders lists the processes other than this one that hold an end
// of the pipe named name: "PID (comm) fd N" each.
func pipeHolders(name string) []string {
	var out []string
	procs, _ := os.ReadDir("/proc")
	for _, pr := range procs {
		pid, err := strconv.Atoi(pr.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			if l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); l == name {
				comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
				out = append(out, fmt.Sprintf("%d (%s) fd %s", pid, strings.TrimSpace(string(comm)), fd.Name()))
			}
		}
	}
	return out
}

func (p *memifProc) expect(t *testing.T, prefix string, timeout time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok || !strings.HasPrefix(l, prefix) {
			if !ok {
				p.waitAll() // stderr is complete once the child is reaped
			}
			t.Fatalf("child said %q (exited: %v), want %q; its stderr ends:\n%s", l, !ok, prefix, p.stderr.String())
		}
		return l
	case <-time.After(timeout):
		// Its goroutines' stacks go to stderr (the test's output) as it exits.
		p.cmd.Process.Signal(syscall.SIGQUIT)
		exited := make(chan struct{})
		go func() { p.waitAll(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			p.cmd.Process.Kill()
			<-exited
		}
		t.Fatalf("child did not say %q within %v; its stderr ends:\n%s", prefix, timeout, p.stderr.String())
	}
	return ""
}

// runMemifPair runs rpcs RPCs between the two daemons. Under
// HOMA_TEST_SHARDS=2 (scripts/test.sh runs the memif tests so too) their
// ports are two shards each, and the client must say that its shards
// handed frames over: the knob took.
func runMemifPair(t *testing.T, rpcs int, loss float64) {
	server, client := startMemifDaemons(t, rpcs, loss, "", "", nil, nil)
	done := client.expect(t, "done", 240*time.Second)
	t.Log(done)
	if os.Getenv("HOMA_TEST_SHARDS") == "2" && (!strings.Contains(done, " shards 2 handed ") || strings.Contains(done, " handed 0")) {
		t.Errorf("HOMA_TEST_SHARDS=2, but the client's port was not two shards handing frames over: %s", done)
	}
	if os.Getenv("HOMA_TEST_COPIER") != "" && !strings.Contains(done, " copies_handed_off=") {
		t.Errorf("HOMA_TEST_COPIER, but the client made no copy on its copier: %s", done)
	}
	stopMemifDaemons(t, server, client)
}

// startMemifDaemons starts the two daemons joined by memif (the server
// first) and waits until both are up; a worker socket path makes that
// daemon open one.
func startMemifDaemons(t *testing.T, rpcs int, loss float64, serverWorkers, clientWorkers string, serverEnv, clientEnv []string) (server, client *memifProc) {
	t.Helper()
	dpdktest.Need(t)
	if runtime.NumCPU() < 2 {
		t.Skip("two daemons need two CPUs")
	}
	sock := filepath.Join(t.TempDir(), "memif.sock")
	server = startDaemonChild(t, "", "server", "HOMA_TEST_SOCK="+sock, 0, loss, append([]string{"HOMA_TEST_WORKERS=" + serverWorkers}, serverEnv...)...)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break // the memif server listens: its client may connect
		}
		if time.Now().After(deadline) {
			t.Fatal("the memif server's socket did not appear within 20 s")
		}
	}
	client = startDaemonChild(t, "", "client", "HOMA_TEST_SOCK="+sock, rpcs, loss, append([]string{"HOMA_TEST_WORKERS=" + clientWorkers}, clientEnv...)...)
	server.expect(t, "up", 20*time.Second)
	client.expect(t, "up", 20*time.Second)
	return server, client
}

// stopMemifDaemons ends both daemons in order; it returns the server's
// summary once quiet.
func stopMemifDaemons(t *testing.T, server, client *memifProc) (serverSummary string) {
	t.Helper()
	// Quiet both, then the memif server leaves first and the client last
	// (either may leave while the other polls: the kill tests do that).
	client.stdin.Write([]byte("stop\n"))
	server.stdin.Write([]byte("stop\n"))
	serverSummary = server.expect(t, "quiet", 10*time.Second)
	server.stdin.Close()
	if err := server.waitAll(); err != nil {
		t.Errorf("server: %v", err)
	}
	client.stdin.Close()
	if err := client.waitAll(); err != nil {
		t.Errorf("client: %v", err)
	}
	return serverSummary
}

func TestMemifHosts_thousandRPCsByteExact(t *testing.T) { runMemifPair(t, 1000, 0) }

func TestMemifHosts_thousandRPCsWithLoss(t *testing.T) { runMemifPair(t, 1000, 0.02) }

// Both daemons' ports as two shards (ports[].lcores): memif pairs its
// queues, so half of what each sends reaches the other shard's RX
// queues and is handed over; with loss, every RPC still completes byte
// for byte.
func TestMemifHosts_thousandRPCsWithLossOnTwoShards(t *testing.T) {
	t.Setenv("HOMA_TEST_SHARDS", "2")
	runMemifPair(t, 1000, 0.02)
}

// Both daemons' receive copies on a copier thread (ports[].copier_cpus,
// HOMA_TEST_COPIER): with loss, every RPC byte for byte (the client checks
// each response), the copies made there.
func TestMemifHosts_thousandRPCsWithLossOnACopier(t *testing.T) {
	t.Setenv("HOMA_TEST_COPIER", "0")
	runMemifPair(t, 1000, 0.02)
}

// A memif port whose link never came up is explained: its role, its
// socket, and what must open it (the shipped example is a memif server
// that waits for a client); a port whose link is up, or not memif, is not.
func TestMemifLinkHint_namesThePeerItWaitsFor(t *testing.T) {
	spec := &config.Spec{
		EAL:   []string{"-l", "0-1", "--vdev", "net_memif0,role=server,socket=/run/homa-dpdk/memif.sock,socket-abstract=no"},
		Ports: []config.PortSpec{{Device: "net_memif0"}, {Device: "net_memif1,role=client,id=1"}, {Device: "net_null0"}},
	}
	down := func(int) bool { return false }
	h := memifLinkHint(spec, down)
	for _, want := range []string{
		"net_memif0 is a memif server on /run/homa-dpdk/memif.sock: its link comes up when a memif client opens the same socket",
		"net_memif1 is a memif client on /run/memif.sock (abstract): its link comes up when a memif server opens the same socket",
		"homa-dpdk demo",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("hint %q lacks %q", h, want)
		}
	}
	if strings.Contains(h, "net_null0") {
		t.Errorf("hint %q names a port that is not memif", h)
	}
	if h := memifLinkHint(spec, func(i int) bool { return i != 1 }); strings.Contains(h, "net_memif0") || !strings.Contains(h, "net_memif1") {
		t.Errorf("with net_memif0 up: %q", h)
	}
	if h := memifLinkHint(&config.Spec{Ports: []config.PortSpec{{Device: "net_null0"}}}, down); h != "" {
		t.Errorf("no memif port: %q", h)
	}
}
