#!/usr/bin/python3
# make_cluster.py: a synthetic Kubernetes cluster of GPU nodes (nodes, pods, events, storage, runtime classes, services) for kube_server.py --cluster.
"""
    make_cluster.py --gpu-nodes N [--cpu-nodes M] [--pods-per-node K] [--out FILE] [--agent-ip IP --agent-port P]

Also a module: make(gpu_nodes, ...) returns the description as a dict, which the tests bend into
their scenarios before writing it. Objects look like the real API's: a GPU node has GFD's and NFD's
labels, nvidia.com/gpu capacity, the kubelet's conditions and the gpunode agent's four conditions
with a fresh lastHeartbeatTime, a few images; each GPU node runs the gpunode agent, node-exporter,
the device plugin and GPU workloads; Events of other reasons are there for the server to filter out.
"""

import argparse
import json
import time

LAYER_TYPES = [("GPUHardwareProblem", "GPUHardwareHealthy"), ("GPUContainerRuntimeProblem", "GPUContainerRuntimeHealthy"),
               ("GPUResourceExposureProblem", "GPUResourceExposureHealthy"), ("GPUObservabilityProblem", "GPUObservabilityHealthy")]


def ts(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def gpu_labels(driver="550.54.15", cuda="12.4", product="NVIDIA-H100-80GB-HBM3"):
    major, minor, rev = driver.split(".")
    cmaj, cmin = cuda.split(".")
    return {
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "feature.node.kubernetes.io/pci-15b3.present": "true",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.deploy.container-toolkit": "true",
        "nvidia.com/gpu.deploy.device-plugin": "true",
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": "8",
        "nvidia.com/gpu.memory": "81559",
        "nvidia.com/gpu.family": "hopper",
        "nvidia.com/gpu.compute.major": "9",
        "nvidia.com/gpu.compute.minor": "0",
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/mig.capable": "true",
        "nvidia.com/mig.strategy": "single",
        "nvidia.com/cuda.driver.major": major, "nvidia.com/cuda.driver.minor": minor, "nvidia.com/cuda.driver.rev": rev,
        "nvidia.com/cuda.driver-version.major": major, "nvidia.com/cuda.driver-version.minor": minor,
        "nvidia.com/cuda.driver-version.revision": rev, "nvidia.com/cuda.driver-version.full": driver,
        "nvidia.com/cuda.runtime.major": cmaj, "nvidia.com/cuda.runtime.minor": cmin,
        "nvidia.com/cuda.runtime-version.major": cmaj, "nvidia.com/cuda.runtime-version.minor": cmin,
        "nvidia.com/cuda.runtime-version.full": cuda,
    }


def node(name, now, gpu=True, rdma=True):
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
              "node.kubernetes.io/instance-type": "p5.48xlarge" if gpu else "m7i.4xlarge",
              "topology.kubernetes.io/zone": "us-east-1a"}
    capacity = {"cpu": "192", "memory": "2113389560Ki", "pods": "110", "ephemeral-storage": "3750000000Ki"}
    if gpu:
        labels.update(gpu_labels())
        capacity["nvidia.com/gpu"] = "8"
        if rdma:
            capacity["rdma/rdma_shared_device_a"] = "63"
        else:
            del labels["feature.node.kubernetes.io/pci-15b3.present"]
    conds = [{"type": t, "status": "False", "reason": r, "message": m, "lastHeartbeatTime": ts(now - 20),
              "lastTransitionTime": ts(now - 86400)} for t, r, m in (
        ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"))]
    conds.append({"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
                  "lastHeartbeatTime": ts(now - 20), "lastTransitionTime": ts(now - 86400)})
    if gpu:
        for t, r in LAYER_TYPES:
            conds.append({"type": t, "status": "False", "reason": r, "message": "9 check(s) pass, 2 skipped",
                          "lastHeartbeatTime": ts(now - 60), "lastTransitionTime": ts(now - 86400)})
    return {
        "kind": "Node", "apiVersion": "v1",
        "metadata": {"name": name, "uid": "uid-" + name, "resourceVersion": "100", "labels": labels,
                     "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                                     "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
                     "creationTimestamp": ts(now - 864000)},
        "spec": {"providerID": "aws:///us-east-1a/i-0" + name.encode().hex()[:16]},
        "status": {
            "capacity": capacity, "allocatable": dict(capacity), "conditions": conds,
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "Hostname", "address": name}],
            "nodeInfo": {"kubeletVersion": "v1.30.4", "containerRuntimeVersion": "containerd://1.7.20",
                         "kernelVersion": "6.8.0-1015-aws", "osImage": "Ubuntu 22.04.4 LTS", "architecture": "amd64",
                         "operatingSystem": "linux", "kubeProxyVersion": "v1.30.4", "machineID": "m", "systemUUID": "s",
                         "bootID": "b"},
            "images": [{"names": ["registry.example.com/img-%d@sha256:%064x" % (i, i)], "sizeBytes": 100000000 + i}
                       for i in range(8)],
        },
    }


