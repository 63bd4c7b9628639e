"""Step 7 of scripts/container-test.sh: the Kubernetes manifests in DIR
(deploy/k8s) parse as YAML and the Pod matches the image and the config
(socket volume, hugepages, resources, the liveness probe = the image's
HEALTHCHECK, the ConfigMap, start.sh, the kustomization's list).

    IMAGE_HEALTH="homa-dpdk stats ..." python3 check_k8s.py DIR

IMAGE_HEALTH: the image's HEALTHCHECK command, its words joined by
spaces. Prints what does not hold and a summary; exit status 1 if any
check fails. Needs PyYAML (Debian's python3-yaml).
"""

import os, sys, yaml
d = sys.argv[1]
docs = {}
for f in sorted(os.listdir(d)):
    if f.endswith(".yaml"):
        with open(os.path.join(d, f)) as fh:
            docs[f] = [x for x in yaml.safe_load_all(fh) if x is not None]
pod = next(x for x in docs["pod.yaml"] if x["kind"] == "Pod")
conf = docs["homa.yaml"][0]
kust = docs["kustomization.yaml"][0]
c = {x["name"]: x for x in pod["spec"]["containers"]}
daemon, worker = c["homa-dpdk"], c["worker"]
vols = {v["name"]: v for v in pod["spec"]["volumes"]}
mounts = lambda ct: {m["name"]: m["mountPath"] for m in ct.get("volumeMounts", [])}
errs, n = [], 0
def check(ok, what):
    global n
    n += 1
    if not ok:
        errs.append(what)
sock = conf["workers"]["socket"]
check(os.path.dirname(sock) == mounts(daemon).get("sockets") == mounts(worker).get("sockets"),
      "daemon and worker mount the sockets volume on the directory of workers.socket " + sock)
check(sock in " ".join(worker.get("command", []) + worker.get("args", [])), "the worker uses " + sock)
check(vols["hugepages"]["emptyDir"].get("medium") == "HugePages-2Mi" and mounts(daemon).get("hugepages") == "/dev/hugepages",
      "a HugePages-2Mi emptyDir on the daemon's /dev/hugepages")
for ct in (daemon, worker):
    r = ct["resources"]
    check(r["requests"] == r["limits"] and "hugepages-2Mi" in r["limits"], ct["name"] + ": requests = limits, with hugepages-2Mi")
check(any("sriov" in k for k in daemon["resources"]["limits"]), "an SR-IOV resource request")
check(" ".join(daemon["livenessProbe"]["exec"]["command"]) == os.environ["IMAGE_HEALTH"],
      "the liveness probe is the image's HEALTHCHECK: " + os.environ["IMAGE_HEALTH"])
check(vols["config"]["configMap"]["name"] in [g["name"] for g in kust["configMapGenerator"]], "the config volume is the generated ConfigMap")
check(mounts(daemon).get("config") == "/etc/homa-dpdk/k8s" and daemon["command"][-1] == "/etc/homa-dpdk/k8s/start.sh",
      "start.sh from the ConfigMap at /etc/homa-dpdk/k8s")
check(set(kust["resources"]) | {"homa.yaml", "kustomization.yaml", "sriovdp-config.yaml"} == set(docs), "kustomization lists the manifests")
for e in errs:
    print("    deploy/k8s: not so:", e)
print("    %d YAML files parse; %d of %d checks pass" % (len(docs), n - len(errs), n))
sys.exit(1 if errs else 0)
