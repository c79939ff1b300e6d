"""k8s_fixtures.py: layer 3 and 4 scenarios for make_fixtures.py: kubelet files, recorded API answers, metrics pages.

A scenario with an api/ folder gets a kube_server.py started on 127.0.0.1 by run-scenarios.sh,
answering the files there (kube_server.py's naming), with fresh certificates and a generated
kubeconfig; an api-mode file says "hang" (the server never answers) or "down" (no server: a
closed port). A metrics/ folder is served over plain HTTP by metrics_server.py; args may name
@METRICS_PORT@ and @CLOSED_PORT@, which the runner fills in and writes back into the reports.
"""
import json
import os

UID_BASE = "3f1c2a7e-5b8d-4e0f-9a61-%012x"
TS = "2026-03-02T08:14:%02dZ"


def uid(n):
    return UID_BASE % n


def write_json(path, doc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


def gfd_labels(n, driver="550.54.15", cuda=(12, 4), count=None, product="NVIDIA-H100-80GB-HBM3", memory=81559):
    major, minor, rev = driver.split(".")
    return {
        "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": str(count if count is not None else len(n.gpus)), "nvidia.com/gpu.memory": str(memory),
        "nvidia.com/gpu.family": "hopper", "nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "0",
        "nvidia.com/gpu.replicas": "1", "nvidia.com/gpu.sharing-strategy": "none", "nvidia.com/gpu.mode": "compute",
        "nvidia.com/gpu.machine": "PowerEdge-XE9680", "nvidia.com/gpu.clique": "6b0b9c1e-2f4d-4c1a-9d3e-7f1a2b3c4d5e.32766",
        "nvidia.com/cuda.driver-version.full": driver, "nvidia.com/cuda.driver-version.major": major,
        "nvidia.com/cuda.driver-version.minor": minor, "nvidia.com/cuda.driver-version.revision": rev,
        "nvidia.com/cuda.driver.major": major, "nvidia.com/cuda.driver.minor": minor, "nvidia.com/cuda.driver.rev": rev,
        "nvidia.com/cuda.runtime-version.full": "%d.%d" % cuda, "nvidia.com/cuda.runtime-version.major": str(cuda[0]),
        "nvidia.com/cuda.runtime-version.minor": str(cuda[1]), "nvidia.com/cuda.runtime.major": str(cuda[0]),
        "nvidia.com/cuda.runtime.minor": str(cuda[1]), "nvidia.com/mig.capable": "true", "nvidia.com/mig.strategy": "single",
        "nvidia.com/mps.capable": "false", "nvidia.com/gfd.timestamp": "1772439240",
        "nvidia.com/mig.config": "all-disabled", "nvidia.com/mig.config.state": "success",
    }


def node_object(n, gpus="8", allocatable=None, labels=None, ready=True):
    name = n.name
    lab = {"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
           "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "node.kubernetes.io/instance-type": "xe9680",
           "feature.node.kubernetes.io/pci-10de.present": "true", "feature.node.kubernetes.io/kernel-version.full": "6.1.0-18-amd64"}
    for c in ["container-toolkit", "dcgm", "dcgm-exporter", "device-plugin", "gpu-feature-discovery", "mig-manager",
              "node-status-exporter", "operator-validator"]:
        lab["nvidia.com/gpu.deploy." + c] = "true"
    lab["nvidia.com/gpu.deploy.driver"] = "pre-installed"
    lab.update(labels if labels is not None else gfd_labels(n))
    res = {"cpu": "224", "ephemeral-storage": "1843269236Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0",
           "memory": "2113389760Ki", "pods": "110", "rdma/rdma_shared_device_a": "63"}
    cap = dict(res, **({"nvidia.com/gpu": gpus} if gpus is not None else {}))
    alloc = dict(res, cpu="223500m", memory="2112238784Ki", **({"nvidia.com/gpu": allocatable if allocatable is not None else gpus}
                                                                if gpus is not None else {}))
    def cond(t, status, reason, msg):
        return {"type": t, "status": status, "reason": reason, "message": msg,
                "lastHeartbeatTime": "2026-03-02T09:40:11Z", "lastTransitionTime": "2026-02-11T06:02:47Z"}
    return {
        "kind": "Node", "apiVersion": "v1",
        "metadata": {"name": name, "uid": uid(1), "resourceVersion": "48213377", "creationTimestamp": "2026-02-11T06:01:55Z",
                     "labels": lab, "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                                                    "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                                                    "nfd.node.kubernetes.io/feature-labels": "nvidia.com/gpu.product,nvidia.com/gpu.count"}},
        "spec": {"podCIDR": "10.244.3.0/24", "podCIDRs": ["10.244.3.0/24"],
                 "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
        "status": {
            "capacity": cap, "allocatable": alloc,
            "conditions": [
                cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                cond("Ready", "True", "KubeletReady", "kubelet is posting ready status") if ready else
                cond("Ready", "False", "KubeletNotReady", "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady"),
            ],
            "addresses": [{"type": "InternalIP", "address": "10.0.12.34"}, {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": "8c1f0d5e2b7a4c39a1e6f2d4b8c0e7a1", "systemUUID": "4c4c4544-0051-3510-8047-b4c04f4e3733",
                         "bootID": "0b6f2d1c-9e8a-4f3b-8c2d-7a1e5f4b3c2d", "kernelVersion": "6.1.0-18-amd64",
                         "osImage": "Debian GNU/Linux 12 (bookworm)", "containerRuntimeVersion": "containerd://1.7.13",
                         "kubeletVersion": "v1.29.4", "kubeProxyVersion": "v1.29.4", "operatingSystem": "linux",
                         "architecture": "amd64"},
        },
    }


def running(name, image, restarts=0, ready=True):
    return {"name": name, "image": image, "imageID": image.split(":")[0] + "@sha256:" + "5e" * 32,
            "containerID": "containerd://" + "a1" * 32, "ready": ready, "started": True, "restartCount": restarts,
            "state": {"running": {"startedAt": TS % 30}}, "lastState": {}}


def done(name, image):
    return {"name": name, "image": image, "imageID": image.split(":")[0] + "@sha256:" + "7c" * 32,
            "containerID": "containerd://" + "b2" * 32, "ready": True, "restartCount": 0, "started": False,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": TS % 1, "finishedAt": TS % 9,
                                     "containerID": "containerd://" + "b2" * 32}}, "lastState": {}}


