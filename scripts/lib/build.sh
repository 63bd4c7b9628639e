# shellcheck shell=bash
# Sourced by the scripts that build homa-dpdk: homa_ldflags prints the
# -ldflags that stamp the build with its commit, the commit's date and
# whether tracked files had changes (daemon/build.go: `homa-dpdk version`,
# homa_build_info). Go stamps VCS information itself only with
# -buildvcs, which GOFLAGS may turn off; this does not depend on it.
homa_ldflags() {
	local d=github.com/homa-dpdk/homa-dpdk/daemon c t m v
	c=$(git rev-parse HEAD 2>/dev/null) || return 0
	t=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ)
	m=false
	[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || m=true
	v=$(git describe --tags --exact-match 2>/dev/null || true)
	printf -- '-X %s.stampCommit=%s -X %s.stampDate=%s -X %s.stampModified=%s' "$d" "$c" "$d" "$t" "$d" "$m"
	[ -z "$v" ] || printf -- ' -X %s.stampVersion=%s' "$d" "$v"
}
