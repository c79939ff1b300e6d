/* nvml_probe.h: gather NVML facts about the node's GPUs in a worker thread, bounded by a timeout. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "nvml_lib.h"

/*
 * Every fact carries the nvmlReturn_t of the call that produced it: NVML_SUCCESS (value valid),
 * NVML_ERROR_NOT_SUPPORTED (also for an entry point the library lacks), another NVML error, or
 * NVML_FACT_NOT_QUERIED (the probe never got there: timeout, init failure, missing handle).
 */
struct nvml_fact_u64 {
        int rc;
        uint64_t value;
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
};

/*
 * Runs nvmlInit, gathers every fact, and nvmlShutdown, in a worker thread; waits at most timeout_ms
 * in total. Returns 0 and *ret (free with nvml_facts_free) also when NVML failed or timed out: those
 * are facts. Returns -errno only when the worker thread cannot be started. On timeout the worker is
 * left running on its own (holding a reference on lib); it frees its state when it returns.
 */
int nvml_probe_run(struct nvml_lib *lib, unsigned timeout_ms, struct nvml_facts **ret);

/* Returns how many probe workers that timed out are still running (stuck in NVML). Never fails. */
unsigned nvml_probe_abandoned_workers(void);

/* Frees facts (NULL is fine). Returns NULL. */
struct nvml_facts *nvml_facts_free(struct nvml_facts *f);
static inline void nvml_facts_freep(struct nvml_facts **p) { nvml_facts_free(*p); }
#define _cleanup_nvml_facts_ __attribute__((cleanup(nvml_facts_freep)))

/*
 * Writes facts as the fake NVML's JSON description (tests/fake-nvml/README.md), so that a node's
 * facts replay through the fake. Returns 0 and a malloc'd string in *ret, or -ENOMEM.
 */
int nvml_facts_to_json(const struct nvml_facts *f, char **ret);
