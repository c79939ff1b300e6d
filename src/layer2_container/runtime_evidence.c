/* runtime_evidence.c: helpers shared by the layer 2 checks. */
#include "layer2_container/runtime_evidence.h"
#include "facts/layer2_container.h"

bool runtime_skip_if_absent(const struct node_facts *facts, struct finding *f) {
        const struct runtime_facts *r = facts->runtime;
        if (r && (r->containerd.present || r->crio.present || r->docker.present)) return false;
        finding_skip(f,
                     "no container runtime on this host: no containerd, CRI-O or Docker (config, binary or process)");
        return true;
}

bool mount_fail_if_read_only(const struct host_mount *m, const char *who, struct finding *f) {
        if (!m->mount_point) {
                finding_evidence(f, "%s: no mount in %s holds it", m->path, HOST_MOUNTINFO_PATH);
                return false;
        }
        bool ro = m->read_only || m->sb_read_only;
        finding_evidence(f, "%s: on %s (%s %s, %s line %u)%s", m->path, m->mount_point, m->fstype, m->source,
                         HOST_MOUNTINFO_PATH, m->line,
                         m->read_only      ? ", mounted read-only"
                         : m->sb_read_only ? ", its filesystem is read-only"
                                           : "");
        if (!ro) return false;
        bool root = streq(m->mount_point, "/");
        finding_fail(f, "%s cannot write %s: %s is read-only%s", who, m->path,
                     root ? "the root filesystem" : m->mount_point,
                     m->sb_read_only && !m->read_only ? " (the kernel remounted it after an error)" : "");
        finding_remedy(
                f,
                m->sb_read_only && !m->read_only
                        ? "the filesystem on %s hit an error and went read-only: read the kernel log (EXT4-fs / "
                          "XFS errors, I/O errors on %s), drain the node, fsck or replace the disk, reboot"
                        : "%s is mounted read-only (on %s): remount it read-write (`mount -o remount,rw`) or fix "
                          "/etc/fstab, then restart the runtime and the kubelet",
                m->mount_point, m->source);
        return true;
}
