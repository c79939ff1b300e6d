/* gpm.c: the exporter's profiling counters (DCGM_FI_PROF_*): NVML GPM sample pairs per GPU or GPU instance, PCIe
 * throughput otherwise. */
#include "exporter/exporter_internal.h"

#include <math.h>

/* The GPM metrics read, in EXP_PROF_* order, and the factor from GPM's unit to DCGM's: percent to a
 * ratio, MiB/s to bytes per second. */
static const struct {
        unsigned metric;
        double scale;
        bool integer; /* DCGM_FT_INT64: rounded */
} gpm_metrics[EXP_N_PROF] = {
        [EXP_PROF_GR_ENGINE_ACTIVE - EXP_PROF_FIRST] = { NVML_GPM_METRIC_GRAPHICS_UTIL, 0.01, false },
        [EXP_PROF_PIPE_TENSOR_ACTIVE - EXP_PROF_FIRST] = { NVML_GPM_METRIC_ANY_TENSOR_UTIL, 0.01, false },
        [EXP_PROF_DRAM_ACTIVE - EXP_PROF_FIRST] = { NVML_GPM_METRIC_DRAM_BW_UTIL, 0.01, false },
        [EXP_PROF_PCIE_TX_BYTES - EXP_PROF_FIRST] = { NVML_GPM_METRIC_PCIE_TX_PER_SEC, 1048576.0, true },
        [EXP_PROF_PCIE_RX_BYTES - EXP_PROF_FIRST] = { NVML_GPM_METRIC_PCIE_RX_PER_SEC, 1048576.0, true },
};

/* Frees slot's sample buffers (lib NULL: forgets them) and clears it. Returns nothing; never fails. */
static void slot_release(struct gpm_slot *slot, struct nvml_lib *lib) {
        /* nvmlGpmSampleFree frees host memory only: no GPU access, nothing that can block. */
        if (lib && lib->nvmlGpmSampleFree) {
                if (slot->prev) lib->nvmlGpmSampleFree(slot->prev);
                if (slot->cur) lib->nvmlGpmSampleFree(slot->cur);
        }
        memset(slot, 0, sizeof *slot);
}

/* Frees every slot of gg (lib as in slot_release). Returns nothing; never fails. */
static void gpu_release(struct gpm_gpu *gg, struct nvml_lib *lib) {
        slot_release(&gg->whole, lib);
        for (unsigned k = 0; k < EXP_MAX_GPU_INSTANCES; k++) slot_release(&gg->inst[k], lib);
}

void exp_gpm_release(struct exporter *e, struct nvml_lib *lib) {
        for (unsigned i = 0; i < MAX_GPUS; i++) {
                if (!e->gpm[i]) continue;
                pthread_mutex_lock(&e->lock);
                bool stuck = e->stuck_gpu[i];
                pthread_mutex_unlock(&e->lock);
                if (stuck && lib) continue; /* a call inside NVML may hold its buffers: kept */
                gpu_release(e->gpm[i], lib);
                free(e->gpm[i]);
                e->gpm[i] = NULL;
        }
}

/*
 * Reads one GPM sample of GPU dev (gi_id < 0) or of its GPU instance gi_id into slot, and when slot held
 * the one before, the rates between the two into has[] and value[] (EXP_PROF_* order, DCGM's units).
 * Returns 0 (a failing call leaves values out; a failed read drops the pair), or -ECANCELED when the
 * worker was abandoned.
 */
