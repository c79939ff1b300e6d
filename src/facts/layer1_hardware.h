/* layer1_hardware.h: layer 1 facts: the PCI bus, kernel modules, the driver's /proc files, Secure
 * Boot, the kernel log, NVML, RDMA, SR-IOV and the driver's daemons; the probes that read them. */
#pragma once

#include "basic/dpkg.h"
#include "basic/util.h"

struct nvml_facts;
struct kmsg_scan;

/* A probe that could not read records why in `error` (a sentence naming the path) and a
 * negative errno in `rc`; checks then say they cannot answer instead of guessing. */

struct pci_function {
        char address[32]; /* "0000:18:00.0" */
        uint32_t vendor, device, class_code, subsystem_vendor, subsystem_device;
        char *driver;  /* bound driver name, NULL when none */
        int numa_node; /* -1 when unknown */
};

enum pci_kind { PCI_GPU, PCI_NVSWITCH, PCI_OTHER_NVIDIA };

struct pci_facts {
        int rc;
        char *error;
        struct pci_function *gpus; /* NVIDIA display/3D controllers */
        size_t n_gpus;
        struct pci_function *nvswitches;
        size_t n_nvswitches;
        size_t n_unreadable; /* functions whose files could not be read */
        char **unreadable;   /* "0000:18:00.0: vendor: Permission denied" */
};

struct module_facts {
        int rc;
        char *error;
        char **loaded; /* names from /proc/modules */
        size_t n_loaded;
};

struct driver_gpu_info {
        char address[32]; /* from /proc/driver/nvidia/gpus/<addr> */
        int minor;        /* Device Minor, -1 unknown */
        char *model, *uuid;
        bool dev_node; /* /dev/nvidia<minor> exists (false when the minor is unknown) */
};

/* The driver's device nodes that every GPU container needs. */
enum { DRIVER_NODE_CTL, DRIVER_NODE_UVM, DRIVER_NODE_UVM_TOOLS, _DRIVER_NODE_MAX };
extern const char *const driver_common_nodes[_DRIVER_NODE_MAX]; /* "/dev/nvidiactl", ... */

struct driver_facts {
        int version_rc;
        char *version_error;
        char *version_line; /* first line of /proc/driver/nvidia/version */
        char *version;      /* "550.54.15" */
        bool open_module;   /* "Open Kernel Module" */
        struct driver_gpu_info *gpus;
        size_t n_gpus;
        char *taint;                        /* /sys/module/nvidia/taint */
        bool common_node[_DRIVER_NODE_MAX]; /* driver_common_nodes[i] exists */
};

struct secureboot_facts {
        int efi_rc;           /* -ENOENT: not an EFI system / efivars not mounted */
        int secure_boot;      /* 1 on, 0 off, -1 unknown */
        char *lockdown;       /* "none", "integrity", "confidentiality", NULL unknown */
        char *kernel_release; /* from /proc/sys/kernel/osrelease */
        int headers_rc;       /* 0 when /lib/modules/<release>/build exists */
};

struct ib_port {
        char *device; /* "mlx5_0" */
        unsigned port;
        int state; /* 4 ACTIVE; -1 unreadable */
        char *state_text;
        int phys_state; /* 5 LinkUp */
        char *phys_state_text;
        char *rate, *link_layer;
        uint64_t link_downed; /* counters/link_downed, UINT64_MAX unknown */
};

struct ib_device {
        char *name, *hca_type, *fw_ver, *board_id;
};

struct rdma_facts {
        int rc; /* -ENOENT: no /sys/class/infiniband */
        char *error;
        struct ib_device *devices;
        size_t n_devices;
        struct ib_port *ports;
        size_t n_ports;
        bool have_uverbs, have_rdma_cm;
};

struct sriov_nic {
        char *interface; /* "ens1f0" */
        char *pci_address;
        uint64_t total_vfs, num_vfs;
        size_t vfs_without_driver;
};

struct sriov_facts {
        int rc;
        char *error;
        struct sriov_nic *nics; /* only NICs that offer SR-IOV (total_vfs > 0) */
        size_t n_nics;
};

