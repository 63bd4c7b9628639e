package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/homa-dpdk/homa-dpdk/dpdk/dpdktest"
)

// The pages' shell blocks are run, not only read: every ```sh, ```bash,
// ```shell or ```console block of README.md and docs/*.md without a
// <!-- not run: WHY --> before it runs as written, and must exit 0 within
// blockTimeout. Each runs
//
//   - with bash -euo pipefail, in a scratch directory that holds the
//     repository's top-level entries and .git (as links) and ./homa-dpdk
//     built from this tree, which is on PATH too, before Go's directory
//     and Debian's default PATH (so python3 is Debian's, as on the bare
//     machine the README starts from);
//   - in namespaces of its own (mount, network, PID): /run a fresh tmpfs
//     (so /run/homa-dpdk, /run/netns and DPDK's runtime directory start
//     empty, as on a fresh machine), hugetlbfs mounted afresh, only lo up.
//     What a block starts in the background (cmd &) lives until its last
//     command ends: the block's shell is the namespace's first process,
//     and the kernel kills the rest with it. The names a block makes (a
//     netns, a veth, a socket, a port) meet nothing of the machine's or of
//     another run's, and vanish with it.
//
// A console block runs its "$ " lines (the prompt dropped). A block that
// cannot run here (a PCI NIC, a container, a cluster, a package install,
// systemd, a GPU, more than blockTimeout) says why on the line before it:
// <!-- not run: WHY -->.

// blockTimeout bounds each block.
const blockTimeout = 60 * time.Second

// inBlockEnv is set in each block's environment: a block that runs this
// test again (go test ./cmd/homa-dpdk) finds it and skips.
const inBlockEnv = "HOMA_DOCS_IN_BLOCK"

func TestDocs_shellBlocksRun(t *testing.T) {
	if os.Getenv(inBlockEnv) != "" {
		t.Skip("inside a docs block already")
	}
	if os.Geteuid() != 0 {
		if dpdktest.Required() {
			t.Fatal("HOMA_REQUIRE_DPDK=1 but running the docs' blocks needs root (namespaces, DPDK)")
		}
		t.Skip("skipping: running the docs' blocks needs root (namespaces, DPDK), as CI has")
	}
	needNamespaces(t)
	env := newDocEnv(t)
	bin := t.TempDir()
	build := exec.Command(goTool(), "build", "-o", filepath.Join(bin, "homa-dpdk"), "./cmd/homa-dpdk")
	build.Dir = docsRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/homa-dpdk: %v\n%s", err, out)
	}
	ran := 0
	for _, rel := range docPages(t) {
		p := readPage(t, rel)
		for _, b := range p.blocks {
			if !isShell(b.lang) || strings.HasPrefix(b.directive, "not run:") {
				continue
			}
			if w := runsTheSuite(b); w != "" {
				t.Errorf("%s:%d: runs %s, the whole suite and this test in it: it needs <!-- not run: WHY -->", rel, b.line, w)
				continue
			}
			ran++
			t.Run(fmt.Sprintf("%s:%d", rel, b.line), func(t *testing.T) {
				if msg := runBlock(t, env, bin, rel, b, blockTimeout); msg != "" {
					t.Error(msg)
				}
			})
		}
	}
	t.Logf("%d blocks run", ran)
}

