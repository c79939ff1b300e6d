/* probe_gpu_processes.c: the host's view (/proc/<pid>: comm, cgroup) of the processes NVML lists on GPUs. */
#include "facts/node.h"
#include "basic/hostfs.h"
#include "layer1_hardware/cgroup.h"
#include "nvml/nvml_facts.h"

/* The most distinct processes recorded (NVML_MAX_PROCESSES per GPU, many GPUs). */
#define MAX_GPU_PROCESSES 1024

const struct gpu_process_host *gpu_process_find(const struct gpu_process_facts *f, unsigned pid) {
        for (size_t i = 0; f && i < f->n; i++)
                if (f->procs[i].pid == pid) return &f->procs[i];
        return NULL;
}

/* Fills p for pid from the host's /proc. Returns nothing; what it cannot read stays NULL. */
static void read_process(unsigned pid, struct gpu_process_host *p) {
        *p = (struct gpu_process_host){ .pid = pid };
        _cleanup_free_ char *dir = xasprintf("/proc/%u", pid);
        p->alive = hostfs_exists(dir);
        if (!p->alive) return;
        _cleanup_free_ char *comm_path = xasprintf("/proc/%u/comm", pid);
        if (hostfs_read_line(comm_path, &p->comm) < 0) p->comm = NULL;
        _cleanup_free_ char *stat_path = xasprintf("/proc/%u/stat", pid);
        _cleanup_free_ char *stat = NULL;
        size_t stat_len = 0;
        char comm[PROC_COMM_MAX];
        int st = hostfs_read(stat_path, 4096, &stat, &stat_len) == 0 ? proc_stat_state(stat, stat_len, comm) : -1;
        p->state = st > 0 ? (char)st : 0;
        if (p->state == 'D') p->wchan = probe_wchan(pid);
        _cleanup_free_ char *cg_path = xasprintf("/proc/%u/cgroup", pid);
        _cleanup_free_ char *cg = NULL;
        size_t len = 0;
        if (hostfs_read(cg_path, 64 * 1024, &cg, &len) == 0 &&
            cgroup_pod_container(cg, len, &p->pod_uid, &p->container_id) < 0)
                p->pod_uid = p->container_id = NULL;
}

void probe_gpu_processes(const struct nvml_state *nvml, struct gpu_process_facts *ret) {
        *ret = (struct gpu_process_facts){ .pid_namespace = -1 };
        const struct nvml_facts *n = nvml->facts;
        if (!n) return;
        /* probe_nvml found it out (a snapshot recorded it) */
        ret->pid_namespace = n->caller_pid_namespace;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_health_facts *h = &n->gpus[i].health;
                if (h->processes_rc != NVML_SUCCESS) continue;
                for (unsigned k = 0; k < h->n_processes && k < NVML_MAX_PROCESSES; k++) {
                        unsigned pid = h->processes[k].pid;
                        if (pid == 0 || gpu_process_find(ret, pid) || ret->n >= MAX_GPU_PROCESSES) continue;
                        ret->procs = xrealloc(ret->procs, (ret->n + 1) * sizeof *ret->procs);
                        read_process(pid, &ret->procs[ret->n++]);
                }
        }
}

void gpu_process_facts_free(struct gpu_process_facts *f) {
        for (size_t i = 0; i < f->n; i++) {
                free(f->procs[i].comm);
                free(f->procs[i].pod_uid);
                free(f->procs[i].container_id);
                free(f->procs[i].wchan);
        }
        free(f->procs);
        *f = (struct gpu_process_facts){ .pid_namespace = -1 };
}