static int slot_sample(struct worker_arg *w, struct nvml_lib *lib, unsigned i, nvmlDevice_t dev, int gi_id,
                       struct gpm_slot *slot, bool has[EXP_N_PROF], double value[EXP_N_PROF]) {
        nvmlReturn_t rc = NVML_SUCCESS;
        if (!slot->prev) NVCALL(w, CALL_GPM_SAMPLE_ALLOC, (int)i, rc, lib->nvmlGpmSampleAlloc(&slot->prev));
        if (rc != NVML_SUCCESS) slot->prev = NULL;
        if (rc == NVML_SUCCESS && !slot->cur)
                NVCALL(w, CALL_GPM_SAMPLE_ALLOC, (int)i, rc, lib->nvmlGpmSampleAlloc(&slot->cur));
        if (rc != NVML_SUCCESS) {
                slot->cur = NULL;
                return 0;
        }
        if (gi_id < 0)
                NVCALL(w, CALL_GPM_SAMPLE_GET, (int)i, rc, lib->nvmlGpmSampleGet(dev, slot->cur));
        else
                NVCALL(w, CALL_GPM_MIG_SAMPLE_GET, (int)i, rc,
                       lib->nvmlGpmMigSampleGet ? lib->nvmlGpmMigSampleGet(dev, (unsigned)gi_id, slot->cur)
                                                : NVML_ERROR_NOT_SUPPORTED);
        if (rc != NVML_SUCCESS) {
                slot->have_prev = false;
                return 0;
        }
        if (slot->have_prev) {
                /* 13 KiB, as nvml.h declares it (the library reads numMetrics entries). */
                nvmlGpmMetricsGet_t *mg = xcalloc(1, sizeof *mg);
                mg->version = NVML_GPM_METRICS_GET_VERSION;
                mg->numMetrics = EXP_N_PROF;
                mg->sample1 = slot->prev;
                mg->sample2 = slot->cur;
                for (unsigned k = 0; k < EXP_N_PROF; k++) mg->metrics[k].metricId = gpm_metrics[k].metric;
                if (!exp_call_begin(w, CALL_GPM_METRICS_GET, (int)i)) {
                        free(mg);
                        return -ECANCELED;
                }
                rc = lib->nvmlGpmMetricsGet(mg);
                if (!exp_call_end(w, CALL_GPM_METRICS_GET, rc)) {
                        free(mg);
                        return -ECANCELED;
                }
                for (unsigned k = 0; rc == NVML_SUCCESS && k < EXP_N_PROF; k++) {
                        const nvmlGpmMetric_t *m = &mg->metrics[k];
                        if (m->nvmlReturn != NVML_SUCCESS || !isfinite(m->value) || m->value < 0) continue;
                        double v = m->value * gpm_metrics[k].scale;
                        has[k] = true;
                        value[k] = gpm_metrics[k].integer ? round(v) : v;
                }
                free(mg);
        }
        /* This sample is the next one's first. */
        nvmlGpmSample_t t = slot->prev;
        slot->prev = slot->cur;
        slot->cur = t;
        slot->have_prev = true;
        return 0;
}

/* Returns GPU gg's slot for GPU instance gi_id (a free one when it has none yet), or NULL when all are
 * taken. Never fails otherwise. */
static struct gpm_slot *instance_slot(struct gpm_gpu *gg, unsigned gi_id) {
        struct gpm_slot *free_slot = NULL;
        for (unsigned k = 0; k < EXP_MAX_GPU_INSTANCES; k++) {
                struct gpm_slot *s = &gg->inst[k];
                if (s->used && s->gi_id == gi_id) return s;
                if (!s->used && !free_slot) free_slot = s;
        }
        if (free_slot) {
                free_slot->used = true;
                free_slot->gi_id = gi_id;
        }
        return free_slot;
}

/* Reads the PCIe counters of GPU dev from nvmlDeviceGetPcieThroughput (KB/s over 20 ms) into g where
 * GPM gave none. Returns 0, or -ECANCELED when the worker was abandoned. */