// runBlock runs b of page rel, with bin/homa-dpdk as ./homa-dpdk, for at
// most timeout, and returns "" or why it failed: the page and line, the
// block, the exit status and the tail of its output.
func runBlock(t *testing.T, e *docEnv, bin, rel string, b block, timeout time.Duration) string {
	t.Helper()
	repo, err := filepath.Abs(docsRoot)
	if err != nil {
		t.Fatal(err)
	}
	scratch, aside := t.TempDir(), t.TempDir()
	links := []string{".git"} // for a block's git log or git archive
	for name := range e.topLevel {
		if name != "homa-dpdk" {
			links = append(links, name)
		}
	}
	for _, name := range links {
		if err := os.Symlink(filepath.Join(repo, name), filepath.Join(scratch, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := copyFile(filepath.Join(bin, "homa-dpdk"), filepath.Join(scratch, "homa-dpdk")); err != nil {
		t.Fatal(err)
	}
	// The script: an ERR trap that names the page's line of the command
	// that failed (the body starts on the script's second line, the page's
	// b.line+1), then the body.
	body := blockScript(b)
	script := fmt.Sprintf("trap 'echo \"== %s:$((LINENO + %d)): exit status $?\" >&2' ERR\n%s", rel, b.line-1, body)
	scriptPath := filepath.Join(aside, "block.sh")
	if err := os.WriteFile(scriptPath, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	prelude := strings.Join([]string{
		"set -e",
		"mount --make-rprivate /",
		"mount -t proc proc /proc",
		"mount -t tmpfs tmpfs /run",
		"if mountpoint -q /dev/hugepages; then mount -t hugetlbfs nodev /dev/hugepages; fi",
		"ip link set lo up",
		`exec bash -euo pipefail "$0"`,
	}, "\n")
	outPath := filepath.Join(aside, "output")
	out, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command("bash", "-c", prelude, scriptPath)
	cmd.Dir = scratch
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(),
		"PATH="+bin+":"+filepath.Dir(goTool())+":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		inBlockEnv+"=1")
	cmd.SysProcAttr = blockNamespaces()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Sprintf("%s:%d: starting the block's shell in namespaces of its own: %v", rel, b.line, err)
	}
	var timedOut atomic.Bool
	timer := time.AfterFunc(timeout, func() {
		timedOut.Store(true)
		cmd.Process.Kill() // the namespace's first process: the kernel kills the rest
	})
	err = cmd.Wait()
	timer.Stop()
	took := time.Since(start).Round(100 * time.Millisecond)
	t.Logf("%s:%d: %v", rel, b.line, took)
	if err == nil {
		return ""
	}
	status := err.Error()
	if timedOut.Load() {
		status = fmt.Sprintf("killed after %v, its time limit (a longer block says <!-- not run: WHY -->)", timeout)
	}
	return fmt.Sprintf("%s:%d: the block failed: %s after %v\n--- block\n%s--- output (last 40 lines)\n%s",
		rel, b.line, status, took, b.body, tail(outPath, 40))
}

// blockNamespaces starts a block's shell in namespaces of its own.
func blockNamespaces() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWNET | syscall.CLONE_NEWPID,
		Pdeathsig:  syscall.SIGKILL, // the test gone, the namespace goes
	}
}

// needNamespaces skips the test where root cannot make namespaces (a
// container without CAP_SYS_ADMIN), or fails it with HOMA_REQUIRE_DPDK=1.
func needNamespaces(t *testing.T) {
	t.Helper()
	c := exec.Command("true")
	c.SysProcAttr = blockNamespaces()
	if err := c.Run(); err != nil {
		if dpdktest.Required() {
			t.Fatalf("HOMA_REQUIRE_DPDK=1 but no mount, network and PID namespaces here: %v", err)
		}
		t.Skipf("skipping: no mount, network and PID namespaces here (%v), which the docs' blocks run in", err)
	}
}

// runsTheSuite returns the script of b that runs every test (this one
// among them), or "".
func runsTheSuite(b block) string {
	for _, cmd := range shellCommands(b.body) {
		for _, w := range cmd {
			if w = strings.TrimPrefix(w, "./"); w == "scripts/test.sh" || w == ".ci/run" {
				return w
			}
		}
	}
	return ""
}

// blockScript is what runs of b: its body, or a console block's "$ "
// lines (and their continuations) without the prompt.
func blockScript(b block) string {
	if b.lang != "console" {
		return b.body
	}
	var s strings.Builder
	cont := false
	for _, l := range strings.SplitAfter(b.body, "\n") {
		switch {
		case strings.HasPrefix(l, "$ "):
			s.WriteString(strings.TrimPrefix(l, "$ "))
		case cont:
			s.WriteString(l)
		default:
			s.WriteString("\n") // output: keeps the lines in step
			continue
		}
		cont = strings.HasSuffix(strings.TrimRight(l, "\n"), "\\")
	}
	return s.String()
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.SplitAfter(string(b), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// TestDocs_runBlockCatchesMistakes runs blocks made wrong on purpose: one
// whose second command fails (named by its page line, with its status
// and output), one that outlives its time limit; and one that leaves a
// process in the background, which ends with the block.
func TestDocs_runBlockCatchesMistakes(t *testing.T) {
	if os.Getenv(inBlockEnv) != "" {
		t.Skip("inside a docs block already")
	}
	if os.Geteuid() != 0 {
		if dpdktest.Required() {
			t.Fatal("HOMA_REQUIRE_DPDK=1 but running the docs' blocks needs root (namespaces)")
		}
		t.Skip("skipping: running the docs' blocks needs root (namespaces), as CI has")
	}
	needNamespaces(t)
	env := newDocEnv(t)
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "homa-dpdk"), []byte("#!/bin/sh\necho stand-in\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := parsePage("docs/bad.md", strings.Join([]string{
		"# Bad",
		"```sh",
		"echo first; ./homa-dpdk",
		"test -d /run/netns || echo fresh /run",
		"ls no-such-file",
		"echo never",
		"```",
		"```sh",
		"sleep 30",
		"```",
		"```console",
		"$ sleep 300 &",
		"output, not run",
		"$ echo done",
		"```",
	}, "\n"))
	msg := runBlock(t, env, bin, p.rel, p.blocks[0], 30*time.Second)
	for _, want := range []string{"docs/bad.md:2: the block failed: exit status 2", "== docs/bad.md:5: exit status 2",
		"first\nstand-in\nfresh /run\n", "ls no-such-file\n"} {
		if !strings.Contains(msg, want) {
			t.Errorf("a failing block: no %q in:\n%s", want, msg)
		}
	}
	if _, out, _ := strings.Cut(msg, "--- output"); strings.Contains(out, "never") {
		t.Errorf("the block went on past its failure:\n%s", msg)
	}
	start := time.Now()
	msg = runBlock(t, env, bin, p.rel, p.blocks[1], time.Second)
	if !strings.Contains(msg, "docs/bad.md:8: the block failed: killed after 1s") || time.Since(start) > 10*time.Second {
		t.Errorf("a block past its limit, after %v: %s", time.Since(start), msg)
	}
	start = time.Now()
	if msg = runBlock(t, env, bin, p.rel, p.blocks[2], 30*time.Second); msg != "" || time.Since(start) > 10*time.Second {
		t.Errorf("a console block with a process in the background: %q after %v, want success at once", msg, time.Since(start))
	}
}
