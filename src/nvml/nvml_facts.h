/* nvml_facts.h: the NVML facts of a node and its GPUs, as the probe gathers them and snapshots carry them. */
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

/* How a scalar fact's answer is read from and written to the fake NVML's description (the conv column below). */
enum nvml_fact_conv {
        NVML_FACT_U32,  /* an unsigned int answer: the description's number is cut to 32 bits */
        NVML_FACT_U64,  /* an unsigned long long answer */
        NVML_FACT_FLAG, /* an unsigned int kept as 0 or 1, written as a number */
        NVML_FACT_BOOL, /* kept as 0 or 1, written as a JSON boolean */
        NVML_FACT_TEMP, /* an int: a negative answer is kept as 0 */
        NVML_FACT_OWN,  /* its JSON is written and read by the hand-written HOOK that follows it */
};

/*
 * The per-GPU scalar facts (one nvmlReturn_t and one value each), in the order nvml_facts_to_json writes
 * them. The members of struct nvml_gpu_facts and struct nvml_health_facts, their "not queried" defaults
 * and their JSON both ways (nvml_facts_json.c) are generated from these lists; the probe asks them by
 * hand (nvml_gpu_probe.c, nvml_health_probe.c), since every NVML call has a signature of its own.
 *
 *   FACT(member, conv, group, key, call)
 *     conv   enum nvml_fact_conv
 *     group  the object of the GPU's description that holds key (NULL: the GPU's object itself); an
 *            object that ends up empty is left out
 *     key    the JSON key of the value, written when the call succeeded
 *     call   the NVML call whose error the description records under "errors" (replayed by the fake);
 *            rows that share a call record the first error among them
 *   HOOK(name)
 *     hand-written name_to_json and name_from_json in nvml_facts_json.c, at this place in the
 *     description: facts of several values from one call (PCI, memory, MIG mode, fabric, ...), strings,
 *     and the arrays (MIG devices, NVLinks, processes), whose shape a row of this table would hide.
 *
 * A new scalar fact is one row here, its question in the probe, and its answer in the fake NVML.
 */
#define NVML_GPU_FACTS(FACT, HOOK)                                                                                     \
        HOOK(identity) /* nvmlDeviceGetName, nvmlDeviceGetUUID */                                                      \
        FACT(minor_number, NVML_FACT_U32, NULL, "minor_number", "nvmlDeviceGetMinorNumber")                            \
        HOOK(pci)                                                                                                      \
        HOOK(memory)                                                                                                   \
        HOOK(compute_capability)                                                                                       \
        HOOK(mig) /* MIG mode, then the MIG devices */                                                                 \
        FACT(persistence_mode, NVML_FACT_FLAG, NULL, "persistence_mode",                                               \
             "nvmlDeviceGetPersistenceMode") /* 1 enabled */                                                           \
        HOOK(fabric)                                                                                                   \
        HOOK(ecc_mode)                                                                                                 \
        FACT(ecc_volatile_corrected, NVML_FACT_U64, "ecc", "volatile_corrected", "nvmlDeviceGetTotalEccErrors")        \
        FACT(ecc_volatile_uncorrected, NVML_FACT_U64, "ecc", "volatile_uncorrected", "nvmlDeviceGetTotalEccErrors")    \
        FACT(ecc_aggregate_corrected, NVML_FACT_U64, "ecc", "aggregate_corrected", "nvmlDeviceGetTotalEccErrors")      \
        FACT(ecc_aggregate_uncorrected, NVML_FACT_U64, "ecc", "aggregate_uncorrected", "nvmlDeviceGetTotalEccErrors")  \
        HOOK(remapped_rows)                                                                                            \
        /* nvmlDeviceGetFieldValues: field 230, and field 82 (degrees C); rc is the per-value nvmlReturn */            \
        FACT(recovery_action, NVML_FACT_OWN, NULL, "recovery_action", "nvmlDeviceGetFieldValues")                      \
        FACT(memory_temperature, NVML_FACT_OWN, NULL, "memory_temperature", "nvmlDeviceGetFieldValues")                \
        HOOK(field_values)                                                                                             \
        FACT(temperature, NVML_FACT_TEMP, NULL, "temperature", "nvmlDeviceGetTemperature") /* die, degrees C */        \
        FACT(power_mw, NVML_FACT_U32, NULL, "power_mw", "nvmlDeviceGetPowerUsage")                                     \
        FACT(energy_mj, NVML_FACT_U64, NULL, "energy_mj", "nvmlDeviceGetTotalEnergyConsumption")                       \
        HOOK(utilization)                                                                                              \
        FACT(clock_sm_mhz, NVML_FACT_U32, "clocks", "sm", "nvmlDeviceGetClockInfo")                                    \
        FACT(clock_mem_mhz, NVML_FACT_U32, "clocks", "mem", "nvmlDeviceGetClockInfo")                                  \
        FACT(pcie_replay, NVML_FACT_U32, NULL, "pcie_replay", "nvmlDeviceGetPcieReplayCounter")                        \
        /* two readings (health.clocks_event_reasons_again is the second): one number, or a pair that differs */       \
        FACT(clocks_event_reasons, NVML_FACT_OWN, NULL, "clocks_event_reasons",                                        \
             "nvmlDeviceGetCurrentClocksEventReasons")                                                                 \
        HOOK(clocks_event_reasons)

