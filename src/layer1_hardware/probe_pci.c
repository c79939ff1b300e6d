/* probe_pci.c: NVIDIA PCI functions (GPUs, NVSwitches) and the driver each is bound to. */
#include "facts/node.h"
#include "basic/hostfs.h"

#define PCI_DEVICES   "/sys/bus/pci/devices"
#define NVIDIA_VENDOR 0x10de

char *read_error(const char *path, int rc) {
        switch (rc) {
        case -ENOENT: return xasprintf("%s: does not exist", path);
        case -EACCES:
        case -EPERM: return xasprintf("%s: permission denied (run as root)", path);
        case -ELOOP: return xasprintf("%s: symlink loop", path);
        case -EFBIG: return xasprintf("%s: too large to be what gpunode expects", path);
        case -EINVAL: return xasprintf("%s: unexpected content or not a regular file", path);
        default: return xasprintf("%s: %s", path, strerror(-rc));
        }
}

/* Returns 0 and the number in one sysfs attribute of a function, or -errno. */
static int read_attr(const char *addr, const char *attr, uint64_t *ret) {
        _cleanup_free_ char *p = xasprintf(PCI_DEVICES "/%s/%s", addr, attr);
        return hostfs_read_u64(p, ret);
}

/* Appends a copy of fn to the array (which grows). */
static void add_function(struct pci_function **v, size_t *n, const struct pci_function *fn) {
        *v = xrealloc(*v, (*n + 1) * sizeof **v);
        (*v)[(*n)++] = *fn;
}

/* Records a PCI function that could not be read (takes msg). */
static void note_unreadable(struct pci_facts *f, char *msg) {
        f->unreadable = xrealloc(f->unreadable, (f->n_unreadable + 1) * sizeof *f->unreadable);
        f->unreadable[f->n_unreadable++] = msg;
}

void probe_pci(struct pci_facts *ret) {
        *ret = (struct pci_facts){ 0 };
        _cleanup_strv_free_ char **names = NULL;
        int n = hostfs_list(PCI_DEVICES, false, &names);
        if (n < 0) {
                ret->rc = n;
                ret->error = read_error(PCI_DEVICES, n);
                return;
        }
        for (int i = 0; i < n; i++) {
                const char *addr = names[i];
                uint64_t vendor, device = 0, cls = 0, sv = 0, sd = 0, numa;
                int r = read_attr(addr, "vendor", &vendor);
                if (r < 0) {
                        _cleanup_free_ char *p = xasprintf(PCI_DEVICES "/%s/vendor", addr);
                        note_unreadable(ret, read_error(p, r));
                        continue;
                }
                if (vendor != NVIDIA_VENDOR) continue;
                r = read_attr(addr, "class", &cls);
                if (r < 0) {
                        _cleanup_free_ char *p = xasprintf(PCI_DEVICES "/%s/class", addr);
                        note_unreadable(ret, read_error(p, r));
                        continue;
                }
                (void)read_attr(addr, "device", &device);
                (void)read_attr(addr, "subsystem_vendor", &sv);
                (void)read_attr(addr, "subsystem_device", &sd);
                struct pci_function fn = {
                        .vendor = (uint32_t)vendor,
                        .device = (uint32_t)device,
                        .class_code = (uint32_t)cls,
                        .subsystem_vendor = (uint32_t)sv,
                        .subsystem_device = (uint32_t)sd,
                        .numa_node = read_attr(addr, "numa_node", &numa) == 0 && numa < 4096 ? (int)numa : -1,
                };
                snprintf(fn.address, sizeof fn.address, "%s", addr);
                unsigned base = (unsigned)(cls >> 8);
                bool gpu = base == 0x0300 || base == 0x0302;
                bool nvswitch = base == 0x0680;
                if (!gpu && !nvswitch) continue;
                _cleanup_free_ char *link = xasprintf(PCI_DEVICES "/%s/driver", addr);
                char *drv = NULL;
                if (hostfs_readlink_basename(link, &drv) == 0) fn.driver = drv;
                if (gpu)
                        add_function(&ret->gpus, &ret->n_gpus, &fn);
                else
                        add_function(&ret->nvswitches, &ret->n_nvswitches, &fn);
        }
}

void pci_facts_free(struct pci_facts *f) {
        for (size_t i = 0; i < f->n_gpus; i++) free(f->gpus[i].driver);
        for (size_t i = 0; i < f->n_nvswitches; i++) free(f->nvswitches[i].driver);
        for (size_t i = 0; i < f->n_unreadable; i++) free(f->unreadable[i]);
        free(f->unreadable);
        free(f->gpus);
        free(f->nvswitches);
        free(f->error);
        *f = (struct pci_facts){ 0 };
}
