/* nvml_health_probe.c: the health questions the NVML probe's worker asks of one GPU: clock slowdown
 * time, temperature thresholds, NVLink, PCIe link, retired pages, processes, drain state. */
#include "nvml/nvml_probe_internal.h"

#include "basic/util.h"

/* Sets a fact member by member (its padding stays as initialised). Returns nothing. */
static void set_fact(struct nvml_fact_u64 *f, nvmlReturn_t rc, uint64_t v) {
        f->rc = rc;
        f->value = rc == NVML_SUCCESS ? v : 0;
}

void nvml_health_facts_init(struct nvml_health_facts *h) {
        memset(h, 0, sizeof *h);
#define NOT_QUERIED(member, ...) h->member.rc = NVML_FACT_NOT_QUERIED;
        NVML_HEALTH_FACTS(NOT_QUERIED, NVML_FACT_NO_HOOK)
#undef NOT_QUERIED
        h->nvlink_rc = h->processes_rc = NVML_FACT_NOT_QUERIED;
        for (size_t l = 0; l < ELEMENTSOF(h->links); l++)
                for (size_t c = 0; c < NVML_LINK_COUNTERS; c++) h->links[l].errors[c].rc = NVML_FACT_NOT_QUERIED;
}

#define STEP(name)                                                                                                     \
        do {                                                                                                           \
                if (!nvml_probe_step(st, (name), (int)g->index)) return false;                                         \
        } while (0)

/* Asks one unsigned int query of the PCIe link (NULL entry point: not supported) into f. Returns nothing. */
static void pcie_query(nvmlDeviceGetPcieLink_fn fn, nvmlDevice_t dev, struct nvml_fact_u64 *f) {
        unsigned v = 0;
        nvmlReturn_t rc = fn ? fn(dev, &v) : NS;
        set_fact(f, rc, v);
}

/* Walks the GPU's NVLinks: state of each, error counters of the active ones. Returns false when
 * the caller gave up meanwhile. */
static bool probe_nvlinks(struct probe_state *st, struct nvml_gpu_facts *g, nvmlDevice_t dev) {
        struct nvml_lib *lib = st->lib;
        struct nvml_health_facts *h = &g->health;
        h->nvlink_rc = NVML_SUCCESS;
        for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
                STEP("nvmlDeviceGetNvLinkState");
                nvmlEnableState_t on = NVML_FEATURE_DISABLED;
                nvmlReturn_t rc = lib->nvmlDeviceGetNvLinkState ? lib->nvmlDeviceGetNvLinkState(dev, l, &on) : NS;
                if (rc != NVML_SUCCESS) {
                        h->nvlink_rc = rc;
                        break;
                }
                struct nvml_link_facts *k = &h->links[h->n_links++];
                k->active = on == NVML_FEATURE_ENABLED;
                if (!k->active) continue;
                for (unsigned c = 0; c < NVML_LINK_COUNTERS; c++) {
                        STEP("nvmlDeviceGetNvLinkErrorCounter");
                        unsigned long long n = 0;
                        rc = lib->nvmlDeviceGetNvLinkErrorCounter
                                     ? lib->nvmlDeviceGetNvLinkErrorCounter(dev, l, (nvmlNvLinkErrorCounter_t)c, &n)
                                     : NS;
                        set_fact(&k->errors[c], rc, n);
                }
        }
        return true;
}

/* Asks the compute processes (and how many graphics processes) into g. Returns false when the
 * caller gave up meanwhile. */
static bool probe_processes(struct probe_state *st, struct nvml_gpu_facts *g, nvmlDevice_t dev) {
        struct nvml_lib *lib = st->lib;
        struct nvml_health_facts *h = &g->health;
        /* Room for twice what is kept: a process starting between the count and the list still fits. */
        nvmlProcessInfo_t p[2 * NVML_MAX_PROCESSES];

        STEP("nvmlDeviceGetComputeRunningProcesses");
        unsigned n = ELEMENTSOF(p);
        memset(p, 0, sizeof p);
        nvmlReturn_t rc =
                lib->nvmlDeviceGetComputeRunningProcesses ? lib->nvmlDeviceGetComputeRunningProcesses(dev, &n, p) : NS;
        h->processes_rc = rc;
        if (rc == NVML_SUCCESS || rc == NVML_ERROR_INSUFFICIENT_SIZE) h->n_processes = n;
        if (rc == NVML_SUCCESS)
                for (unsigned i = 0; i < n && i < NVML_MAX_PROCESSES; i++) {
                        struct nvml_process_facts *q = &h->processes[i];
                        q->pid = p[i].pid;
                        q->used_memory = p[i].usedGpuMemory;
                        q->gi = p[i].gpuInstanceId;
                        q->ci = p[i].computeInstanceId;
                }

        STEP("nvmlDeviceGetGraphicsRunningProcesses");
        n = ELEMENTSOF(p);
        rc = lib->nvmlDeviceGetGraphicsRunningProcesses ? lib->nvmlDeviceGetGraphicsRunningProcesses(dev, &n, p) : NS;
        /* INSUFFICIENT_SIZE still counts them. */
        if (rc == NVML_ERROR_INSUFFICIENT_SIZE) rc = NVML_SUCCESS;
        set_fact(&h->graphics_processes, rc, n);
        return true;
}