/* The scalar health facts, written after those of NVML_GPU_FACTS; the same columns. */
#define NVML_HEALTH_FACTS(FACT, HOOK)                                                                                  \
        /* cumulative nanoseconds below application clocks since the driver loaded */                                  \
        FACT(violation_power_ns, NVML_FACT_U64, "violation", "power_ns", "nvmlDeviceGetViolationStatus")               \
        FACT(violation_thermal_ns, NVML_FACT_U64, "violation", "thermal_ns", "nvmlDeviceGetViolationStatus")           \
        /* degrees C */                                                                                                \
        FACT(temp_shutdown, NVML_FACT_U32, "temperature_thresholds", "shutdown", "nvmlDeviceGetTemperatureThreshold")  \
        FACT(temp_slowdown, NVML_FACT_U32, "temperature_thresholds", "slowdown", "nvmlDeviceGetTemperatureThreshold")  \
        FACT(temp_mem_max, NVML_FACT_U32, "temperature_thresholds", "mem_max", "nvmlDeviceGetTemperatureThreshold")    \
        FACT(temp_gpu_max, NVML_FACT_U32, "temperature_thresholds", "gpu_max", "nvmlDeviceGetTemperatureThreshold")    \
        HOOK(nvlinks)                                                                                                  \
        /* PCIe link: width in lanes, generation; gen_gpu_max is the GPU's own maximum                                 \
         * (nvmlDeviceGetGpuMaxPcieLinkGeneration), gen_max the GPU's and the slot's together */                       \
        FACT(pcie_width, NVML_FACT_U32, "pcie", "width", "nvmlDeviceGetCurrPcieLinkWidth")                             \
        FACT(pcie_width_max, NVML_FACT_U32, "pcie", "width_max", "nvmlDeviceGetMaxPcieLinkWidth")                      \
        FACT(pcie_gen, NVML_FACT_U32, "pcie", "gen", "nvmlDeviceGetCurrPcieLinkGeneration")                            \
        FACT(pcie_gen_max, NVML_FACT_U32, "pcie", "gen_max", "nvmlDeviceGetMaxPcieLinkGeneration")                     \
        FACT(pcie_gen_gpu_max, NVML_FACT_U32, "pcie", "gen_gpu_max", "nvmlDeviceGetGpuMaxPcieLinkGeneration")          \
        /* retired pages (before Ampere; NOT_SUPPORTED since, where row remapping replaced them): pages                \
         * retired for single-bit / double-bit errors; pending 1: a retirement waits for the next reset */             \
        FACT(retired_sbe, NVML_FACT_U32, "retired_pages", "sbe", "nvmlDeviceGetRetiredPages")                          \
        FACT(retired_dbe, NVML_FACT_U32, "retired_pages", "dbe", "nvmlDeviceGetRetiredPages")                          \
        FACT(retired_pending, NVML_FACT_BOOL, "retired_pages", "pending", "nvmlDeviceGetRetiredPagesPendingStatus")    \
        /* the compute processes (an array), then how many graphics processes */                                       \
        FACT(graphics_processes, NVML_FACT_OWN, NULL, "graphics_processes", "nvmlDeviceGetGraphicsRunningProcesses")   \
        HOOK(processes)                                                                                                \
        /* nvmlDeviceQueryDrainState (1 draining), asked with the PCI address nvmlDeviceGetPciInfo gave */             \
        FACT(drain_state, NVML_FACT_OWN, NULL, "drain_state", "nvmlDeviceQueryDrainState")                             \
        HOOK(drain_state)                                                                                              \
        /* nvmlDeviceGetCurrentClocksEventReasons again, after the other health queries: a reason set in both          \
         * readings held for that long (written and read with clocks_event_reasons) */                                 \
        FACT(clocks_event_reasons_again, NVML_FACT_OWN, NULL, NULL, "nvmlDeviceGetCurrentClocksEventReasons")

