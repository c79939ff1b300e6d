/* nvml_probe.h: gather NVML facts about the node's GPUs in a worker thread, bounded by a timeout. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nvml/nvml_lib.h"

/*
 * Every fact carries the nvmlReturn_t of the call that produced it: NVML_SUCCESS (value valid),
 * NVML_ERROR_NOT_SUPPORTED (also for an entry point the library lacks), another NVML error, or
 * NVML_FACT_NOT_QUERIED (the probe never got there: timeout, init failure, missing handle).
 */
struct nvml_fact_u64 {
        int rc;
        uint64_t value;
};

/* The most MIG devices recorded per GPU (NVML allows 7 on A100/H100/B200; MIG devices are compute instances). */
#define NVML_MAX_MIG_DEVICES 16

/* nvmlDeviceAttributes_t of a MIG device. */
struct nvml_mig_attributes {
        unsigned multiprocessors, copy_engines, decoders, encoders, jpegs, ofas;
        unsigned gi_slices, ci_slices;
        uint64_t memory_mb; /* MiB */
};

/* One MIG device (a compute instance inside a GPU instance), as nvmlDeviceGetMigDeviceHandleByIndex found it. */
struct nvml_mig_facts {
        unsigned index; /* the MIG device index under its parent GPU */
        int uuid_rc;
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE]; /* "MIG-..." */
        int gi_rc;
        unsigned gi_id; /* GPU instance id */
        int ci_rc;
        unsigned ci_id; /* compute instance id within the GPU instance */
        int attributes_rc;
        struct nvml_mig_attributes attributes;
        int memory_rc;
        uint64_t memory_total, memory_used, memory_free; /* bytes */
        /* The profile as go-nvlib resolves it (GPU instance by id, compute instance by id, their infos,
         * and the profile tables): the NVML_GPU_INSTANCE_PROFILE_* and NVML_COMPUTE_INSTANCE_PROFILE_*
         * indices. NVML_ERROR_NOT_FOUND: no profile matched. */
        int profile_rc;
        unsigned gi_profile, ci_profile;
        char profile[32]; /* go-nvlib's name ("1g.10gb", "1g.10gb+me", "1c.3g.40gb"); "" when it has none */
};

/* NVLink error counters gpunode reads per link, in nvmlNvLinkErrorCounter_t order. */
#define NVML_LINK_COUNTERS 4 /* DL_REPLAY, DL_RECOVERY, DL_CRC_FLIT, DL_CRC_DATA */

/* One NVLink of a GPU. */
struct nvml_link_facts {
        unsigned active; /* nvmlDeviceGetNvLinkState: 1 active, 0 inactive */
        /* nvmlDeviceGetNvLinkErrorCounter, asked on active links only (NOT_QUERIED on the others) */
        struct nvml_fact_u64 errors[NVML_LINK_COUNTERS];
};

/* The most compute processes recorded per GPU (the count NVML gave is kept whole). */
#define NVML_MAX_PROCESSES 32

/* A compute process on a GPU (nvmlProcessInfo_t). */
struct nvml_process_facts {
        unsigned pid;         /* in the PID namespace of the caller (hidden ones are not listed) */
        uint64_t used_memory; /* bytes; UINT64_MAX: the driver cannot tell */
        unsigned gi, ci;      /* GPU and compute instance ids in MIG mode, else 0xFFFFFFFF */
};

/*
 * The health queries of a GPU (nvml_health_probe.c), asked only by the full probe (NVML_PROBE_ALL;
 * NOT_QUERIED under NVML_PROBE_LABELS). Every value is assigned member by member, so the padding
 * inside a fact stays zero and two fact sets compare with memcmp.
 */