def crashloop(name, image, pod, ns, restarts=14, message=None):
    return {"name": name, "image": image, "imageID": image.split(":")[0] + "@sha256:" + "9d" * 32,
            "containerID": "containerd://" + "c3" * 32, "ready": False, "started": False, "restartCount": restarts,
            "state": {"waiting": {"reason": "CrashLoopBackOff",
                                  "message": "back-off 5m0s restarting failed container=%s pod=%s_%s(%s)" % (name, pod, ns, uid(77))}},
            "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "message": message or "",
                                         "startedAt": "2026-03-02T09:31:02Z", "finishedAt": "2026-03-02T09:31:04Z",
                                         "containerID": "containerd://" + "c3" * 32}}}


def pod(n, name, ns, labels, containers, init=(), phase="Running", ip="10.244.3.%d", owner="DaemonSet", host_network=False):
    idx = pod.counter = getattr(pod, "counter", 10) + 1
    ready = phase == "Succeeded" or all(c["ready"] for c in containers)
    init_done = all("terminated" in c["state"] and c["state"]["terminated"]["exitCode"] == 0 for c in init)
    def cond(t, status):
        return {"type": t, "status": status, "lastProbeTime": None, "lastTransitionTime": TS % 40}
    return {
        "metadata": {"name": name, "generateName": name.rsplit("-", 1)[0] + "-", "namespace": ns, "uid": uid(idx),
                     "resourceVersion": str(48200000 + idx), "creationTimestamp": "2026-02-11T06:03:%02dZ" % (idx % 60),
                     "labels": dict(labels, **{"controller-revision-hash": "6d4f8b9c7", "pod-template-generation": "3"}),
                     "ownerReferences": [{"apiVersion": "apps/v1" if owner == "DaemonSet" else "v1", "kind": owner,
                                          "name": name.rsplit("-", 1)[0], "uid": uid(idx + 500), "controller": True,
                                          "blockOwnerDeletion": True}]},
        "spec": {"nodeName": n.name, "hostNetwork": host_network, "serviceAccountName": name.rsplit("-", 1)[0],
                 "containers": [{"name": c["name"], "image": c["image"]} for c in containers],
                 "initContainers": [{"name": c["name"], "image": c["image"]} for c in init],
                 "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
        "status": {
            "phase": phase,
            "conditions": [cond("Initialized", "True" if init_done else "False"),
                           cond("Ready", "True" if ready and init_done else "False"),
                           cond("ContainersReady", "True" if ready and init_done else "False"), cond("PodScheduled", "True")],
            "hostIP": "10.0.12.34", "hostIPs": [{"ip": "10.0.12.34"}],
            "podIP": "10.0.12.34" if host_network else ip % idx, "podIPs": [{"ip": "10.0.12.34" if host_network else ip % idx}],
            "startTime": "2026-02-11T06:03:%02dZ" % (idx % 60), "qosClass": "Burstable",
            "initContainerStatuses": list(init), "containerStatuses": list(containers),
        },
    }


OP = "gpu-operator"
IMG = "nvcr.io/nvidia/"


def waiting_init(name, image):
    """An init container still running: the validator's loop waiting for a status file of the layer below."""
    return {"name": name, "image": image, "imageID": image.split(":")[0] + "@sha256:" + "8e" * 32,
            "containerID": "containerd://" + "d4" * 32, "ready": False, "started": True, "restartCount": 0,
            "state": {"running": {"startedAt": TS % 5}}, "lastState": {}}


def not_started(name, image):
    """A container waiting for the pod's init containers (PodInitializing)."""
    return {"name": name, "image": image, "imageID": "", "ready": False, "started": False, "restartCount": 0,
            "state": {"waiting": {"reason": "PodInitializing"}}, "lastState": {}}


def operator_pods(n, dp=None, dcgm_exporter=None, driver_waiting=False):
    """The GPU Operator's pods on a node with a pre-installed driver; dp/dcgm_exporter replace those containers;
    driver_waiting: the driver is not ready, so the pods validating it wait in their driver-validation init container."""
    val = lambda c: (waiting_init if driver_waiting and c == "driver-validation" else done)(
        c, IMG + "cloud-native/gpu-operator-validator:v24.9.2")
    main = lambda c, image: not_started(c, image) if driver_waiting else running(c, image)
    dp_name = "nvidia-device-plugin-daemonset-x7k2p"
    ex_name = "nvidia-dcgm-exporter-q9t4m"
    return [
        pod(n, "nvidia-container-toolkit-daemonset-2hx6d", OP, {"app": "nvidia-container-toolkit-daemonset"},
            [main("nvidia-container-toolkit-ctr", IMG + "k8s/container-toolkit:v1.17.3-ubuntu20.04")], [val("driver-validation")]),
        pod(n, dp_name, OP, {"app": "nvidia-device-plugin-daemonset"},
            [dp or running("nvidia-device-plugin", IMG + "k8s-device-plugin:v0.17.0"),
             running("config-manager", IMG + "k8s-device-plugin:v0.17.0")], [val("toolkit-validation")]),
        pod(n, "gpu-feature-discovery-k5w8z", OP, {"app": "gpu-feature-discovery", "app.kubernetes.io/part-of": "nvidia-gpu"},
            [running("gpu-feature-discovery", IMG + "k8s-device-plugin:v0.17.0")], [val("toolkit-validation")]),
        pod(n, "nvidia-dcgm-exporter-q9t4m", OP, {"app": "nvidia-dcgm-exporter"},
            [dcgm_exporter or running("nvidia-dcgm-exporter", IMG + "k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04")],
            [val("toolkit-validation")]),
        pod(n, "nvidia-mig-manager-m2v7c", OP, {"app": "nvidia-mig-manager"},
            [running("nvidia-mig-manager", IMG + "cloud-native/k8s-mig-manager:v0.10.0-ubuntu20.04")], [val("toolkit-validation")]),
        pod(n, "nvidia-node-status-exporter-8rj3n", OP, {"app": "nvidia-node-status-exporter"},
            [running("nvidia-node-status-exporter", IMG + "cloud-native/gpu-operator-validator:v24.9.2")]),
        pod(n, "nvidia-operator-validator-d6f9s", OP, {"app": "nvidia-operator-validator", "app.kubernetes.io/part-of": "gpu-operator"},
            [main("nvidia-operator-validator", IMG + "cloud-native/gpu-operator-validator:v24.9.2")],
            [val("driver-validation")] + [(lambda c: not_started(c, IMG + "cloud-native/gpu-operator-validator:v24.9.2"))(c)
                                          if driver_waiting else val(c)
                                          for c in ("toolkit-validation", "cuda-validation", "plugin-validation")]),
        pod(n, "nvidia-cuda-validator-7wq2l", OP, {"app": "nvidia-cuda-validator"},
            [done("nvidia-cuda-validator", IMG + "cloud-native/gpu-operator-validator:v24.9.2")],
            [done("cuda-validation", IMG + "cloud-native/gpu-operator-validator:v24.9.2")], phase="Succeeded", owner="Node"),
        pod(n, "gpu-operator-node-feature-discovery-worker-h4n8b", OP,
            {"app.kubernetes.io/instance": "gpu-operator", "app.kubernetes.io/name": "node-feature-discovery", "role": "worker"},
            [running("worker", "registry.k8s.io/nfd/node-feature-discovery:v0.16.6")]),
    ]


def other_pods(n, logging=True, otel=True, network=True):
    pods = [
        pod(n, "kube-proxy-6vb2x", "kube-system", {"k8s-app": "kube-proxy"},
            [running("kube-proxy", "registry.k8s.io/kube-proxy:v1.29.4")], host_network=True),
        pod(n, "calico-node-9kz7q", "calico-system", {"k8s-app": "calico-node"},
            [running("calico-node", "docker.io/calico/node:v3.27.3")], host_network=True),
        pod(n, "prometheus-node-exporter-t8d3w", "monitoring",
            {"app.kubernetes.io/name": "prometheus-node-exporter", "app.kubernetes.io/instance": "kube-prometheus-stack"},
            [running("node-exporter", "quay.io/prometheus/node-exporter:v1.8.2")], host_network=True),
    ]
    if network:
        pods += [
            pod(n, "mofed-ubuntu22.04-6d8f7c9b5-ds-fx2kq", "nvidia-network-operator",
                {"app": "mofed-ubuntu22.04", "nvidia.com/ofed-driver": ""},
                [running("mofed-container", "nvcr.io/nvidia/mellanox/doca-driver:24.10-0.7.0.0-0")], host_network=True),
            pod(n, "rdma-shared-dp-ds-vn5hl", "nvidia-network-operator", {"app": "rdma-shared-dp"},
                [running("rdma-shared-dp", "ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.2")], host_network=True),
        ]
    if logging:
        pods.append(pod(n, "fluent-bit-5jm9r", "logging", {"app.kubernetes.io/name": "fluent-bit", "app.kubernetes.io/instance": "fluent-bit"},
                        [running("fluent-bit", "cr.fluentbit.io/fluent/fluent-bit:3.1.9")]))
    if otel:
        pods.append(pod(n, "otel-agent-collector-zq4pd", "observability",
                        {"app.kubernetes.io/name": "otel-agent-collector", "app.kubernetes.io/component": "opentelemetry-collector"},
                        [running("otc-container", "otel/opentelemetry-collector-contrib:0.111.0")]))
    return pods


def pod_list(pods):
    return {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "48213390"}, "items": pods}


