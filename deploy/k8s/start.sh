#!/bin/sh
# The homa-dpdk container's command in the Kubernetes Pod (pod.yaml): it
# fills in what only the node knows, then runs the daemon.
#  - The SR-IOV device plugin allocates a VF and names its PCI address in
#    PCIDEVICE_<RESOURCE> (intel.com/intel_sriov_dpdk ->
#    PCIDEVICE_INTEL_COM_INTEL_SRIOV_DPDK; set HOMA_PCI_ENV to another name
#    for another resource). It goes into homa.yaml's ports[0].device
#    (@PCI@) and EAL's allow-list.
#  - The CPUs the container may use (exclusive ones with the static CPU
#    manager policy and integer CPU requests = limits): EAL's lcore 0 (the
#    main thread, the Go runtime) on the first, lcore 1 (the polling loop,
#    homa.yaml's lcores: [1]) on the second.
# Hugepages come from the HugePages-2Mi emptyDir mounted on /dev/hugepages.
set -eu
conf_dir=${HOMA_K8S_DIR:-/etc/homa-dpdk/k8s}
pci_env=${HOMA_PCI_ENV:-PCIDEVICE_INTEL_COM_INTEL_SRIOV_DPDK}
pci=$(printenv "$pci_env" || true)
if [ -z "$pci" ]; then
	echo "start.sh: $pci_env is not set: no SR-IOV VF was allocated to this container (resources: intel.com/intel_sriov_dpdk)" >&2
	exit 1
fi
pci=${pci%%,*} # the first VF when there are several

# Cpus_allowed_list, e.g. "4-5" or "3,17": the first two CPUs.
cpus=$(awk '/^Cpus_allowed_list:/ {print $2}' /proc/self/status |
	tr ',' '\n' | awk -F- '{ for (c = $1; c <= ($2 == "" ? $1 : $2); c++) print c }' | head -2)
# shellcheck disable=SC2086 # split into $1 $2
set -- $cpus
if [ $# -lt 2 ]; then
	echo "start.sh: the daemon needs two CPUs (main and polling loop); this container may use: $cpus" >&2
	exit 1
fi

sed "s/@PCI@/$pci/" "$conf_dir/homa.yaml" >/tmp/homa.yaml
echo "start.sh: VF $pci, lcore 0 on CPU $1, polling lcore 1 on CPU $2" >&2
exec homa-dpdk run --config /tmp/homa.yaml -- --lcores "0@$1,1@$2" -a "$pci" --in-memory