struct nvml_health_facts {
        /* nvmlDeviceGetViolationStatus: cumulative nanoseconds below application clocks since the driver loaded */
        struct nvml_fact_u64 violation_power_ns, violation_thermal_ns;
        /* nvmlDeviceGetTemperatureThreshold, degrees C */
        struct nvml_fact_u64 temp_shutdown, temp_slowdown, temp_mem_max, temp_gpu_max;
        /* NVLink: nvmlDeviceGetNvLinkState for links 0, 1, ... until a link does not answer. nvlink_rc is
         * that answer: NVML_ERROR_NOT_SUPPORTED on link 0 (no NVLink), NVML_ERROR_INVALID_ARGUMENT past
         * the GPU's last link (n_links links), another error that ended the walk; SUCCESS when all
         * NVML_NVLINK_MAX_LINKS answered. */
        int nvlink_rc;
        unsigned n_links;
        struct nvml_link_facts links[NVML_NVLINK_MAX_LINKS];
        /* PCIe link: current and maximum width (lanes) and generation; gen_gpu_max is the GPU's own
         * maximum (nvmlDeviceGetGpuMaxPcieLinkGeneration), gen_max the GPU's and the slot's together */
        struct nvml_fact_u64 pcie_width, pcie_width_max, pcie_gen, pcie_gen_max, pcie_gen_gpu_max;
        /* Retired pages (before Ampere; NOT_SUPPORTED since, where row remapping replaced them) */
        struct nvml_fact_u64 retired_sbe, retired_dbe; /* pages retired for single-bit / double-bit errors */
        struct nvml_fact_u64 retired_pending;          /* 1: a retirement waits for the next reset */
        /* nvmlDeviceGetComputeRunningProcesses: n_processes as NVML counted them, the first
         * min(n, NVML_MAX_PROCESSES) in processes[] */
        int processes_rc;
        unsigned n_processes;
        struct nvml_process_facts processes[NVML_MAX_PROCESSES];
        struct nvml_fact_u64 graphics_processes; /* nvmlDeviceGetGraphicsRunningProcesses: how many */
        struct nvml_fact_u64 drain_state;        /* nvmlDeviceQueryDrainState: 1 draining */
        /* nvmlDeviceGetCurrentClocksEventReasons again, after the other health queries: a reason set
         * in both readings held for that long */
        struct nvml_fact_u64 clocks_event_reasons_again;
};

struct nvml_gpu_facts {
        unsigned index;
        bool complete; /* false: the probe timed out inside this GPU; later facts are NOT_QUERIED */

        int handle_rc; /* nvmlDeviceGetHandleByIndex */

        int name_rc;
        char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
        int uuid_rc;
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        struct nvml_fact_u64 minor_number;

        int pci_rc;
        char pci_bus_id[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];           /* "00000000:18:00.0" */
        char pci_bus_id_legacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE]; /* "0000:18:00.0" */
        uint32_t pci_domain, pci_bus, pci_device;
        uint32_t pci_device_id;    /* device << 16 | vendor, e.g. 0x233010DE */
        uint32_t pci_subsystem_id; /* e.g. 0x16C110DE */

        int memory_rc;
        int memory_version; /* 2: nvmlDeviceGetMemoryInfo_v2 answered (reserved valid), 1: the v1 call */
        uint64_t memory_total, memory_used, memory_free, memory_reserved; /* bytes */

        int cc_rc;
        int cc_major, cc_minor;

        int mig_rc; /* NVML_ERROR_NOT_SUPPORTED: the GPU is not MIG capable */
        unsigned mig_current, mig_pending;
        /* MIG devices: asked only when MIG mode is currently enabled (else NOT_QUERIED). */
        int mig_max_rc;     /* nvmlDeviceGetMaxMigDeviceCount */
        unsigned mig_max;
        int mig_devices_rc; /* nvmlDeviceGetMigDeviceHandleByIndex: success, or the error that ended the walk */
        unsigned n_mig;     /* recorded in mig[] (handles answering NOT_FOUND are skipped, as go-nvlib does) */
        struct nvml_mig_facts mig[NVML_MAX_MIG_DEVICES];

        struct nvml_fact_u64 persistence_mode; /* 1 enabled */

        int fabric_rc;
        int fabric_version; /* 3, 2 (nvmlDeviceGetGpuFabricInfoV) or 1 (nvmlDeviceGetGpuFabricInfo) */
        unsigned fabric_state; /* NVML_GPU_FABRIC_STATE_* */
        int fabric_status;     /* an nvmlReturn_t; meaningful when state is COMPLETED */
        char fabric_cluster_uuid[37];
        unsigned fabric_clique_id;
        unsigned fabric_health_mask; /* version >= 2 */

        int ecc_mode_rc;
        unsigned ecc_mode_current, ecc_mode_pending;
        struct nvml_fact_u64 ecc_volatile_corrected, ecc_volatile_uncorrected;
        struct nvml_fact_u64 ecc_aggregate_corrected, ecc_aggregate_uncorrected;

        int remapped_rows_rc;
        unsigned remapped_correctable, remapped_uncorrectable;
        bool remapped_pending, remapped_failure;

        int field_values_rc;                  /* the nvmlDeviceGetFieldValues call itself */
        struct nvml_fact_u64 recovery_action; /* field 230; rc is the per-value nvmlReturn */
        struct nvml_fact_u64 memory_temperature; /* field 82, degrees C */

        struct nvml_fact_u64 temperature; /* GPU die, degrees C */
        struct nvml_fact_u64 power_mw;
        struct nvml_fact_u64 energy_mj;

        int utilization_rc;
        unsigned utilization_gpu, utilization_memory; /* percent */

        struct nvml_fact_u64 clock_sm_mhz, clock_mem_mhz;
        struct nvml_fact_u64 pcie_replay;
        struct nvml_fact_u64 clocks_event_reasons;

        struct nvml_health_facts health;
};

struct nvml_facts {
        char *library_path;