def kubelet_files(n, registered=None, sockets=("nvidia-gpu.sock",), numa=True, registry=("nfs.csi.k8s.io-reg.sock",)):
    dp = "var/lib/kubelet/device-plugins/"
    n.write(dp + "kubelet.sock", "")
    for s in sockets:
        n.write(dp + s, "")
    ids = registered if registered is not None else [g["uuid"] for g in n.gpus]
    train = ids[:8]
    dev_ids = {"0": train[:4], "1": train[4:]} if numa else train
    cp = {"Data": {"PodDeviceEntries": [{
        "PodUID": uid(900), "ContainerName": "trainer", "ResourceName": "nvidia.com/gpu", "DeviceIDs": dev_ids,
        "AllocResp": "CkIKFk5WSURJQV9WSVNJQkxFX0RFVklDRVMSKEdQVS1hZDYzYzY4NC01NTkzLTExMWEtY2JiMS1jMTQ1MWViY2QwYWE="}],
        "RegisteredDevices": {"nvidia.com/gpu": ids}}, "Checksum": 1863257745}
    n.write(dp + "kubelet_internal_checkpoint", json.dumps(cp, separators=(",", ":")))
    for r in registry:
        n.write("var/lib/kubelet/plugins_registry/" + r, "")


def dcgm_page(n, zero=False, skip=()):
    fields = [("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", 1980),
              ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", 2619),
              ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", 33),
              ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", 71.234),
              ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", 0),
              ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", 512),
              ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", 0)]
    out = []
    for name, typ, help_, v in fields:
        out.append("# HELP %s %s" % (name, help_))
        out.append("# TYPE %s %s" % (name, typ))
        for g in n.gpus:
            if g["index"] in skip:
                continue
            val = 0 if zero else v
            s = ("%f" % val) if isinstance(val, float) else "%d" % val
            out.append('%s{gpu="%d",UUID="%s",pci_bus_id="0000%s",device="nvidia%d",modelName="%s",Hostname="%s",'
                       'DCGM_FI_DRIVER_VERSION="550.54.15"} %s' % (name, g["index"], g["uuid"], g["addr"].upper(),
                                                                    g["index"], g["model"]["name"], n.name, s))
    return "\n".join(out) + "\n"


NODE_PAGE = """# HELP node_exporter_build_info A metric with a constant '1' value labeled by version, revision, branch, goversion from which node_exporter was built, and the goos and goarch for the build.
# TYPE node_exporter_build_info gauge
node_exporter_build_info{branch="HEAD",goarch="amd64",goos="linux",goversion="go1.22.5",revision="f1e0e8360aa60b6cb5e5cc1560bed348fc2c1895",tags="unknown",version="1.8.2"} 1
# HELP node_load1 1m load average.
# TYPE node_load1 gauge
node_load1 3.21
# HELP node_memory_MemAvailable_bytes Memory information field MemAvailable_bytes.
# TYPE node_memory_MemAvailable_bytes gauge
node_memory_MemAvailable_bytes 2.0215398e+12
# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.
# TYPE node_cpu_seconds_total counter
node_cpu_seconds_total{cpu="0",mode="idle"} 1.2345678e+06
node_cpu_seconds_total{cpu="0",mode="user"} 45678.9
"""


def serve(n, api=None, metrics=None, mode=None, args=()):
    """Writes api/ (path -> doc), metrics/ (path -> text) and api-mode; returns the check args."""
    for path, doc in (api or {}).items():
        write_json(os.path.join(n.dir, "api", path + ".json"), doc)
    for path, text in (metrics or {}).items():
        full = os.path.join(n.dir, "metrics", path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)
    if mode:
        with open(os.path.join(n.dir, "api-mode"), "w") as f:
            f.write(mode + "\n")
    return list(args)


def api_docs(n, node, pods, csi=("nfs.csi.k8s.io",)):
    docs = {"api/v1/nodes/" + n.name: node,
            "api/v1/pods?fieldSelector=spec.nodeName=" + n.name: pod_list(pods)}
    if csi:
        docs["apis/storage.k8s.io/v1/csinodes/" + n.name] = {
            "kind": "CSINode", "apiVersion": "storage.k8s.io/v1",
            "metadata": {"name": n.name, "uid": uid(3), "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": n.name, "uid": uid(1)}]},
            "spec": {"drivers": [{"name": d, "nodeID": n.name, "topologyKeys": None} for d in csi]}}
    return docs


