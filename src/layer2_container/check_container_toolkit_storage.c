/* check_container_toolkit_storage.c: layer 2, container-toolkit: the runtimes' storage can be written. */
#include "facts/layer2_container.h"
#include "layer2_container/runtime_evidence.h"

/* Judges container-toolkit.runtime-storage (the storage of each installed runtime, /var/lib/containerd,
 * /var/lib/containers/storage, /var/lib/docker, is on a writable mount) from the facts into f; never
 * fails: what it cannot read, it says. */
static void run_storage(const struct node_facts *facts, struct finding *f) {
        if (runtime_skip_if_absent(facts, f)) return;
        const struct runtime_facts *r = facts->runtime;
        const struct host_mounts *hm = &r->mounts;
        if (hm->rc < 0) {
                finding_skip(f, "cannot tell which mounts hold the runtimes' storage: %s", hm->error);
                return;
        }
        static const struct {
                int mount;
                const char *who;
        } runtimes[] = {
                { HOST_MOUNT_CONTAINERD, "containerd" },
                { HOST_MOUNT_CRIO, "CRI-O" },
                { HOST_MOUNT_DOCKER, "Docker" },
        };
        size_t judged = 0;
        for (size_t i = 0; i < ELEMENTSOF(runtimes); i++) {
                bool present = i == 0 ? r->containerd.present : i == 1 ? r->crio.present : r->docker.present;
                if (!present) continue;
                judged++;
                if (mount_fail_if_read_only(&hm->m[runtimes[i].mount], runtimes[i].who, f)) {
                        finding_action(f, ACTION_REBOOT);
                        return; /* the first: one summary */
                }
        }
        finding_pass(f, "the storage of %zu container runtime(s) is on a writable mount", judged);
}

const struct check_def check_container_toolkit_runtime_storage = {
        .id = "container-toolkit.runtime-storage",
        .action = ACTION_RECONFIGURE,
        .layer = 2,
        .component = "container-toolkit",
        .title = "the container runtimes' storage is writable",
        .reads = "/proc/1/mountinfo (the host's mounts): the mount holding /var/lib/containerd, "
                 "/var/lib/containers/storage or /var/lib/docker, for each runtime installed, and its options and "
                 "superblock options",
        .outcomes = "pass: every installed runtime's storage is on a read-write mount; fail: a read-only one (the "
                    "root mounted ro, or a filesystem the kernel remounted read-only after an error): no image can be "
                    "pulled and no container started; skip: no runtime, or mountinfo unreadable",
        .remedy = "remount read-write or fix /etc/fstab; after an I/O or filesystem error: drain, fsck or replace the "
                  "disk, reboot",
        .run = run_storage,
};
