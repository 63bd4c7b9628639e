# shellcheck shell=bash
# Sourced by scripts/container-test.sh: steps 2 to 5, the images: the base
# image (BASE), the Go image (GO_IMAGE), the build of IMAGE and its size
# (size).

# ---------------------------------------------------------- 2. base image
base_image() {
	if podman image exists docker.io/library/debian:bookworm-slim; then
		BASE=docker.io/library/debian:bookworm-slim
		say "base image: $BASE (in local storage)"
	elif podman image exists localhost/debian:bookworm-slim; then
		BASE=localhost/debian:bookworm-slim
		say "base image: $BASE (made by an earlier run)"
	else
		BASE=localhost/debian:bookworm-slim
		t=$(date +%s)
		srcs=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
		uris=$(printf '%s\n' "$srcs" | grep -Eo 'https?://[^ ]+' | sed 's,/$,,' | sort -u)
		mirror=${HOMA_DEBIAN_MIRROR:-$(printf '%s\n' "$uris" | grep -E '/debian$' | head -1)}
		mirror=${mirror:-http://deb.debian.org/debian}
		security=$(printf '%s\n' "$uris" | grep -E '/debian-security$' | head -1)
		security=${security:-http://deb.debian.org/debian-security}
		say "making $BASE: debootstrap --variant=minbase bookworm from $mirror (about a minute) ..."
		rootfs=$(mktemp -d /var/tmp/homa-ct-rootfs.XXXXXX)
		debootstrap --variant=minbase --components=main bookworm "$rootfs" "$mirror" >"$WORK/debootstrap.log" 2>&1 ||
			{ tail -20 "$WORK/debootstrap.log"; rm -rf "$rootfs"; fail "debootstrap (log: $WORK/debootstrap.log)"; }
		# Slim it as debian:bookworm-slim is: no docs, man pages or translations
		# (now and for packages installed later), no apt caches or lists.
		cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker" <<-'EOF'
			path-exclude /usr/share/doc/*
			path-include /usr/share/doc/*/copyright
			path-exclude /usr/share/man/*
			path-exclude /usr/share/groff/*
			path-exclude /usr/share/info/*
			path-exclude /usr/share/lintian/*
			path-exclude /usr/share/linda/*
			path-exclude /usr/share/locale/*
		EOF
		cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<-'EOF'
			DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
			APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
			Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";
		EOF
		echo 'Acquire::Languages "none";' >"$rootfs/etc/apt/apt.conf.d/docker-no-languages"
		echo 'Apt::AutoRemove::SuggestsImportant "false";' >"$rootfs/etc/apt/apt.conf.d/docker-autoremove-suggests"
		rm -f "$rootfs/etc/apt/sources.list"
		cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<-EOF
			Types: deb
			URIs: $mirror
			Suites: bookworm bookworm-updates
			Components: main
			Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

			Types: deb
			URIs: $security
			Suites: bookworm-security
			Components: main
			Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
		EOF
		find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
		find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
		rm -rf "$rootfs"/usr/share/{man,groff,info,lintian,linda,locale}/* \
			"$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/lib/apt/lists/* \
			"$rootfs"/var/log/bootstrap.log "$rootfs"/var/log/apt/* "$rootfs"/var/log/dpkg.log
		: >"$rootfs/etc/machine-id"
		tar --numeric-owner -C "$rootfs" -c . | podman import --change 'CMD ["bash"]' - "$BASE" >"$WORK/import.log" 2>&1 ||
			{ rm -rf "$rootfs"; fail "podman import of the base image"; }
		rm -rf "$rootfs"
		say "made $BASE ($(podman image inspect --format '{{.Size}}' "$BASE" | awk '{printf "%.0f MB", $1/1e6}'), $(since "$t"))"
	fi
}

# ------------------------------------------------------------ 3. Go image
go_image() {
	gokey=$(cat go.mod go.sum | sha256sum | cut -c1-12)
	GO_IMAGE=localhost/homa-dpdk-go:${GOVERSION_HOST#go}-$gokey
	if podman image exists "$GO_IMAGE"; then
		say "Go image: $GO_IMAGE (made by an earlier run)"
	else
		t=$(date +%s)
		say "making $GO_IMAGE: $GOVERSION_HOST from $GOROOT_HOST and the modules of go.sum ..."
		stage=$(mktemp -d /var/tmp/homa-ct-go.XXXXXX)
		mkdir -p "$stage/usr/local" "$stage/go/bin" "$stage/go/src" "$stage/go/pkg/mod"
		cp -a "$GOROOT_HOST" "$stage/usr/local/go"
		# A fresh module cache filled from the host's (a file:// proxy), then
		# from the host's GOPROXY for anything the host has not downloaded.
		# go list loads every package both binaries import, so the cache holds
		# all the build needs; the build then runs with GOPROXY=off.
		hostproxy="file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)"
		if ! GOMODCACHE="$stage/go/pkg/mod" GOFLAGS="$(go env GOFLAGS) -modcacherw" GOPROXY="$hostproxy" CGO_ENABLED=1 \
			sh -c 'go mod download && go list -deps ./cmd/homa-dpdk ./examples/echo >/dev/null' >"$WORK/gomod.log" 2>&1; then
			tail -20 "$WORK/gomod.log"
			rm -rf "$stage"
			fail "downloading the Go modules (log: $WORK/gomod.log)"
		fi
		# Keep the downloads only: the build extracts what it uses.
		find "$stage/go/pkg/mod" -mindepth 1 -maxdepth 1 -not -name cache -exec rm -rf {} +
		rm -rf "$stage/go/pkg/mod/cache/download/sumdb" "$stage/go/pkg/mod/cache/vcs"
		tar --numeric-owner -C "$stage" -c . | podman import - "$GO_IMAGE" >"$WORK/import.log" 2>&1 ||
			{ rm -rf "$stage"; fail "podman import of the Go image"; }
		rm -rf "$stage"
		# Older Go images (another Go version or go.sum) are of no more use.
		podman images --format '{{.Repository}}:{{.Tag}}' localhost/homa-dpdk-go | grep -vxF "$GO_IMAGE" |
			xargs -r podman rmi >/dev/null 2>&1 || true
		say "made $GO_IMAGE ($(since "$t"))"
	fi
}

# ---------------------------------------------------------------- 4. build
build_image() {
	t=$(date +%s)
	previous=$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
	say "podman build -t $IMAGE (log: $WORK/build.log) ..."
	if ! podman build --pull=never --isolation=chroot --network=host --format=docker \
		--build-arg GO_IMAGE="$GO_IMAGE" --build-arg DEBIAN_IMAGE="$BASE" --build-arg GOPROXY=off \
		--build-arg HOMA_COMMIT="$(git rev-parse HEAD 2>/dev/null || true)" \
		--build-arg HOMA_DATE="$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || true)" \
		--build-arg HOMA_MODIFIED="$(git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo true || echo false)" \
		-t "$IMAGE" -f Dockerfile . >"$WORK/build.log" 2>&1; then
		tail -30 "$WORK/build.log"
		fail "podman build (log: $WORK/build.log)"
	fi
	links=$(grep -m1 -oE 'homa-dpdk links: librte.*' "$WORK/build.log" || echo "every layer from the cache")
	say "built $IMAGE ($(since "$t")); $links"
	# The image this build replaced, now untagged (kept if a container uses it).
	current=$(podman image inspect --format '{{.Id}}' "$IMAGE")
	if [ -n "$previous" ] && [ "$previous" != "$current" ]; then podman rmi "$previous" >/dev/null 2>&1 || true; fi
}

# ------------------------------------------------------------- 5. the size
check_size() {
	size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
	say "image size: $(awk -v s="$size" 'BEGIN{printf "%.1f MB", s/1e6}') (limit 200 MB)"
	[ "$size" -lt "$MAX_BYTES" ] || fail "the image is $size bytes, over 200 MB"
}