def urls(dcgm="http://127.0.0.1:@METRICS_PORT@/dcgm/metrics", node="http://127.0.0.1:@METRICS_PORT@/node/metrics"):
    return ["--dcgm-url", dcgm, "--node-exporter-url", node]


def healthy_metrics(n, **kw):
    return {"dcgm/metrics": dcgm_page(n, **kw), "node/metrics": NODE_PAGE}


def scenarios(hgx, Node, l4_node):
    """Writes the layer 3 and 4 scenarios (hgx, Node, l4_node are make_fixtures.py's builders)."""
    # A healthy HGX node in a cluster: GPU Operator, Network Operator, exporters, agents all fine.
    n = hgx("k8s-healthy")
    kubelet_files(n)
    n.nvml_doc()
    n.finish(serve(n, api_docs(n, node_object(n), operator_pods(n) + other_pods(n)), healthy_metrics(n), args=urls()))

    # The device plugin crashes at start (it cannot initialise NVML with its config): CrashLoopBackOff;
    # the kubelet removed its socket and zeroed allocatable.
    n = hgx("k8s-device-plugin-crashloop")
    kubelet_files(n, sockets=())
    dp = crashloop("nvidia-device-plugin", IMG + "k8s-device-plugin:v0.17.0", "nvidia-device-plugin-daemonset-x7k2p", OP,
                   message="E0302 09:31:04.112 main.go:132] error starting plugins: unable to load resource managers to "
                           "manage plugin devices: invalid device discovery strategy")
    n.nvml_doc()
    n.finish(serve(n, api_docs(n, node_object(n, allocatable="0"), operator_pods(n, dp=dp) + other_pods(n)),
                   healthy_metrics(n), args=urls()))

    # Allocatable 0 while all 8 GPUs work: the plugin runs and is registered but reports every GPU Unhealthy.
    n = hgx("k8s-allocatable-zero")
    kubelet_files(n)
    n.nvml_doc()
    n.finish(serve(n, api_docs(n, node_object(n, allocatable="0"), operator_pods(n) + other_pods(n)),
                   healthy_metrics(n), args=urls()))

    # 7 of 8 advertised: GPU 3 fell off the bus (layer 1); layers 3 and 4 are blocked by it.
    n = hgx("k8s-gpu-lost", gpu_overrides={3: {"lost": True}})
    n.log("NVRM: Xid (PCI:0000:5d:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", 4)
    n.log("NVRM: GPU 0000:5d:00.0: GPU has fallen off the bus.", 3)
    kubelet_files(n)
    n.nvml_doc()
    n.finish(serve(n, api_docs(n, node_object(n, gpus="8", allocatable="7"), operator_pods(n) + other_pods(n)),
                   healthy_metrics(n, skip=(3,)), args=urls()))

    # GFD labels left from the previous driver (535.129.03, CUDA 12.2): GFD did not relabel after the upgrade.
    n = hgx("k8s-gfd-old-driver")
    kubelet_files(n)
    n.nvml_doc()
    n.finish(serve(n, api_docs(n, node_object(n, labels=gfd_labels(n, driver="535.129.03", cuda=(12, 2))),
                               operator_pods(n) + other_pods(n)), healthy_metrics(n), args=urls()))

    # The DCGM exporter answers, but every value is 0 (it lost its host engine).
    n = hgx("k8s-dcgm-all-zero")
    kubelet_files(n)
    n.nvml_doc()
    n.finish(serve(n, api_docs(n, node_object(n), operator_pods(n) + other_pods(n)), healthy_metrics(n, zero=True), args=urls()))

    # The DCGM exporter is down: CrashLoopBackOff (OOM-killed), nothing listens.
    n = hgx("k8s-dcgm-exporter-down")
    kubelet_files(n)
    ex = crashloop("nvidia-dcgm-exporter", IMG + "k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04", "nvidia-dcgm-exporter-q9t4m", OP,
                   restarts=37)
    ex["lastState"]["terminated"].update(exitCode=137, reason="OOMKilled")
    n.nvml_doc()
    n.finish(serve(n, api_docs(n, node_object(n), operator_pods(n, dcgm_exporter=ex) + other_pods(n)),
                   {"node/metrics": NODE_PAGE},
                   args=urls(dcgm="http://127.0.0.1:@CLOSED_PORT@/metrics")))

    # The API server cannot be reached (connection refused): API checks skip; the node's own files are still judged.
    n = hgx("k8s-api-unreachable")
    kubelet_files(n)
    n.nvml_doc()
    n.finish(serve(n, None, healthy_metrics(n), mode="down", args=urls()))

    # The API server accepts the connection and never answers: bounded by --timeout 1.
    n = hgx("k8s-api-hang")
    kubelet_files(n)
    n.nvml_doc()
    n.finish(serve(n, {"api/v1/nodes/k8s-api-hang": node_object(n)}, healthy_metrics(n), mode="hang",
                   args=["--timeout", "1"] + urls()))

    # The driver does not load (layer 1) and the DCGM exporter is down: layer 1 is the root cause, layer 4 blocked.
    n = l4_node("k8s-driver-broken", driver=False)
    n.log("modprobe: ERROR: could not insert 'nvidia': Key was rejected by service", 3)
    kubelet_files(n, sockets=(), registry=())
    ex = crashloop("nvidia-dcgm-exporter", IMG + "k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04", "nvidia-dcgm-exporter-q9t4m", OP,
                   message="Error: failed to initialize NVML: could not load NVML library")
    n.finish(serve(n, api_docs(n, node_object(n, gpus=None, labels={"nvidia.com/gpu.present": "true"}),
                               operator_pods(n, dcgm_exporter=ex, driver_waiting=True) + other_pods(n, network=False),
                               csi=()),
                   {"node/metrics": NODE_PAGE}, args=urls(dcgm="http://127.0.0.1:@CLOSED_PORT@/metrics")))

    mig_scenarios(hgx)  # last: pod numbering of the scenarios above stays as it was
    validation_scenarios(hgx)


