/* check_sriov.c: layer 1, sriov: virtual functions on the NICs that offer SR-IOV. */
#include "engine/check.h"
#include "facts/node.h"

/* Judges sriov.vfs (SR-IOV virtual functions are enabled and bound where configured) from the facts
 * into f; never fails: what it cannot read, it says. */
static void run_sriov_vfs(const struct node_facts *facts, struct finding *f) {
        const struct sriov_facts *s = &facts->sriov;
        if (s->rc < 0) {
                finding_skip(f, "cannot list network interfaces: %s", s->error);
                return;
        }
        if (s->n_nics == 0) {
                finding_skip(f, "no NIC offers SR-IOV");
                return;
        }
        size_t enabled = 0, unbound = 0;
        for (size_t i = 0; i < s->n_nics; i++) {
                const struct sriov_nic *n = &s->nics[i];
                finding_evidence(f, "%s (%s): %llu of %llu VFs enabled%s", n->interface,
                                 n->pci_address ? n->pci_address : "?", (unsigned long long)n->num_vfs,
                                 (unsigned long long)n->total_vfs,
                                 n->vfs_without_driver ? ", some without a driver" : "");
                if (n->num_vfs) enabled++;
                unbound += n->vfs_without_driver;
        }
        if (enabled == 0) {
                finding_skip(f, "%zu NIC(s) offer SR-IOV, none has VFs enabled (not configured)", s->n_nics);
        } else if (unbound) {
                finding_warn(f, "%zu virtual function(s) have no driver bound", unbound);
                finding_remedy(
                        f, "bind them (mlx5_core or vfio-pci as the SR-IOV device plugin expects); check the SR-IOV "
                           "network operator's config daemon log");
        } else {
                finding_pass(f, "SR-IOV enabled on %zu NIC(s), every VF bound", enabled);
        }
}

const struct check_def check_sriov_vfs = {
        .id = "sriov.vfs",
        .action = ACTION_RECONFIGURE,
        .layer = 1,
        .component = "sriov",
        .title = "SR-IOV virtual functions are enabled and bound where configured",
        .reads = "/sys/class/net/*/device/{sriov_totalvfs,sriov_numvfs,virtfn*/driver}",
        .outcomes = "pass: VFs enabled and bound; warn: VFs without a driver; skip: no SR-IOV NIC or none configured",
        .remedy = "bind the VFs to the driver the SR-IOV device plugin expects; check the SR-IOV operator's config "
                  "daemon",
        .run = run_sriov_vfs,
};