static int pcie_throughput(struct worker_arg *w, struct nvml_lib *lib, struct exp_gpu *g, nvmlDevice_t dev) {
        static const struct {
                enum exp_metric m;
                nvmlPcieUtilCounter_t counter;
        } pcie[] = { { EXP_PROF_PCIE_TX_BYTES, NVML_PCIE_UTIL_TX_BYTES },
                     { EXP_PROF_PCIE_RX_BYTES, NVML_PCIE_UTIL_RX_BYTES } };
        for (size_t k = 0; k < ELEMENTSOF(pcie); k++) {
                if (g->has[pcie[k].m] || !lib->nvmlDeviceGetPcieThroughput) continue;
                unsigned kbps = 0;
                nvmlReturn_t rc;
                NVCALL(w, CALL_PCIE_THROUGHPUT, (int)g->index, rc,
                       lib->nvmlDeviceGetPcieThroughput(dev, pcie[k].counter, &kbps));
                if (rc == NVML_SUCCESS) {
                        g->has[pcie[k].m] = true;
                        g->value[pcie[k].m] = (double)kbps * 1024.0;
                }
        }
        return 0;
}

int exp_gpm_sample(struct worker_arg *w, struct nvml_lib *lib, struct exp_gpu *g, nvmlDevice_t dev) {
        struct exporter *e = w->e;
        unsigned i = g->index;
        nvmlReturn_t rc = NVML_ERROR_NOT_SUPPORTED;
        nvmlGpmSupport_t support = { .version = NVML_GPM_SUPPORT_VERSION };
        bool have_api = lib->nvmlGpmQueryDeviceSupport && lib->nvmlGpmSampleAlloc && lib->nvmlGpmSampleFree &&
                        lib->nvmlGpmSampleGet && lib->nvmlGpmMetricsGet;
        if (have_api) NVCALL(w, CALL_GPM_SUPPORT, (int)i, rc, lib->nvmlGpmQueryDeviceSupport(dev, &support));
        bool supported = rc == NVML_SUCCESS && support.isSupportedDevice;

        if (!supported) {
                if (e->gpm[i]) {
                        gpu_release(e->gpm[i], lib);
                        free(e->gpm[i]);
                        e->gpm[i] = NULL;
                }
                /* MIG mode without GPM: no per-instance source, the counters are left out. */
                return g->n_instances ? 0 : pcie_throughput(w, lib, g, dev);
        }
        if (!e->gpm[i]) e->gpm[i] = xcalloc(1, sizeof *e->gpm[i]);
        struct gpm_gpu *gg = e->gpm[i];

        if (g->n_instances == 0) {
                for (unsigned k = 0; k < EXP_MAX_GPU_INSTANCES; k++)
                        if (gg->inst[k].used) slot_release(&gg->inst[k], lib);
                bool has[EXP_N_PROF] = { false };
                double value[EXP_N_PROF] = { 0 };
                int r = slot_sample(w, lib, i, dev, -1, &gg->whole, has, value);
                if (r < 0) return r;
                for (unsigned k = 0; k < EXP_N_PROF; k++)
                        if (has[k]) {
                                g->has[EXP_PROF_FIRST + k] = true;
                                g->value[EXP_PROF_FIRST + k] = value[k];
                        }
                return pcie_throughput(w, lib, g, dev);
        }

        /* MIG mode: one GPM pair per GPU instance, as DCGM reports profiling fields per instance. */
        slot_release(&gg->whole, lib);
        for (unsigned k = 0; k < EXP_MAX_GPU_INSTANCES; k++) gg->inst[k].seen = false;
        for (unsigned n = 0; n < g->n_instances; n++) {
                struct exp_gpu_instance *gi = &g->instances[n];
                struct gpm_slot *slot = instance_slot(gg, gi->id);
                if (!slot) continue;
                slot->seen = true;
                int r = slot_sample(w, lib, i, dev, (int)gi->id, slot, gi->has_prof, gi->prof);
                if (r < 0) return r;
        }
        for (unsigned k = 0; k < EXP_MAX_GPU_INSTANCES; k++)
                if (gg->inst[k].used && !gg->inst[k].seen) slot_release(&gg->inst[k], lib); /* instance gone */
        return 0;
}
