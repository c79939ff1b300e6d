/* check_driver_processes.c: layer 1, driver: the driver's kernel threads and the GPU processes stuck in
 * uninterruptible sleep (D state). */
#include "layer1_hardware/gpu_health.h"
#include "layer1_hardware/nvml_evidence.h"

/* Judges driver.stuck-processes (no nvidia kernel thread, driver tool or GPU process is in D state)
 * from the facts into f; never fails: what it cannot read, it says. */
static void run_stuck_processes(const struct node_facts *facts, struct finding *f) {
        const struct process_facts *p = &facts->processes;
        const struct gpu_process_facts *g = &facts->gpu_processes;
        size_t stuck = p->n_stuck + p->stuck_untracked, gpu = 0;
        for (size_t i = 0; i < p->n_stuck; i++)
                finding_evidence(f, "pid %u (%s): D state%s%s", p->stuck[i].pid, p->stuck[i].comm,
                                 p->stuck[i].wchan ? ", waiting in " : "", p->stuck[i].wchan ? p->stuck[i].wchan : "");
        if (p->stuck_untracked)
                finding_evidence(f, "%zu more of the driver's processes in D state", p->stuck_untracked);
        for (size_t i = 0; i < g->n; i++) {
                const struct gpu_process_host *h = &g->procs[i];
                if (h->state != 'D') continue;
                bool listed = false; /* a driver tool on a GPU is already named above */
                for (size_t k = 0; k < p->n_stuck && !listed; k++) listed = p->stuck[k].pid == h->pid;
                if (listed) continue;
                gpu++;
                finding_evidence(f, "pid %u (%s), on a GPU (NVML): D state%s%s", h->pid, h->comm ? h->comm : "?",
                                 h->wchan ? ", waiting in " : "", h->wchan ? h->wchan : "");
        }
        if (stuck + gpu == 0) {
                finding_pass(f, "no nvidia kernel thread or GPU process in D state");
                return;
        }
        finding_warn(f, "%zu of the driver's process(es) and %zu GPU process(es) stuck in D state (uninterruptible)",
                     stuck, gpu);
        finding_remedy(f, "a process in D state cannot be killed: it waits in the driver (wchan above) for a GPU "
                          "that stopped answering. Look for Xid and 'blocked for more than' lines in the kernel log; "
                          "if it stays, drain the node: only a GPU reset or a reboot frees it");
}

const struct check_def check_driver_stuck_processes = {
        .id = "driver.stuck-processes",
        .action = ACTION_REBOOT,
        .layer = 1,
        .component = "driver",
        .title = "no driver thread or GPU process is stuck in D state",
        .reads = "/proc/<pid>/stat and wchan of the driver's processes (nv_*, nvidia*, UVM *, irq/N-nvidia) and of "
                 "the processes NVML lists on GPUs",
        .outcomes = "pass: none in D state; warn: some in uninterruptible sleep, each named with the kernel function "
                    "it waits in",
        .remedy = "read the kernel log for Xids and hung-task lines; drain the node, then reset the GPU or reboot",
        .run = run_stuck_processes,
};
