/* probe_sriov.c: SR-IOV capable NICs, their enabled virtual functions and VF driver binding. */
#include "facts/node.h"
#include "basic/hostfs.h"

#define NET_CLASS "/sys/class/net"

void probe_sriov(struct sriov_facts *ret) {
        *ret = (struct sriov_facts){ 0 };
        _cleanup_strv_free_ char **ifs = NULL;
        int n = hostfs_list(NET_CLASS, false, &ifs);
        if (n < 0) {
                ret->rc = n;
                ret->error = read_error(NET_CLASS, n);
                return;
        }
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *dev = xasprintf(NET_CLASS "/%s/device", ifs[i]);
                _cleanup_free_ char *total_p = xasprintf("%s/sriov_totalvfs", dev);
                _cleanup_free_ char *num_p = xasprintf("%s/sriov_numvfs", dev);
                uint64_t total = 0, num = 0;
                if (hostfs_read_u64(total_p, &total) < 0 || total == 0) continue;
                (void)hostfs_read_u64(num_p, &num);
                struct sriov_nic nic = { .interface = xstrdup(ifs[i]), .total_vfs = total, .num_vfs = num };
                (void)hostfs_readlink_basename(dev, &nic.pci_address);
                for (uint64_t vf = 0; vf < num && vf < 1024; vf++) {
                        _cleanup_free_ char *drv = xasprintf("%s/virtfn%llu/driver", dev, (unsigned long long)vf);
                        _cleanup_free_ char *name = NULL;
                        if (hostfs_readlink_basename(drv, &name) < 0) nic.vfs_without_driver++;
                }
                ret->nics = xrealloc(ret->nics, (ret->n_nics + 1) * sizeof *ret->nics);
                ret->nics[ret->n_nics++] = nic;
        }
}

void sriov_facts_free(struct sriov_facts *f) {
        for (size_t i = 0; i < f->n_nics; i++) {
                free(f->nics[i].interface);
                free(f->nics[i].pci_address);
        }
        free(f->nics);
        free(f->error);
        *f = (struct sriov_facts){ 0 };
}