# H100 80GB HBM3 MIG profiles (nvidia-smi mig -lgip): GPU instance profile index, compute instance profile
# index, multiprocessors, copy engines, decoders, JPEG, OFA, slices, memory MiB.
H100_MIG = {"1g.10gb": (0, 0, 16, 1, 1, 1, 0, 1, 9984), "7g.80gb": (4, 4, 132, 7, 7, 7, 1, 7, 81152)}


def mig_devices(gpu_index, layout):
    """The fake NVML's mig_devices for [(profile, GPU instance id), ...], one compute instance each."""
    out = []
    for i, (prof, gi) in enumerate(layout):
        gp, cp, sm, ce, dec, jpg, ofa, slices, mb = H100_MIG[prof]
        out.append({"uuid": "MIG-%08x-%04x-4a1b-8c2d-3e4f5a6b7c8d" % (0x5e000000 + gpu_index, i), "gi": gi, "ci": 0,
                    "gi_profile": gp, "ci_profile": cp,
                    "attributes": {"multiprocessor_count": sm, "shared_copy_engine_count": ce, "shared_decoder_count": dec,
                                   "shared_encoder_count": 0, "shared_jpeg_count": jpg, "shared_ofa_count": ofa,
                                   "gpu_instance_slice_count": slices, "compute_instance_slice_count": slices,
                                   "memory_size_mb": mb},
                    "memory": {"total": mb << 20, "used": 13 << 20, "free": (mb - 13) << 20}})
    return out