bool nvml_probe_gpu_health(struct probe_state *st, struct nvml_gpu_facts *g, nvmlDevice_t dev) {
        struct nvml_lib *lib = st->lib;
        struct nvml_health_facts *h = &g->health;
        nvmlReturn_t rc;

        static const struct {
                nvmlPerfPolicyType_t policy;
                size_t offset;
        } viol[] = {
                { NVML_PERF_POLICY_POWER, offsetof(struct nvml_health_facts, violation_power_ns) },
                { NVML_PERF_POLICY_THERMAL, offsetof(struct nvml_health_facts, violation_thermal_ns) },
        };
        for (size_t i = 0; i < ELEMENTSOF(viol); i++) {
                STEP("nvmlDeviceGetViolationStatus");
                nvmlViolationTime_t t = { 0 };
                rc = lib->nvmlDeviceGetViolationStatus ? lib->nvmlDeviceGetViolationStatus(dev, viol[i].policy, &t)
                                                       : NS;
                set_fact((struct nvml_fact_u64 *)((char *)h + viol[i].offset), rc, t.violationTime);
        }

        struct {
                nvmlTemperatureThresholds_t type;
                struct nvml_fact_u64 *out;
        } thr[] = {
                { NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, &h->temp_shutdown },
                { NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &h->temp_slowdown },
                { NVML_TEMPERATURE_THRESHOLD_MEM_MAX, &h->temp_mem_max },
                { NVML_TEMPERATURE_THRESHOLD_GPU_MAX, &h->temp_gpu_max },
        };
        for (size_t i = 0; i < ELEMENTSOF(thr); i++) {
                STEP("nvmlDeviceGetTemperatureThreshold");
                unsigned t = 0;
                rc = lib->nvmlDeviceGetTemperatureThreshold
                             ? lib->nvmlDeviceGetTemperatureThreshold(dev, thr[i].type, &t)
                             : NS;
                set_fact(thr[i].out, rc, t);
        }

        if (!probe_nvlinks(st, g, dev)) return false;

        STEP("nvmlDeviceGetCurrPcieLinkWidth");
        pcie_query(lib->nvmlDeviceGetCurrPcieLinkWidth, dev, &h->pcie_width);
        STEP("nvmlDeviceGetMaxPcieLinkWidth");
        pcie_query(lib->nvmlDeviceGetMaxPcieLinkWidth, dev, &h->pcie_width_max);
        STEP("nvmlDeviceGetCurrPcieLinkGeneration");
        pcie_query(lib->nvmlDeviceGetCurrPcieLinkGeneration, dev, &h->pcie_gen);
        STEP("nvmlDeviceGetMaxPcieLinkGeneration");
        pcie_query(lib->nvmlDeviceGetMaxPcieLinkGeneration, dev, &h->pcie_gen_max);
        STEP("nvmlDeviceGetGpuMaxPcieLinkGeneration");
        pcie_query(lib->nvmlDeviceGetGpuMaxPcieLinkGeneration, dev, &h->pcie_gen_gpu_max);

        struct {
                nvmlPageRetirementCause_t cause;
                struct nvml_fact_u64 *out;
        } ret[] = {
                { NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, &h->retired_sbe },
                { NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &h->retired_dbe },
        };
        for (size_t i = 0; i < ELEMENTSOF(ret); i++) {
                STEP("nvmlDeviceGetRetiredPages");
                /* pageCount 0 asks the count alone; NVML answers SUCCESS or INSUFFICIENT_SIZE with it. */
                unsigned n = 0;
                rc = lib->nvmlDeviceGetRetiredPages ? lib->nvmlDeviceGetRetiredPages(dev, ret[i].cause, &n, NULL) : NS;
                if (rc == NVML_ERROR_INSUFFICIENT_SIZE) rc = NVML_SUCCESS;
                set_fact(ret[i].out, rc, n);
        }
        STEP("nvmlDeviceGetRetiredPagesPendingStatus");
        nvmlEnableState_t pending = NVML_FEATURE_DISABLED;
        rc = lib->nvmlDeviceGetRetiredPagesPendingStatus ? lib->nvmlDeviceGetRetiredPagesPendingStatus(dev, &pending)
                                                         : NS;
        set_fact(&h->retired_pending, rc, pending == NVML_FEATURE_ENABLED);

        if (!probe_processes(st, g, dev)) return false;

        STEP("nvmlDeviceQueryDrainState");
        nvmlEnableState_t drain = NVML_FEATURE_DISABLED;
        rc = NS;
        if (lib->nvmlDeviceQueryDrainState && g->pci_rc == NVML_SUCCESS) {
                /* The call takes the PCI address, not the handle: the one nvmlDeviceGetPciInfo gave. */
                nvmlPciInfo_t pci;
                memset(&pci, 0, sizeof pci);
                snprintf(pci.busId, sizeof pci.busId, "%s", g->pci_bus_id);
                snprintf(pci.busIdLegacy, sizeof pci.busIdLegacy, "%s", g->pci_bus_id_legacy);
                pci.domain = g->pci_domain;
                pci.bus = g->pci_bus;
                pci.device = g->pci_device;
                pci.pciDeviceId = g->pci_device_id;
                pci.pciSubSystemId = g->pci_subsystem_id;
                rc = lib->nvmlDeviceQueryDrainState(&pci, &drain);
        } else if (lib->nvmlDeviceQueryDrainState) {
                rc = g->pci_rc;
        }
        set_fact(&h->drain_state, rc, drain == NVML_FEATURE_ENABLED);

        STEP("nvmlDeviceGetCurrentClocksEventReasons");
        unsigned long long reasons = 0;
        rc = lib->nvmlDeviceGetCurrentClocksEventReasons ? lib->nvmlDeviceGetCurrentClocksEventReasons(dev, &reasons)
                                                         : NS;
        set_fact(&h->clocks_event_reasons_again, rc, reasons);
        return true;
}

#undef STEP
