/* check_gpu_processes.c: layer 1, gpu: processes holding GPU memory that no running container holds,
 * and memory in use with no process. */
#include "layer1_hardware/gpu_health.h"
#include "layer1_hardware/nvml_evidence.h"

/* Memory in use with no process above this is a leak: a CUDA context alone holds a few hundred MiB,
 * and drivers answering the v1 memory call count about as much reserved memory as used. */
#define IDLE_USED_LIMIT (1024ULL * 1024 * 1024)

/* Writes "pid 4242 (python3), 1024 MiB" for p into buf. Returns buf. */
static char *process_text(const struct nvml_process_facts *p, const struct gpu_process_host *host, char *buf,
                          size_t size) {
        char mem[32];
        if (p->used_memory == UINT64_MAX)
                snprintf(mem, sizeof mem, "memory unknown");
        else
                snprintf(mem, sizeof mem, "%llu MiB", (unsigned long long)(p->used_memory >> 20));
        snprintf(buf, size, "pid %u (%s), %s", p->pid, host && host->comm ? host->comm : "?", mem);
        return buf;
}

/* Judges gpu.processes (every process holding GPU memory belongs to a container that holds the GPU;
 * no memory is in use without a process) from the facts into f; never fails: what it cannot read, it says. */
static void run_processes(const struct node_facts *facts, struct finding *f) {
        const struct nvml_facts *n = nvml_initialised(facts);
        if (!n) {
                finding_skip(f, "NVML did not initialise");
                return;
        }
        const struct gpu_process_facts *hp = &facts->gpu_processes;
        bool kube = facts->gpu_pods.rc == 0;
        unsigned known = 0, procs = 0, orphans = 0, leaks = 0, unlisted = 0, unjudged_idle = 0;
        /* Only in the host's PID namespace does a pid NVML names mean the host's process: elsewhere (0), or when
         * gpunode cannot tell (-1), a missing /proc/<pid> or an empty process list proves nothing. */
        bool host_view = hp->pid_namespace == 1;
        if (hp->pid_namespace == 0)
                finding_evidence(
                        f, "gpunode runs in its own PID namespace: NVML lists only the processes in it (run it with "
                           "hostPID to see every GPU process)");

        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                const struct nvml_health_facts *h = &g->health;
                _cleanup_free_ char *label = nvml_gpu_label(g);
                if (h->processes_rc != NVML_SUCCESS && h->processes_rc != NVML_ERROR_INSUFFICIENT_SIZE) {
                        gpu_fact_error_evidence(f, label, "processes", h->processes_rc);
                        continue;
                }
                known++;
                procs += h->n_processes;
                const struct gpu_pods *pods = kube ? gpu_pods_of(facts, g) : NULL;
                const struct gpu_holder *holders = pods ? pods->holders : NULL;
                size_t n_holders = pods ? pods->n_holders : 0;
                if (h->processes_rc == NVML_ERROR_INSUFFICIENT_SIZE || h->n_processes > NVML_MAX_PROCESSES) {
                        unlisted++;
                        finding_evidence(f, "%s: %u processes, more than the %u gpunode lists: not all judged", label,
                                         h->n_processes, NVML_MAX_PROCESSES);
                }
                for (unsigned k = 0; h->processes_rc == NVML_SUCCESS && k < h->n_processes && k < NVML_MAX_PROCESSES;
                     k++) {
                        const struct nvml_process_facts *p = &h->processes[k];
                        const struct gpu_process_host *host = gpu_process_find(hp, p->pid);
                        char text[128];
                        process_text(p, host, text, sizeof text);
                        if (!host_view) {
                                finding_evidence(f, "%s: %s", label, text);
                        } else if (host && !host->alive) {
                                orphans++;
                                finding_evidence(
                                        f,
                                        "%s: %s: no such process on the host: its memory was never freed (a leftover "
                                        "of a dead process)",
                                        label, text);
                        } else if (kube && n_holders == 0 && host && host->pod_uid) {
                                orphans++;
                                finding_evidence(f,
                                                 "%s: %s runs in pod %s (container %.12s) but no container holds the "
                                                 "GPU through "
                                                 "the device plugin: a leftover of a dead pod, or a pod that bypasses "
                                                 "the plugin",
                                                 label, text, host->pod_uid,
                                                 host->container_id ? host->container_id : "?");
                        } else if (kube && n_holders == 0) {
                                orphans++;
                                finding_evidence(
                                        f,
                                        "%s: %s runs outside Kubernetes on a GPU no container holds: the scheduler "
                                        "counts this GPU as free",
                                        label, text);
                        } else if (n_holders > 0) {
                                finding_evidence(f, "%s: %s%s%s; the GPU is held by %s/%s", label, text,
                                                 host && host->pod_uid ? " in pod " : "",
                                                 host && host->pod_uid ? host->pod_uid : "", holders[0].namespace,
                                                 holders[0].pod);
                        } else {
                                finding_evidence(f, "%s: %s", label, text);
                        }
                }
                bool no_graphics = h->graphics_processes.rc != NVML_SUCCESS || h->graphics_processes.value == 0;
                bool mig = g->mig_rc == NVML_SUCCESS && g->mig_current == NVML_DEVICE_MIG_ENABLE;
                bool idle_used = h->processes_rc == NVML_SUCCESS && h->n_processes == 0 && no_graphics && !mig &&
                                 g->memory_rc == NVML_SUCCESS && g->memory_used > IDLE_USED_LIMIT;
                if (idle_used && !host_view) unjudged_idle++;
                if (idle_used && host_view) {
                        leaks++;
                        finding_evidence(f, "%s: %llu MiB of memory in use with no process on the GPU", label,
                                         (unsigned long long)(g->memory_used >> 20));
                }
        }
        if (hp->pid_namespace < 0 && (procs > 0 || unjudged_idle > 0))
                finding_evidence(
                        f, "cannot tell whether gpunode shares the host's PID namespace (/proc/self under the root "
                           "unreadable): processes are listed, not judged");
        if (known == 0) {
                finding_skip(f, "NVML does not list GPU processes here");
        } else if (orphans || leaks) {
                if (orphans && leaks)
                        finding_warn(f,
                                     "GPU memory held outside a running container: %u process(es) no container "
                                     "accounts for, %u "
                                     "GPU(s) with memory in use and no process",
                                     orphans, leaks);
                else if (orphans)
                        finding_warn(
                                f,
                                "GPU memory held outside a running container: %u process(es) no container accounts for",
                                orphans);
                else
                        finding_warn(f, "%u GPU(s) with memory in use and no process", leaks);
                finding_remedy(f, "kill a leftover process (`kill <pid>`, or the pod's containers with `crictl rm`); "
                                  "memory held with "
                                  "no process, or a process that is gone, is freed only by a GPU reset (`nvidia-smi -r "
                                  "-i <index>`) "
                                  "or a reboot");
        } else if (!host_view && (procs > 0 || unjudged_idle > 0)) {
                finding_skip(
                        f,
                        "%u process(es) on %u GPU(s), not judged: gpunode does not see the host's processes (its PID "
                        "namespace is %s)",
                        procs, known, hp->pid_namespace == 0 ? "its own" : "unknown");
        } else if (unlisted) {
                finding_warn(f, "cannot tell for %u GPU(s): more processes than gpunode lists", unlisted);
                finding_remedy(f, "list them with `nvidia-smi --query-compute-apps=pid,used_memory --format=csv`");
        } else if (procs == 0) {
                finding_pass(f, "no process holds memory on %u GPU(s)", known);
        } else {
                finding_pass(f, "%u process(es) on %u GPU(s), none outside a container that holds its GPU", procs,
                             known);
        }
}

const struct check_def check_gpu_processes = {
        .id = "gpu.processes",
        .layer = 1,
        .component = "gpu",
        .title = "every process holding GPU memory belongs to a container that holds the GPU",
        .reads = "nvmlDeviceGetComputeRunningProcesses and GetGraphicsRunningProcesses, memory used, the host's "
                 "/proc/<pid> "
                 "(comm, cgroup: pod UID and container id) and the kubelet's pod-resources List",
        .outcomes =
                "pass: no process, or each on a GPU a container holds; warn: a process that no longer exists, one in a "
                "pod "
                "on a GPU no container holds (a leftover of a dead pod, or a pod bypassing the device plugin), a host "
                "process on a Kubernetes node's GPU, or more than 1 GiB in use with no process. Not judged when "
                "gpunode does "
                "not share the host's PID namespace",
        .remedy = "kill the leftover process; memory held with no process is freed by a GPU reset or a reboot",
        .depends = { "driver.nvml-init" },
        .run = run_processes,
};