enum kmsg_source_kind { KMSG_NONE, KMSG_DEVICE, KMSG_FILE };

struct kmsg_facts {
        int rc;
        char *error;
        char *source;           /* path read */
        struct kmsg_scan *scan; /* NULL when unreadable */
        int64_t boot_time;      /* /proc/stat's btime when the log is this boot's (the kmsg device, or a
                                 * snapshot of it): its seconds-since-boot stamps become wall times; 0: unknown */
};

struct nvml_state {
        int load_rc; /* 0 loaded, -errno when dlopen failed */
        char *load_error;
        char *library;            /* path or soname asked for */
        struct nvml_facts *facts; /* NULL when not loaded */
};

/* A process of the driver's (an nvidia kernel thread, a driver daemon or tool) in uninterruptible sleep. */
struct stuck_process {
        unsigned pid;
        char comm[64]; /* from /proc/<pid>/stat */
        char *wchan;   /* /proc/<pid>/wchan: the kernel function it waits in; NULL unreadable or "0" */
};

#define MAX_STUCK_PROCESSES 32 /* D-state processes kept; the rest counted */

struct process_facts {
        bool fabricmanager_running; /* nv-fabricmanager in /proc */
        bool persistenced_running;  /* nvidia-persistenced in /proc */
        bool proc_visible;          /* /proc under the root lists processes (their comm readable) */
        /* The driver's processes (comm "nv_*", "nvidia*", "UVM *", "irq/N-nvidia*", "nv-*") in D state */
        struct stuck_process *stuck;
        size_t n_stuck;
        size_t stuck_untracked; /* beyond MAX_STUCK_PROCESSES */
};

/* ---- Fabric manager and NVSwitch (probe_fabric_manager.c) ---- */

#define FM_LOG_PATH       "/var/log/fabricmanager.log" /* LOG_FILE_NAME's default in fabricmanager.cfg */
#define FM_CONFIG_PATH    "/usr/share/nvidia/nvswitch/fabricmanager.cfg"
#define FM_DPKG_STATUS    DPKG_STATUS_PATH /* the fabric manager package: basic/dpkg.h */
#define FM_LOG_TAIL_BYTES (1u << 20)       /* the log's last bytes read: it grows without bound when not rotated */
#define FM_LOG_KEPT       16               /* error lines kept as evidence, the last ones */
#define FM_TEXT_MAX       300              /* bytes of a kept line */

/* What a fabric manager log line says, when it says something gpunode looks for. */
enum fm_log_kind {
        FM_LOG_ERROR,             /* any other "[ERROR]" line */
        FM_LOG_VERSION_MISMATCH,  /* "... driver interface version X don't match with driver version Y" */
        FM_LOG_TOPOLOGY_MISMATCH, /* "detected number of NVSwitches don't match with any supported system topology" */
        FM_LOG_NVSWITCH_QUERY_FAILED, /* "request to query NVSwitch device information from NVSwitch driver failed" */
        FM_LOG_NVSWITCH_FATAL,        /* "detected NVSwitch fatal error N on ..." */
        FM_LOG_NVSWITCH_NON_FATAL,    /* "detected NVSwitch non-fatal error N on ..." */
        FM_LOG_TRAINING_FAILED,       /* NVLink/NVSwitch link training failed */
        FM_LOG_NOT_ABLE,              /* "fabric manager is not able to ..." / "failed to ..." at ERROR or not */
        FM_LOG_MULTICAST,             /* "failed to find the GPU handle ... in the multicast team" */
        _FM_LOG_KIND_MAX,
};

struct fm_log_line {
        uint64_t lineno; /* 1-based within the part read */
        enum fm_log_kind kind;
        char text[FM_TEXT_MAX + 1]; /* valid UTF-8, control bytes as '?' */
};

