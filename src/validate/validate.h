/* validate.h: `gpunode validate`'s engine: active tests of every GPU through the CUDA driver API, the
 * gpunode.validate/v1 report. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum validate_level { VALIDATE_QUICK, VALIDATE_STANDARD, VALIDATE_LONG };

/* Returns the level's name ("quick", "standard", "long"). */
const char *validate_level_name(enum validate_level l);

/* Parses a level name. Returns 0 with *ret, or -EINVAL. */
int validate_level_parse(const char *s, enum validate_level *ret);

/* Returns the seconds stress.sustained runs at a level (20, 180, 900), before any test scale. */
unsigned validate_stress_seconds(enum validate_level l);

struct validate_options {
        enum validate_level level;
        const char *const *gpus; /* --gpu selectors: an index (the NVML/nvidia-smi one) or a UUID; NULL: all */
        size_t n_gpus;
        const char *cuda_library; /* NULL: libcuda.so.1 where drivers install it (cuda_lib_open) */
        const char *nvml_library; /* NULL: libnvidia-ml.so.1 */
        const char *node;         /* the node's name for the report */
        uint64_t timeout_ms;      /* bound of one test on one GPU (stress.sustained: its duration plus this) */
        bool force;               /* validate GPUs that run compute processes */
        unsigned scale; /* tests only ($GPUNODE_VALIDATE_TEST_SCALE): divides FMA work and the stress time; 0 or 1: none
                         */
        /* A progress line (no newline) per test as it ends, from any worker thread; NULL: none. */
        void (*progress)(void *userdata, const char *line);
        void *userdata;
};

/* What a run gives. */
struct validate_result {
        json_t *report; /* gpunode.validate/v1, always set (on 64/69/70 too: verdict "error" and errors[]) */
        bool abandoned; /* a worker is stuck inside the driver: the caller must not unload anything and should
                         * leave with _exit() after writing the report */
};

/* Exit codes of a run beyond the verdict's 0 (pass), 1 (degraded), 2 (fail). */
#define VALIDATE_EXIT_USAGE       64 /* a --gpu that names no GPU */
#define VALIDATE_EXIT_UNAVAILABLE 69 /* no CUDA library, cuInit failing, no GPU, every GPU refused */
#define VALIDATE_EXIT_INTERNAL    70

/*
 * Runs the level's tests on the selected GPUs: per GPU in its own worker thread (memory.pattern,
 * memory.bandwidth, compute.fma, pcie.h2d, pcie.d2h), then the cross-GPU FMA comparison, p2p.bandwidth
 * per pair, and stress.sustained on all GPUs together. A test that outlives its bound is reported
 * (GPU and test) and its worker abandoned; a sticky CUDA error ends that GPU's tests; the others go on.
 * Returns the exit code (0, 1, 2, or a VALIDATE_EXIT_*) with ret filled (free ret->report with
 * json_decref unless ret->abandoned; the run's memory stays allocated when abandoned).
 */
int validate_run(const struct validate_options *o, struct validate_result *ret);

/* Public specifications a product is judged against (0: not known). */
struct validate_product {
        const char *match;  /* a substring of the CUDA/NVML name */
        double memory_gbps; /* HBM/GDDR bandwidth, GB/s (1e9 bytes) */
        double nvlink_gbps; /* NVLink per GPU, both directions together, GB/s; 0: none */
        double fp32_tflops; /* FP32 non-tensor peak */
};

/* Returns the product whose match the name contains (most specific first), or NULL: unknown, figures
 * without a verdict. */
const struct validate_product *validate_product_lookup(const char *name);

/* Returns the per-direction GB/s of a PCIe link of generation gen and width lanes after line encoding
 * (8b/10b to gen 2, 128b/130b gen 3-5, FLIT gen 6), or 0 when gen or width is not known. */
double validate_pcie_gbps(unsigned gen, unsigned width);

/* Rates value against expected: "pass" at or above pass_frac of it, "warn" at or above warn_frac,
 * "fail" below; "info" when expected is not positive (an unknown product). Returns a static string. */
const char *validate_rate(double value, double expected, double pass_frac, double warn_frac);

/* Writes the report as text for a terminal into a malloc'd string. Returns it (never NULL). */
char *validate_render_text(const json_t *report);

/* Writes the report as Prometheus text (gpunode_validate_* series) into a malloc'd string. Returns it. */
char *validate_render_prometheus(const json_t *report);