        int init_rc;
        char init_error[128]; /* nvmlErrorString(init_rc), when the library has it */

        int driver_version_rc;
        char driver_version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
        int nvml_version_rc;
        char nvml_version[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE];
        struct nvml_fact_u64 cuda_driver_version; /* 12040 = 12.4 */

        int device_count_rc;
        unsigned device_count;

        unsigned n_gpus; /* records in gpus: all of them, or up to the one the timeout caught */
        struct nvml_gpu_facts *gpus;

        bool timed_out;
        unsigned timeout_ms;
        char blocked_call[64]; /* the call that had not returned, e.g. "nvmlDeviceGetPowerUsage" */
        int blocked_gpu;       /* its GPU index, -1 for a system call (nvmlInit, ...) */
        char timeout_message[192]; /* "nvmlDeviceGetPowerUsage on GPU 3 did not return within 5000 ms" */

        /* Whether the caller shares the host's PID namespace, which decides whether NVML's process lists
         * show every process (the driver hides those of other namespaces): 1 yes, 0 no, -1 unknown. Not
         * an NVML answer: the caller (probe_nvml) sets it, and it travels with the facts so that a
         * snapshot replays it. */
        int caller_pid_namespace;
};

/*
 * Runs nvmlInit, gathers every fact, and nvmlShutdown, in a worker thread; waits at most timeout_ms
 * in total. Returns 0 and *ret (free with nvml_facts_free) also when NVML failed or timed out: those
 * are facts. Returns -errno only when the worker thread cannot be started. On timeout the worker is
 * left running on its own (holding a reference on lib); it frees its state when it returns.
 */
int nvml_probe_run(struct nvml_lib *lib, unsigned timeout_ms, struct nvml_facts **ret);

/* What a probe asks. */
enum nvml_probe_scope {
        NVML_PROBE_ALL,    /* every fact */
        NVML_PROBE_LABELS, /* what GFD's labels need (names, memory, compute capability, MIG, fabric);
                            * power, clocks, ECC, temperatures and the health queries stay NOT_QUERIED,
                            * so a GPU hanging in one of those does not stop the labels */
};

/* nvml_probe_run asking only what scope names. Returns as nvml_probe_run. */
int nvml_probe_run_scope(struct nvml_lib *lib, unsigned timeout_ms, enum nvml_probe_scope scope, struct nvml_facts **ret);

/* Returns how many probe workers that timed out are still running (stuck in NVML). Never fails. */
unsigned nvml_probe_abandoned_workers(void);

/* Frees facts (NULL is fine). Returns NULL. */
struct nvml_facts *nvml_facts_free(struct nvml_facts *f);
static inline void nvml_facts_freep(struct nvml_facts **p) { nvml_facts_free(*p); }
#define _cleanup_nvml_facts_ __attribute__((cleanup(nvml_facts_freep)))

/*
 * Names a MIG profile as go-nvlib's MigProfileInfo.String() does (GFD's MIG resource names come from it,
 * with '+' turned into '.'): "<g>g.<gb>gb" or "<c>c.<g>g.<gb>gb", then "+me", "+me.all", "+gfx" or "-me"
 * from the GPU instance profile; gb is the MIG memory as a share of the GPU's memory rounded up to
 * eighths, times the GPU's memory in whole GiB (rounded up), rounded. Returns 0 and the name in buf,
 * or -EINVAL for a profile index go-nvlib does not know (or a zero GPU memory), with buf "".
 */
int nvml_mig_profile_name(unsigned gi_profile, unsigned ci_profile, uint64_t mig_memory_mb, uint64_t gpu_memory_bytes,
                          char *buf, size_t size);

/*
 * Approximates a MIG device's profile name from its attributes alone ("<g>g.<gb>gb", "<c>c.<g>g.<gb>gb",
 * without the +me/-me/+gfx suffix the GPU instance profile would add), for when the profile lookup
 * was refused (it needs privileges). Returns 0 and the name in buf, or -EINVAL when the attributes
 * or the GPU memory are unknown.
 */
int nvml_mig_name_from_attributes(const struct nvml_mig_attributes *a, uint64_t gpu_memory_bytes, char *buf, size_t size);

/*
 * Writes facts as the fake NVML's JSON description (tests/fake-nvml/README.md), so that a node's
 * facts replay through the fake. Returns 0 and a malloc'd string in *ret, or -ENOMEM.
 */
int nvml_facts_to_json(const struct nvml_facts *f, char **ret); /* in nvml_facts_json.c */

/* Sets every fact of GPU index to "not queried", the state of a GPU the probe did not reach.
 * Returns nothing. */
void nvml_gpu_facts_init(struct nvml_gpu_facts *g, unsigned index);
/* Sets every health fact to "not queried" (zeroing the rest). Returns nothing. */
void nvml_health_facts_init(struct nvml_health_facts *h);