def pod(ns, name, node_name, now, labels, gpus=0, phase="Running", ip="10.1.0.1", ports=None, runtime_class=None,
        annotations=None):
    res = {"limits": {"nvidia.com/gpu": str(gpus)}, "requests": {"nvidia.com/gpu": str(gpus)}} if gpus else \
        {"requests": {"cpu": "10m", "memory": "32Mi"}}
    spec = {"containers": [{"name": "main", "image": "registry.example.com/%s:1" % name.split("-")[0], "resources": res,
                            "ports": ports or []}],
            "restartPolicy": "Always", "schedulerName": "default-scheduler", "serviceAccountName": "default",
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
    if node_name:
        spec["nodeName"] = node_name
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    ready = "True" if phase == "Running" else "False"
    status = {"phase": phase, "conditions": [{"type": "Ready", "status": ready}, {"type": "PodScheduled",
                                                                                   "status": "True" if node_name else "False"}]}
    if node_name:
        status.update({"podIP": ip, "hostIP": "10.0.0.1", "startTime": ts(now - 3600),
                       "containerStatuses": [{"name": "main", "ready": ready == "True", "restartCount": 0,
                                              "state": {"running": {"startedAt": ts(now - 3600)}}}]})
    meta = {"name": name, "namespace": ns, "uid": "uid-%s-%s" % (ns, name), "labels": labels,
            "creationTimestamp": ts(now - 3600)}
    if annotations:
        meta["annotations"] = annotations
    return {"kind": "Pod", "apiVersion": "v1", "metadata": meta, "spec": spec, "status": status}


def event(ns, name, pod_name, reason, message, now, etype="Normal"):
    return {"kind": "Event", "apiVersion": "v1",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": ts(now - 60)},
            "involvedObject": {"kind": "Pod", "namespace": ns, "name": pod_name, "apiVersion": "v1"},
            "reason": reason, "message": message, "type": etype, "count": 1, "source": {"component": "default-scheduler"},
            "firstTimestamp": ts(now - 60), "lastTimestamp": ts(now - 30)}


def make(gpu_nodes, cpu_nodes=None, pods_per_node=2, now=None, agent_ip="10.1.0.1", agent_port=9400):
    """Returns a healthy cluster of gpu_nodes GPU nodes (names gpu-0000...) as a kube_server.py --cluster description."""
    now = now or int(time.time())
    cpu_nodes = (gpu_nodes // 10 + 1) if cpu_nodes is None else cpu_nodes
    d = {"nodes": [], "pods": [], "events": [], "csinodes": [], "resourceVersion": 5000,
         "storageclasses": [{"kind": "StorageClass", "apiVersion": "storage.k8s.io/v1",
                             "metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                             "provisioner": "csi.example.com", "reclaimPolicy": "Delete", "volumeBindingMode": "WaitForFirstConsumer"},
                            {"kind": "StorageClass", "apiVersion": "storage.k8s.io/v1", "metadata": {"name": "fast"},
                             "provisioner": "csi.example.com"}],
         "csidrivers": [{"kind": "CSIDriver", "apiVersion": "storage.k8s.io/v1", "metadata": {"name": "csi.example.com"},
                         "spec": {"attachRequired": True, "podInfoOnMount": False}}],
         "runtimeclasses": [{"kind": "RuntimeClass", "apiVersion": "node.k8s.io/v1", "metadata": {"name": "nvidia"},
                             "handler": "nvidia"}],
         "services": [{"kind": "Service", "apiVersion": "v1",
                       "metadata": {"name": "gpunode", "namespace": "gpunode", "labels": {"app.kubernetes.io/name": "gpunode"}},
                       "spec": {"selector": {"app.kubernetes.io/name": "gpunode"}, "clusterIP": "None",
                                "ports": [{"name": "metrics", "port": 9400}]}},
                      {"kind": "Service", "apiVersion": "v1", "metadata": {"name": "kubernetes", "namespace": "default"},
                       "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443}]}}],
         "servicemonitors": [{"kind": "ServiceMonitor", "apiVersion": "monitoring.coreos.com/v1",
                              "metadata": {"name": "gpunode", "namespace": "gpunode"},
                              "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": "gpunode"}},
                                       "endpoints": [{"port": "metrics", "interval": "15s"}]}}]}
    for i in range(gpu_nodes):
        name = "gpu-%04d" % i
        d["nodes"].append(node(name, now))
        d["csinodes"].append({"kind": "CSINode", "apiVersion": "storage.k8s.io/v1", "metadata": {"name": name},
                              "spec": {"drivers": [{"name": "csi.example.com", "nodeID": name, "topologyKeys": None}]}})
        d["pods"].append(pod("gpunode", "gpunode-%s" % name[4:], name, now, {"app.kubernetes.io/name": "gpunode",
                                                                            "controller-revision-hash": "7d9f"},
                             ip=agent_ip, ports=[{"name": "metrics", "containerPort": agent_port, "protocol": "TCP"}]))
        d["pods"].append(pod("monitoring", "node-exporter-%s" % name[4:], name, now,
                             {"app.kubernetes.io/name": "prometheus-node-exporter"}))
        d["pods"].append(pod("gpu-operator", "nvidia-device-plugin-daemonset-%s" % name[4:], name, now,
                             {"app": "nvidia-device-plugin-daemonset"}))
        d["pods"].append(pod("nvidia-network-operator", "rdma-shared-dp-ds-%s" % name[4:], name, now, {"app": "rdma-shared-dp"}))
        for k in range(pods_per_node):
            d["pods"].append(pod("ml", "train-%s-%d" % (name[4:], k), name, now, {"app": "train"}, gpus=4,
                                 runtime_class="nvidia"))
        d["events"].append(event("ml", "train-%s-0.1" % name[4:], "train-%s-0" % name[4:], "Scheduled",
                                 "Successfully assigned ml/train-%s-0 to %s" % (name[4:], name), now))
        d["events"].append(event("ml", "train-%s-0.2" % name[4:], "train-%s-0" % name[4:], "Pulled",
                                 "Container image already present on machine", now))
    for i in range(cpu_nodes):
        d["nodes"].append(node("cpu-%04d" % i, now, gpu=False))
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("--gpu-nodes", type=int, required=True)
    ap.add_argument("--cpu-nodes", type=int)
    ap.add_argument("--pods-per-node", type=int, default=2)
    ap.add_argument("--agent-ip", default="10.1.0.1")
    ap.add_argument("--agent-port", type=int, default=9400)
    ap.add_argument("--out", default="-")
    a = ap.parse_args()
    d = make(a.gpu_nodes, a.cpu_nodes, a.pods_per_node, agent_ip=a.agent_ip, agent_port=a.agent_port)
    text = json.dumps(d)
    if a.out == "-":
        print(text)
    else:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
