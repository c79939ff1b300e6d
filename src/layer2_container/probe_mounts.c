/* probe_mounts.c: which mount holds the root, the container runtimes' storage and the kubelet's folder,
 * and whether it is read-only, from the host's /proc/1/mountinfo. */
#include "facts/layer2_container.h"
#include "basic/hostfs.h"
#include "basic/util.h"
#include "facts/layer1_hardware.h"
#include "layer2_container/mountinfo.h"

static const char *const mount_paths[_HOST_MOUNT_MAX] = {
        [HOST_MOUNT_ROOT] = "/",
        [HOST_MOUNT_CONTAINERD] = "/var/lib/containerd",
        [HOST_MOUNT_CRIO] = "/var/lib/containers/storage",
        [HOST_MOUNT_DOCKER] = "/var/lib/docker",
        [HOST_MOUNT_KUBELET] = "/var/lib/kubelet",
};

void probe_mounts(struct host_mounts *ret) {
        *ret = (struct host_mounts){ 0 };
        for (int k = 0; k < _HOST_MOUNT_MAX; k++) {
                ret->m[k].path = mount_paths[k];
                ret->m[k].exists = hostfs_exists(mount_paths[k]);
        }
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = hostfs_read(HOST_MOUNTINFO_PATH, 4u << 20, &text, &len);
        if (r < 0) {
                ret->rc = r;
                ret->error = read_error(HOST_MOUNTINFO_PATH, r);
                return;
        }
        struct mount_entry *v = NULL;
        size_t n = 0;
        unsigned bad = 0;
        if (mountinfo_parse(text, len, &v, &n, &bad) < 0) {
                ret->rc = -EINVAL;
                ret->error = xasprintf("%s line %u: not in the kernel's mountinfo format", HOST_MOUNTINFO_PATH, bad);
                return;
        }
        for (int k = 0; k < _HOST_MOUNT_MAX; k++) {
                const struct mount_entry *e = mountinfo_find(v, n, mount_paths[k]);
                if (!e) continue;
                struct host_mount *m = &ret->m[k];
                m->mount_point = xstrdup(e->mount_point);
                m->fstype = xstrdup(e->fstype);
                m->source = xstrdup(e->source);
                m->read_only = e->read_only;
                m->sb_read_only = e->sb_read_only;
                m->line = e->line;
        }
        mount_entries_free(v, n);
}

void host_mounts_free(struct host_mounts *f) {
        for (int k = 0; k < _HOST_MOUNT_MAX; k++) {
                free(f->m[k].mount_point);
                free(f->m[k].fstype);
                free(f->m[k].source);
        }
        free(f->error);
        *f = (struct host_mounts){ 0 };
}