def mig_scenarios(hgx):
    """Writes the MIG scenarios (mig-manager.state and device-plugin.allocatable against NVML's MIG devices)."""
    # MIG mixed strategy: the MIG manager reports all-1g.10gb applied, but GPU 5 still carries one 7g.80gb
    # (its GPU instances were recreated by hand); the device plugin advertises exactly what NVML lists.
    all_1g = [("1g.10gb", gi) for gi in range(7, 14)]
    over = {i: {"mig_mode": {"current": 1, "pending": 1},
                "mig_devices": mig_devices(i, [("7g.80gb", 0)] if i == 5 else all_1g)} for i in range(8)}
    n = hgx("k8s-mig-mixed-wrong-layout", gpu_overrides=over)
    kubelet_files(n, registered=[], sockets=("nvidia-mig-1g.10gb.sock", "nvidia-mig-7g.80gb.sock"))
    n.nvml_doc()
    labels = gfd_labels(n)
    labels.update({"nvidia.com/mig.strategy": "mixed", "nvidia.com/mig.config": "all-1g.10gb",
                   "nvidia.com/mig.config.state": "success", "nvidia.com/gpu.replicas": "0"})
    node = node_object(n, gpus="0", labels=labels)
    for k in ("capacity", "allocatable"):
        node["status"][k].update({"nvidia.com/mig-1g.10gb": "49", "nvidia.com/mig-7g.80gb": "1"})
    n.finish(serve(n, api_docs(n, node, operator_pods(n) + other_pods(n)), healthy_metrics(n), args=urls()))

    # A failed MIG reconfiguration: asked for all-1g.10gb, the MIG manager enabled MIG mode on every GPU but
    # could not create the GPU instances (a process held the GPUs) and set mig.config.state=failed. The device
    # plugin (single strategy) crash-loops on MIG-enabled GPUs without MIG devices, and GFD wrote the
    # <model>-MIG-INVALID labels: both rest on the MIG manager, the root cause.
    counter = pod.counter  # the scenarios written after these keep their pod numbering
    over = {i: {"mig_mode": {"current": 1, "pending": 1}, "mig_devices": []} for i in range(8)}
    n = hgx("mig-reconfig-failed", gpu_overrides=over)
    kubelet_files(n, registered=[], sockets=())
    n.nvml_doc()
    labels = gfd_labels(n)
    labels.update({"nvidia.com/mig.strategy": "single", "nvidia.com/mig.config": "all-1g.10gb",
                   "nvidia.com/mig.config.state": "failed", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-INVALID",
                   "nvidia.com/gpu.count": "0", "nvidia.com/gpu.replicas": "0", "nvidia.com/gpu.memory": "0",
                   "nvidia.com/gpu.sharing-strategy": ""})
    dp = crashloop("nvidia-device-plugin", IMG + "k8s-device-plugin:v0.17.0", "nvidia-device-plugin-daemonset-x7k2p", OP,
                   restarts=9,
                   message="E0302 09:31:04.112 main.go:297] error starting plugins: error creating plugin manager: unable "
                           "to create plugin manager: error building device map: error building device map from "
                           "config.resources: invalid MIG configuration: at least one device with migEnabled=true was "
                           "not configured correctly: device 0 has no MIG devices configured")
    n.finish(serve(n, api_docs(n, node_object(n, gpus="0", labels=labels), operator_pods(n, dp=dp) + other_pods(n)),
                   healthy_metrics(n), args=urls()))
    pod.counter = counter


