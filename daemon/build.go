package daemon

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/homa-dpdk/homa-dpdk/dpdk"
)

// Stamped at build time, since Go's own VCS stamping (-buildvcs) may be
// off (GOFLAGS) and the container image builds without .git:
//
//	go build -ldflags "-X github.com/homa-dpdk/homa-dpdk/daemon.stampCommit=$(git rev-parse HEAD) ..."
//
// scripts/lib/build.sh's homa_ldflags makes them for the scripts, the
// Dockerfile's build arguments for the image; a value stamped wins over
// Go's own.
var stampVersion, stampCommit, stampDate, stampModified string

// Build says which build of homa-dpdk this is: `homa-dpdk version`, and
// the homa_build_info metric.
type Build struct {
	Version  string // the module version, "(devel)" for a build from a checkout
	Commit   string // VCS revision, "" when unknown
	Date     string // the commit's time, RFC 3339, "" when unknown
	Modified bool   // the working tree had changes not committed
	Go       string // the Go toolchain that built it
	DPDK     string // the DPDK library it runs with (rte_version)
}

// BuildInfo is the program's build: Go's build information, overridden
// by what the build stamped (read once).
var BuildInfo = sync.OnceValue(readBuild)

func readBuild() Build {
	b := Build{Version: "(devel)", Go: runtime.Version(), DPDK: dpdk.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			b.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.time":
				b.Date = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if stampVersion != "" {
		b.Version = stampVersion
	}
	if stampCommit != "" {
		b.Commit = stampCommit
		b.Modified = stampModified == "true"
	}
	if stampDate != "" {
		b.Date = stampDate
	}
	return b
}

// String is the build on one line: "homa-dpdk VERSION (commit C[, modified], DATE; go; DPDK)".
func (b Build) String() string {
	var parts []string
	switch {
	case b.Commit == "":
		parts = append(parts, "commit unknown")
	case b.Modified:
		parts = append(parts, "commit "+short(b.Commit)+", modified")
	default:
		parts = append(parts, "commit "+short(b.Commit))
	}
	if b.Date != "" {
		parts = append(parts, b.Date)
	}
	return fmt.Sprintf("homa-dpdk %s (%s; %s; %s)", b.Version, strings.Join(parts, ", "), b.Go, b.DPDK)
}

// short is a commit's first 12 hex digits.
func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