/* Expands to the struct member of a FACT row; a HOOK row declares nothing (its members are written out). */
#define NVML_FACT_MEMBER(member, ...) struct nvml_fact_u64 member;
#define NVML_FACT_NO_HOOK(name)

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
        NVML_HEALTH_FACTS(NVML_FACT_MEMBER, NVML_FACT_NO_HOOK)
        /* NVLink: nvmlDeviceGetNvLinkState for links 0, 1, ... until a link does not answer. nvlink_rc is
         * that answer: NVML_ERROR_NOT_SUPPORTED on link 0 (no NVLink), NVML_ERROR_INVALID_ARGUMENT past
         * the GPU's last link (n_links links), another error that ended the walk; SUCCESS when all
         * NVML_NVLINK_MAX_LINKS answered. */
        int nvlink_rc;
        unsigned n_links;
        struct nvml_link_facts links[NVML_NVLINK_MAX_LINKS];
        /* nvmlDeviceGetComputeRunningProcesses: n_processes as NVML counted them, the first
         * min(n, NVML_MAX_PROCESSES) in processes[] */
        int processes_rc;
        unsigned n_processes;
        struct nvml_process_facts processes[NVML_MAX_PROCESSES];
};

/* The facts of one GPU: the scalar ones of NVML_GPU_FACTS, then those of several values per call. */
struct nvml_gpu_facts {
        unsigned index;
        bool complete; /* false: the probe timed out inside this GPU; later facts are NOT_QUERIED */

        NVML_GPU_FACTS(NVML_FACT_MEMBER, NVML_FACT_NO_HOOK)

        int handle_rc; /* nvmlDeviceGetHandleByIndex */

        int name_rc;
        char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
        int uuid_rc;
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];

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
        int mig_max_rc; /* nvmlDeviceGetMaxMigDeviceCount */
        unsigned mig_max;
        int mig_devices_rc; /* nvmlDeviceGetMigDeviceHandleByIndex: success, or the error that ended the walk */
        unsigned n_mig;     /* recorded in mig[] (handles answering NOT_FOUND are skipped, as go-nvlib does) */
        struct nvml_mig_facts mig[NVML_MAX_MIG_DEVICES];

        int fabric_rc;
        int fabric_version;    /* 3, 2 (nvmlDeviceGetGpuFabricInfoV) or 1 (nvmlDeviceGetGpuFabricInfo) */
        unsigned fabric_state; /* NVML_GPU_FABRIC_STATE_* */
        int fabric_status;     /* an nvmlReturn_t; meaningful when state is COMPLETED */
        char fabric_cluster_uuid[37];
        unsigned fabric_clique_id;
        unsigned fabric_health_mask; /* version >= 2 */

        int ecc_mode_rc;
        unsigned ecc_mode_current, ecc_mode_pending;

        int remapped_rows_rc;
        unsigned remapped_correctable, remapped_uncorrectable;
        bool remapped_pending, remapped_failure;

        int field_values_rc; /* the nvmlDeviceGetFieldValues call itself */

        int utilization_rc;
        unsigned utilization_gpu, utilization_memory; /* percent */

        struct nvml_health_facts health;
};

/* What NVML answered about the node: the library, the system calls, and every GPU reached. */
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
        char blocked_call[64];     /* the call that had not returned, e.g. "nvmlDeviceGetPowerUsage" */
        int blocked_gpu;           /* its GPU index, -1 for a system call (nvmlInit, ...) */
        char timeout_message[192]; /* "nvmlDeviceGetPowerUsage on GPU 3 did not return within 5000 ms" */

        /* Whether the caller shares the host's PID namespace, which decides whether NVML's process lists
         * show every process (the driver hides those of other namespaces): 1 yes, 0 no, -1 unknown. Not
         * an NVML answer: the caller (probe_nvml) sets it, and it travels with the facts so that a
         * snapshot replays it. */
        int caller_pid_namespace;
};

/* Frees facts (NULL is fine). Returns NULL. */
struct nvml_facts *nvml_facts_free(struct nvml_facts *f);
static inline void nvml_facts_freep(struct nvml_facts **p) {
        nvml_facts_free(*p);
}
#define _cleanup_nvml_facts_ __attribute__((cleanup(nvml_facts_freep)))

/* Sets every fact of GPU index to "not queried", the state of a GPU the probe did not reach.
 * Returns nothing. */
void nvml_gpu_facts_init(struct nvml_gpu_facts *g, unsigned index);
/* Sets every health fact to "not queried" (zeroing the rest). Returns nothing. */
void nvml_health_facts_init(struct nvml_health_facts *h);

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
int nvml_mig_name_from_attributes(const struct nvml_mig_attributes *a, uint64_t gpu_memory_bytes, char *buf,
                                  size_t size);
