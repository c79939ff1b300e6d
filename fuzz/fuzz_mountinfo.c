/* fuzz_mountinfo.c: libFuzzer target for the /proc/<pid>/mountinfo parser (layer2_container/mountinfo.c):
 * every entry's strings are terminated, mount points absolute, and a path's mount holds it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "layer2_container/mountinfo.h"

/* Aborts (a finding for the fuzzer) when cond is false. */
static void check(int cond) {
        if (!cond) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct mount_entry *v = NULL;
        size_t n = 0;
        unsigned bad = 0;
        int r = mountinfo_parse((const char *)data, size, &v, &n, &bad);
        if (r < 0) {
                check(v == NULL && n == 0 && bad >= 1);
                return 0;
        }
        check(bad == 0);
        for (size_t i = 0; i < n; i++) {
                check(v[i].mount_point[0] == '/' && v[i].fstype && v[i].source && v[i].line >= 1);
                if (i) check(v[i].line > v[i - 1].line);
        }
        static const char *const paths[] = { "/", "/var/lib/kubelet", "/var/lib/containerd", "/a/b" };
        for (size_t k = 0; k < sizeof paths / sizeof *paths; k++) {
                const struct mount_entry *e = mountinfo_find(v, n, paths[k]);
                if (!e) continue;
                size_t l = strlen(e->mount_point);
                while (l > 1 && e->mount_point[l - 1] == '/') l--;
                check(l == 1 || strncmp(paths[k], e->mount_point, l) == 0);
        }
        mount_entries_free(v, n);
        return 0;
}
