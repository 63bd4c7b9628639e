# homa-dpdk container image: the daemon on Debian 12 with DPDK 22.11 from Debian.
#
#   docker build -t homa-dpdk .                     # Docker Hub: golang and debian images
#   scripts/container-test.sh                       # podman, no registry: see below
#
# Stages:
#   go       the Go toolchain at /usr/local/go and a module cache at /go/pkg/mod
#            (GO_IMAGE: golang:1.26-bookworm by default; its module cache is empty
#            and `go mod download` fills it from GOPROXY).
#   build    debian:bookworm-slim + libdpdk-dev, pkg-config, gcc from apt; builds
#            homa-dpdk (cgo, linked against Debian's shared DPDK libraries) and the
#            example echo worker (pure Go).
#   runtime  debian:bookworm-slim + only the DPDK runtime libraries and PMDs the
#            daemon uses (DPDK_PMDS), the two binaries and /etc/homa-dpdk/homa.yaml.
#
# Without a registry, scripts/container-test.sh makes the DEBIAN_IMAGE
# localhost/debian:bookworm-slim with debootstrap (podman import) and a GO_IMAGE
# from the host's Go and a module cache of go.sum's modules, and builds with
# GOPROXY=off: the build then needs only Debian's apt repository (--network host).
#
# The entrypoint is the daemon; the default command runs it on the shipped config:
#   docker run ... homa-dpdk                        # homa-dpdk run --config /etc/homa-dpdk/homa.yaml
#   docker run ... homa-dpdk demo --seconds 3       # the embedded demo on virtual devices
#   docker run ... --entrypoint homa-echo homa-dpdk server -socket /run/homa-dpdk/workers.sock

ARG GO_IMAGE=golang:1.26-bookworm
ARG DEBIAN_IMAGE=debian:bookworm-slim

FROM ${GO_IMAGE} AS go

FROM ${DEBIAN_IMAGE} AS build
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends libdpdk-dev pkg-config gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
COPY --from=go /usr/local/go /usr/local/go
COPY --from=go /go /go
ENV PATH=/usr/local/go/bin:$PATH GOPATH=/go GOTOOLCHAIN=local CGO_ENABLED=1 GOFLAGS=-buildvcs=false
WORKDIR /src
COPY go.mod go.sum ./
# off: use only the module cache of GO_IMAGE (scripts/container-test.sh).
ARG GOPROXY=https://proxy.golang.org,direct
RUN go mod download
COPY . .
# The build, stamped: .git is not in the context, so Go has no VCS
# information to give `homa-dpdk version` (scripts/container-test.sh passes
# these from git; see daemon/build.go).
ARG HOMA_VERSION="" HOMA_COMMIT="" HOMA_DATE="" HOMA_MODIFIED=""
RUN --mount=type=cache,target=/root/.cache/go-build \
    d=github.com/homa-dpdk/homa-dpdk/daemon \
 && go build -trimpath -ldflags="-s -w -X $d.stampVersion=$HOMA_VERSION -X $d.stampCommit=$HOMA_COMMIT -X $d.stampDate=$HOMA_DATE -X $d.stampModified=$HOMA_MODIFIED" \
    -o /out/homa-dpdk ./cmd/homa-dpdk \
 && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/homa-echo ./examples/echo \
 && echo "homa-dpdk links: $(ldd /out/homa-dpdk | grep -o 'librte_[a-z0-9_]*' | sort -u | tr '\n' ' ')"

FROM ${DEBIAN_IMAGE} AS runtime
ARG DEBIAN_FRONTEND=noninteractive
# The libraries homa-dpdk links (ldd: eal, ethdev, mbuf, mempool, ring, net_ring,
# bus_vdev and what they pull in) come with the PMD packages. EAL loads every
# driver in /usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0 at start, so this list is
# also the set of devices the image can drive: the mempool driver, the virtual
# devices (ring, null, memif, af_packet) and the NICs most used with SR-IOV:
# Intel VFs (iavf: E810/X710, ixgbe: 82599/X540 VFs) and PFs (ice, i40e),
# NVIDIA/Mellanox ConnectX (mlx5, bifurcated: no vfio-pci binding), virtio, ENA.
ARG DPDK_PMDS="librte-mempool-ring23 librte-bus-pci23 librte-bus-vdev23 \
    librte-net-ring23 librte-net-null23 librte-net-memif23 librte-net-af-packet23 \
    librte-net-iavf23 librte-net-ice23 librte-net-i40e23 librte-net-ixgbe23 \
    librte-net-mlx5-23 librte-net-virtio23 librte-net-ena23"
RUN apt-get update \
 && apt-get install -y --no-install-recommends ${DPDK_PMDS} \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
COPY --from=build /out/homa-dpdk /out/homa-echo /usr/local/bin/
COPY deploy/container/homa.yaml /etc/homa-dpdk/homa.yaml
# Every key, documented: the file errors point to (homa-dpdk config check).
COPY config/example.yaml /etc/homa-dpdk/example.yaml
# Fails the build if a library homa-dpdk links is missing.
RUN ! ldd /usr/local/bin/homa-dpdk | grep 'not found' && homa-dpdk version
# Worker control sockets: share this directory with the workers' containers.
VOLUME /run/homa-dpdk
# Prometheus /metrics (metrics.address in homa.yaml).
EXPOSE 9464
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["homa-dpdk", "stats", "--metrics", "127.0.0.1:9464", "--probe", "healthz"]
ENTRYPOINT ["homa-dpdk"]
CMD ["run", "--config", "/etc/homa-dpdk/homa.yaml"]
