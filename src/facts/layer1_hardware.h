/* layer1_hardware.h: layer 1 facts: the PCI bus, kernel modules, the driver's /proc files, Secure
 * Boot, the kernel log, NVML, RDMA, SR-IOV and the driver's daemons; the probes that read them. */
#pragma once

#include "basic/util.h"

struct nvml_facts;
struct kmsg_scan;

/* A probe that could not read records why in `error` (a sentence naming the path) and a
 * negative errno in `rc`; checks then say they cannot answer instead of guessing. */

struct pci_function {
        char address[32];      /* "0000:18:00.0" */
        uint32_t vendor, device, class_code, subsystem_vendor, subsystem_device;
        char *driver;          /* bound driver name, NULL when none */
        int numa_node;         /* -1 when unknown */
};

enum pci_kind { PCI_GPU, PCI_NVSWITCH, PCI_OTHER_NVIDIA };

struct pci_facts {
        int rc;
        char *error;
        struct pci_function *gpus;     /* NVIDIA display/3D controllers */
        size_t n_gpus;
        struct pci_function *nvswitches;
        size_t n_nvswitches;
        size_t n_unreadable;           /* functions whose files could not be read */
        char **unreadable;             /* "0000:18:00.0: vendor: Permission denied" */
};

struct module_facts {
        int rc;
        char *error;
        char **loaded;                 /* names from /proc/modules */
        size_t n_loaded;
};

struct driver_gpu_info {
        char address[32];              /* from /proc/driver/nvidia/gpus/<addr> */
        int minor;                     /* Device Minor, -1 unknown */
        char *model, *uuid;
        bool dev_node;                 /* /dev/nvidia<minor> exists (false when the minor is unknown) */
};

/* The driver's device nodes that every GPU container needs. */
enum { DRIVER_NODE_CTL, DRIVER_NODE_UVM, DRIVER_NODE_UVM_TOOLS, _DRIVER_NODE_MAX };
extern const char *const driver_common_nodes[_DRIVER_NODE_MAX]; /* "/dev/nvidiactl", ... */

struct driver_facts {
        int version_rc;
        char *version_error;
        char *version_line;            /* first line of /proc/driver/nvidia/version */
        char *version;                 /* "550.54.15" */
        bool open_module;              /* "Open Kernel Module" */
        struct driver_gpu_info *gpus;
        size_t n_gpus;
        char *taint;                   /* /sys/module/nvidia/taint */
        bool common_node[_DRIVER_NODE_MAX]; /* driver_common_nodes[i] exists */
};

struct secureboot_facts {
        int efi_rc;                    /* -ENOENT: not an EFI system / efivars not mounted */
        int secure_boot;               /* 1 on, 0 off, -1 unknown */
        char *lockdown;                /* "none", "integrity", "confidentiality", NULL unknown */
        char *kernel_release;          /* from /proc/sys/kernel/osrelease */
        int headers_rc;                /* 0 when /lib/modules/<release>/build exists */
};

struct ib_port {
        char *device;                  /* "mlx5_0" */
        unsigned port;
        int state;                     /* 4 ACTIVE; -1 unreadable */
        char *state_text;
        int phys_state;                /* 5 LinkUp */
        char *phys_state_text;
        char *rate, *link_layer;
        uint64_t link_downed;          /* counters/link_downed, UINT64_MAX unknown */
};

struct ib_device {
        char *name, *hca_type, *fw_ver, *board_id;
};

struct rdma_facts {
        int rc;                        /* -ENOENT: no /sys/class/infiniband */
        char *error;
        struct ib_device *devices;
        size_t n_devices;
        struct ib_port *ports;
        size_t n_ports;
        bool have_uverbs, have_rdma_cm;
};

struct sriov_nic {
        char *interface;               /* "ens1f0" */
        char *pci_address;
        uint64_t total_vfs, num_vfs;
        size_t vfs_without_driver;
};

