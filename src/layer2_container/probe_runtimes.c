/* probe_runtimes.c: layer 2's entry point: every container runtime probe into one runtime_facts. */
#include <ctype.h>

#include "facts/node.h"
#include "layer2_container/runtime_common.h"
#include "basic/hostfs.h"

/* ---- all of layer 2 ---- */

struct runtime_facts *probe_runtime(const struct dpkg_status *dpkg) {
        struct runtime_facts *f = xcalloc(1, sizeof *f);
        probe_containerd(dpkg, &f->containerd);
        probe_crio(&f->crio);
        probe_docker(&f->docker);
        probe_toolkit(&f->toolkit);
        probe_cdi(&f->cdi);
        probe_mounts(&f->mounts);
        _cleanup_strv_free_ char **procs = NULL;
        int np = hostfs_list("/proc", false, &procs);
        for (int i = 0; i < np && !f->proc_visible; i++) f->proc_visible = isdigit((unsigned char)procs[i][0]);
        _cleanup_strv_free_ char **names = NULL;
        int n = hostfs_list("/dev/infiniband", false, &names);
        f->infiniband_rc = n < 0 ? n : 0;
        for (int i = 0; i < n; i++) {
                if (startswith(names[i], "uverbs")) f->n_uverbs++;
                if (streq(names[i], "rdma_cm")) f->have_rdma_cm = true;
        }
        return f;
}

void runtime_facts_free(struct runtime_facts *f) {
        if (!f) return;
        containerd_facts_free(&f->containerd);
        crio_facts_free(&f->crio);
        docker_facts_free(&f->docker);
        toolkit_facts_free(&f->toolkit);
        cdi_facts_free(&f->cdi);
        host_mounts_free(&f->mounts);
        free(f);
}