def validation_scenarios(hgx):
    """The GPU Operator's validation files against the validations that ran (gpu-operator.validations)."""
    counter = pod.counter  # the scenarios written after these keep their pod numbering
    # /run/nvidia/validations lost plugin-ready (a cleanup emptied part of the tmpfs) while the validator's
    # plugin-validation completed long ago: the pods that wait for it would stay in Init at their next start.
    n = hgx("k8s-validation-file-lost", runtime=False)
    n.toolkit()
    n.containerd(version=2)
    n.cdi_spec()
    n.validations(".driver-ctr-ready", "driver-ready", "toolkit-ready", "cuda-ready")
    kubelet_files(n)
    n.nvml_doc()
    n.finish(serve(n, api_docs(n, node_object(n), operator_pods(n) + other_pods(n)), healthy_metrics(n), args=urls()))

    # GPUDirect RDMA on (the driver container's .driver-ctr-ready): nvidia-peermem was validated with the driver,
    # and its file is there; GDS and GDRCopy are off, so nvidia-fs-ready and gdrcopy-ready are not expected.
    n = hgx("k8s-validation-peermem", runtime=False)
    n.toolkit()
    n.containerd(version=2)
    n.cdi_spec()
    n.validations(".driver-ctr-ready", "driver-ready", "nvidia-peermem-ready", "toolkit-ready", "cuda-ready", "plugin-ready",
                  text={".driver-ctr-ready": "GDRCOPY_ENABLED: false\nGDS_ENABLED: false\nGPU_DIRECT_RDMA_ENABLED: true\n"})
    kubelet_files(n)
    n.nvml_doc()
    n.finish(serve(n, api_docs(n, node_object(n), operator_pods(n) + other_pods(n)), healthy_metrics(n), args=urls()))
    pod.counter = counter