struct sriov_facts {
        int rc;
        char *error;
        struct sriov_nic *nics;        /* only NICs that offer SR-IOV (total_vfs > 0) */
        size_t n_nics;
};

enum kmsg_source_kind { KMSG_NONE, KMSG_DEVICE, KMSG_FILE };

struct kmsg_facts {
        int rc;
        char *error;
        char *source;                  /* path read */
        struct kmsg_scan *scan;        /* NULL when unreadable */
};

struct nvml_state {
        int load_rc;                   /* 0 loaded, -errno when dlopen failed */
        char *load_error;
        char *library;                 /* path or soname asked for */
        struct nvml_facts *facts;      /* NULL when not loaded */
};

struct process_facts {
        bool fabricmanager_running;    /* nv-fabricmanager in /proc */
        bool persistenced_running;     /* nvidia-persistenced in /proc */
};

/* A process NVML lists on a GPU (compute processes), as the host's /proc shows it. */
struct gpu_process_host {
        unsigned pid;
        bool alive;                    /* /proc/<pid> exists on the host */
        char *comm;                    /* /proc/<pid>/comm; NULL unreadable */
        char *pod_uid;                 /* the kubelet pod cgroup's UID (/proc/<pid>/cgroup); NULL: not in a pod */
        char *container_id;            /* the container's id in that cgroup; NULL unknown */
};

struct gpu_process_facts {
        /* 1: gpunode shares the host's PID namespace (NVML lists every process), 0: it does not (NVML
         * hides the processes of other namespaces), -1: cannot tell (/proc/self under the root) */
        int pid_namespace;
        struct gpu_process_host *procs; /* one per distinct pid NVML listed, in the order first seen */
        size_t n;
};

/* Individual probes (one file each). */
void probe_pci(struct pci_facts *ret);
void probe_modules(struct module_facts *ret);
void probe_driver(struct driver_facts *ret);
void probe_secureboot(struct secureboot_facts *ret);
void probe_kmsg(const char *file, struct kmsg_facts *ret);
void probe_nvml(const char *library, unsigned timeout_ms, struct nvml_state *ret);
/* probe_nvml asking only what scope names (an enum nvml_probe_scope: NVML_PROBE_ALL, NVML_PROBE_LABELS). */
void probe_nvml_scope(const char *library, unsigned timeout_ms, int scope, struct nvml_state *ret);
/* Fills ret from recorded facts (copied; NULL: load_rc/load_error) as if NVML had answered. */
void probe_nvml_replay(const char *library, const struct nvml_facts *facts, int load_rc, const char *load_error,
                       struct nvml_state *ret);
void probe_rdma(struct rdma_facts *ret);
void probe_sriov(struct sriov_facts *ret);
void probe_processes(struct process_facts *ret);
/* Reads /proc/<pid> of every process NVML listed on a GPU (nvml may hold no facts). */
void probe_gpu_processes(const struct nvml_state *nvml, struct gpu_process_facts *ret);
void gpu_process_facts_free(struct gpu_process_facts *f);
/* Returns the host's view of pid, or NULL when the probe did not record it. */
const struct gpu_process_host *gpu_process_find(const struct gpu_process_facts *f, unsigned pid);
char *probe_hostname(void);

void pci_facts_free(struct pci_facts *f);
void module_facts_free(struct module_facts *f);
void driver_facts_free(struct driver_facts *f);
void secureboot_facts_free(struct secureboot_facts *f);
void kmsg_facts_free(struct kmsg_facts *f);
void nvml_state_free(struct nvml_state *f);
void rdma_facts_free(struct rdma_facts *f);
void sriov_facts_free(struct sriov_facts *f);

/* Returns true when the module is in /proc/modules. */
bool module_loaded(const struct module_facts *m, const char *name);
/* Returns a sentence for a negative errno from a host read, naming the path. */
char *read_error(const char *path, int rc);