/* The fabric manager log's tail, split at the last start ("Fabric Manager version X is running"). */
struct fm_log_facts {
        int rc; /* 0 read; -ENOENT absent; other -errno unreadable */
        char *error;
        char *path;                            /* the log read (LOG_FILE_NAME from the config, else FM_LOG_PATH) */
        uint64_t size;                         /* the file's size */
        bool tail_only;                        /* size > FM_LOG_TAIL_BYTES: only its end was read */
        uint64_t lines;                        /* lines looked at */
        char *running_version;                 /* from the last start line, NULL when the part read has none */
        uint64_t start_lineno;                 /* that line, 0 when none */
        uint64_t starts;                       /* start lines seen */
        uint64_t errors_before_start;          /* error lines before the last start (history) */
        uint64_t errors;                       /* error lines after the last start (all, when no start) */
        uint64_t kind_count[_FM_LOG_KIND_MAX]; /* of those, by kind */
        char *mismatch_fm, *mismatch_driver;   /* versions a mismatch line names (after the start), or NULL */
        size_t n_kept;                         /* the last FM_LOG_KEPT error lines after the start, oldest first */
        struct fm_log_line kept[FM_LOG_KEPT];
};

struct fm_package_facts {
        int rc; /* 0 read; -ENOENT no dpkg status; other -errno unreadable */
        char *error;
        char *name;        /* "nvidia-fabricmanager-550" or "nvidia-fabricmanager", NULL when not installed */
        char *version;     /* the upstream version: "550.54.15" from "550.54.15-1" */
        char *raw_version; /* as dpkg has it */
};

struct fabric_manager_facts {
        struct fm_package_facts package;
        struct fm_log_facts log;
};

/* Scans a fabric manager log's text (len bytes, NULs allowed) into ret (path/size/tail_only left as
 * they are). Never fails: what it does not recognise it skips. */
void fm_log_scan(const char *text, size_t len, struct fm_log_facts *ret);
/* Finds the installed fabric manager package among dpkg's packages into ret (rc/error left as they
 * are). Never fails: no package leaves name NULL. */
void fm_package_find(const struct dpkg_status *dpkg, struct fm_package_facts *ret);
/* Returns the kind's stable name ("error", "version-mismatch", ...), or "?". */
const char *fm_log_kind_name(enum fm_log_kind k);

void probe_fabric_manager(const struct dpkg_status *dpkg, struct fabric_manager_facts *ret);
void fabric_manager_facts_free(struct fabric_manager_facts *f);

/* A process NVML lists on a GPU (compute processes), as the host's /proc shows it. */
struct gpu_process_host {
        unsigned pid;
        bool alive;         /* /proc/<pid> exists on the host */
        char *comm;         /* /proc/<pid>/comm; NULL unreadable */
        char *pod_uid;      /* the kubelet pod cgroup's UID (/proc/<pid>/cgroup); NULL: not in a pod */
        char *container_id; /* the container's id in that cgroup; NULL unknown */
        char state;         /* /proc/<pid>/stat's state letter ('D' uninterruptible); 0 unreadable */
        char *wchan;        /* /proc/<pid>/wchan when state is 'D'; NULL otherwise or unreadable */
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
/* Returns the boot time /proc/stat under the root gives (seconds since the epoch), 0 when unreadable. */
int64_t probe_boot_time(void);
void probe_nvml(const char *library, unsigned timeout_ms, struct nvml_state *ret);
/* probe_nvml asking only what scope names (an enum nvml_probe_scope: NVML_PROBE_ALL, NVML_PROBE_LABELS). */
void probe_nvml_scope(const char *library, unsigned timeout_ms, int scope, struct nvml_state *ret);
/* Fills ret from recorded facts (copied; NULL: load_rc/load_error) as if NVML had answered. */
void probe_nvml_replay(const char *library, const struct nvml_facts *facts, int load_rc, const char *load_error,
                       struct nvml_state *ret);
void probe_rdma(struct rdma_facts *ret);
void probe_sriov(struct sriov_facts *ret);
void probe_processes(struct process_facts *ret);
void process_facts_free(struct process_facts *f);
/* Reads /proc/<pid>/wchan under the root. Returns it malloc'd, or NULL when unreadable, empty or "0". */
char *probe_wchan(unsigned pid);
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
