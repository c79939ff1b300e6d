/* probe_processes.c: daemons the checks care about, found by name in /proc/<pid>/comm. */
#include "facts/node.h"
#include "basic/hostfs.h"
#include "layer1_hardware/cgroup.h"

#include <ctype.h>

/* Returns true when comm names a process of the NVIDIA driver's: its kernel threads (nv_queue,
 * nv_open_q, nvidia-modeset/..., "UVM global queue", irq/N-nvidia), its daemons and tools
 * (nvidia-persistenced, nvidia-smi, nv-fabricmanager, nv-hostengine). */
static bool driver_process(const char *comm) {
        if (startswith(comm, "nv_") || startswith(comm, "nv-") || startswith(comm, "nvidia") ||
            startswith(comm, "UVM "))
                return true;
        return startswith(comm, "irq/") && strstr(comm, "nvidia");
}

char *probe_wchan(unsigned pid) {
        _cleanup_free_ char *p = xasprintf("/proc/%u/wchan", pid);
        char *w = NULL;
        if (hostfs_read_line(p, &w) < 0 || !w || !*w || streq(w, "0")) {
                free(w);
                return NULL;
        }
        return w;
}

/* Records pid when /proc/<pid>/stat says it is in D state. */
static void note_state(struct process_facts *ret, const char *pid_text) {
        _cleanup_free_ char *p = xasprintf("/proc/%s/stat", pid_text);
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        char comm[PROC_COMM_MAX];
        if (hostfs_read(p, 4096, &text, &len) < 0 || proc_stat_state(text, len, comm) != 'D') return;
        if (ret->n_stuck >= MAX_STUCK_PROCESSES) {
                ret->stuck_untracked++;
                return;
        }
        uint64_t pid = 0;
        (void)parse_u64(pid_text, 10, &pid);
        ret->stuck = xrealloc(ret->stuck, (ret->n_stuck + 1) * sizeof *ret->stuck);
        struct stuck_process *sp = &ret->stuck[ret->n_stuck++];
        *sp = (struct stuck_process){ .pid = (unsigned)pid };
        snprintf(sp->comm, sizeof sp->comm, "%s", comm);
        sp->wchan = probe_wchan(sp->pid);
}

void probe_processes(struct process_facts *ret) {
        *ret = (struct process_facts){ 0 };
        _cleanup_strv_free_ char **names = NULL;
        int n = hostfs_list("/proc", false, &names);
        for (int i = 0; i < n; i++) {
                if (!isdigit((unsigned char)names[i][0])) continue;
                _cleanup_free_ char *p = xasprintf("/proc/%s/comm", names[i]);
                _cleanup_free_ char *comm = NULL;
                if (hostfs_read_line(p, &comm) < 0) continue;
                ret->proc_visible = true;
                if (streq(comm, "nv-fabricmanager")) ret->fabricmanager_running = true;
                if (streq(comm, "nvidia-persiste") || streq(comm, "nvidia-persistenced"))
                        ret->persistenced_running = true;
                if (driver_process(comm)) note_state(ret, names[i]);
        }
}

void process_facts_free(struct process_facts *f) {
        for (size_t i = 0; i < f->n_stuck; i++) free(f->stuck[i].wchan);
        free(f->stuck);
        *f = (struct process_facts){ 0 };
}

char *probe_hostname(void) {
        char *name = NULL;
        if (hostfs_read_line("/proc/sys/kernel/hostname", &name) == 0 && *name) return name;
        free(name);
        return xstrdup("unknown");
}
