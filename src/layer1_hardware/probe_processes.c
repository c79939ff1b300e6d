/* probe_processes.c: daemons the checks care about, found by name in /proc/<pid>/comm. */
#include "facts/node.h"
#include "basic/hostfs.h"

#include <ctype.h>

void probe_processes(struct process_facts *ret) {
        *ret = (struct process_facts){ 0 };
        _cleanup_strv_free_ char **names = NULL;
        int n = hostfs_list("/proc", false, &names);
        for (int i = 0; i < n; i++) {
                if (!isdigit((unsigned char)names[i][0])) continue;
                _cleanup_free_ char *p = xasprintf("/proc/%s/comm", names[i]);
                _cleanup_free_ char *comm = NULL;
                if (hostfs_read_line(p, &comm) < 0) continue;
                if (streq(comm, "nv-fabricmanager")) ret->fabricmanager_running = true;
                if (streq(comm, "nvidia-persiste") || streq(comm, "nvidia-persistenced"))
                        ret->persistenced_running = true;
        }
}

char *probe_hostname(void) {
        char *name = NULL;
        if (hostfs_read_line("/proc/sys/kernel/hostname", &name) == 0 && *name) return name;
        free(name);
        return xstrdup("unknown");
}
