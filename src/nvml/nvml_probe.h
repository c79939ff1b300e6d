/* nvml_probe.h: gather NVML facts about the node's GPUs in a worker thread, bounded by a timeout. */
#pragma once

#include "nvml/nvml_facts.h"
#include "nvml/nvml_lib.h"

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
int nvml_probe_run_scope(struct nvml_lib *lib, unsigned timeout_ms, enum nvml_probe_scope scope,
                         struct nvml_facts **ret);

/* Returns how many probe workers that timed out are still running (stuck in NVML). Never fails. */
unsigned nvml_probe_abandoned_workers(void);
