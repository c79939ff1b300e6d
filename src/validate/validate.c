/* validate.c: gpunode validate's runner: a worker thread per GPU (and per pair), each test bounded, the report built as
 * it goes. */
#include "validate/validate.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "basic/util.h"
#include "cuda/cuda_lib.h"
#include "nvml/nvml_lib.h"
#include "validate/kernels_ref.h"

/*
 * Thresholds (one place). Memory: a copy kernel reaches about 90% of the pins' bandwidth on a healthy
 * HBM GPU (refresh, page turns and the read/write turnaround take the rest), so pass at 80% of the
 * specification, warn from 60%, fail below: a GPU at 60-80% is slow, one under 60% is broken (a memory
 * channel or a clock gone). NVLink: the same reasoning and fractions of the per-direction figure (half
 * the total). PCIe: TLP headers and flow control cost 10-15% of the encoded rate, so pass at 70% of
 * the link NVML reports (generation x width), warn from 50%: a link that trained to half its width or
 * one generation lower lands below 50%.
 */
#define MEM_PASS   0.80
#define MEM_WARN   0.60
#define LINK_PASS  0.80
#define LINK_WARN  0.60
#define PCIE_PASS  0.70
#define PCIE_WARN  0.50
#define FLOPS_WARN 0.50 /* FMA throughput only warns: the kernel is a correctness test first */

#define BLOCK           256u
#define BLOCKS_PER_SM   8u
#define FMA_ITERS       8192u
#define FMA_PREFIX      1024u /* outputs every GPU computes (>= 1 SM x 8 blocks x 256 threads / 2): hashed across GPUs */
#define FMA_SAMPLE      32u   /* outputs checked against the CPU reference */
#define BANDWIDTH_BYTES (1ull << 30)
#define PCIE_BYTES      (256ull << 20)
#define P2P_BYTES       (256ull << 20)
#define DEFAULT_BUDGET  60000u

struct level_params {
        const char *name;
        double pattern_fraction; /* of the free memory */
        uint64_t pattern_cap;    /* bytes; 0: none */
        unsigned modes[8], n_modes;
        unsigned reps;
        unsigned stress_s;
};

static const struct level_params levels[] = {
        [VALIDATE_QUICK] = { "quick",
                             0.9,
                             1ull << 30,
                             { PATTERN_WALKING_ONES, PATTERN_ADDRESS, PATTERN_RANDOM },
                             3,
                             5,
                             20 },
        [VALIDATE_STANDARD] = { "standard",
                                0.5,
                                0,
                                { PATTERN_WALKING_ONES, PATTERN_WALKING_ZEROS, PATTERN_ADDRESS, PATTERN_RANDOM },
                                4,
                                10,
                                180 },
        [VALIDATE_LONG] = { "long",
                            0.9,
                            0,
                            { PATTERN_WALKING_ONES, PATTERN_WALKING_ZEROS, PATTERN_ADDRESS, PATTERN_RANDOM,
                              PATTERN_RANDOM, PATTERN_RANDOM, PATTERN_RANDOM },
                            7,
                            20,
                            900 },
};
static const char *const mode_names[] = { "walking-ones", "walking-zeros", "address", "random" };

const char *validate_level_name(enum validate_level l) {
        return levels[l].name;
}

int validate_level_parse(const char *s, enum validate_level *ret) {
        for (size_t i = 0; i < ELEMENTSOF(levels); i++)
                if (streq(s, levels[i].name)) {
                        *ret = (enum validate_level)i;
                        return 0;
                }
        return -EINVAL;
}

unsigned validate_stress_seconds(enum validate_level l) {
        return levels[l].stress_s;
}

/* A worker thread's shared state: what it runs now, since when, for how long at most; its results. */
struct worker {
        pthread_mutex_t lock;
        json_t *tests;       /* the tests it finished, under lock */
        const char *current; /* the test running; NULL between tests */
        uint64_t started_ms, budget_ms;
        bool running, hung, abandoned;
        char label[32]; /* "GPU 3", "pair 0-1" */
};

struct run;

struct gpu {
        struct worker w;
        struct run *run;
        int ordinal, index; /* CUDA ordinal; NVML index (the report's), else the ordinal */
        CUdevice dev;
        CUcontext ctx;
        CUmodule mod;
        CUfunction f_pattern, f_copy, f_fma;
        CUstream stream;
        char name[128], uuid[48], pci[32];
        int sms;
        size_t total;
        const struct validate_product *spec;
        nvmlDevice_t nvml;
        bool selected, refused, ready;
        char *refused_why, *setup_error;
        int dead_rc;           /* a sticky CUresult: the context is dead */
        const char *dead_test; /* where */
        uint64_t fma_hash;     /* of the first FMA_PREFIX outputs; 0: not computed */
        double fma_tflops;
};

struct pair {
        struct worker w;
        struct gpu *a, *b;
        const char *link;
};

struct run {
        const struct validate_options *o;
        const struct level_params *lv;
        struct cuda_lib *cu;
        struct nvml_lib *nv;
        bool nvml_ok;
        unsigned scale;
        uint64_t budget_ms;
        pthread_mutex_t pcie_lock;
        int n;
        struct gpu *gpus;
        int n_pairs;
        struct pair *pairs;
        json_t *errors;
};

/* Runs that left a worker stuck inside the driver: kept reachable, never freed (the worker may still return into them).
 */
static struct run *abandoned_runs[16];
static unsigned n_abandoned;

/* Sends a progress line (printf-style) to the caller. Returns nothing. */
_printf_(2, 3) static void progress(const struct run *r, const char *fmt, ...) {
        if (!r->o->progress) return;
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *line = xvasprintf(fmt, ap);
        va_end(ap);
        r->o->progress(r->o->userdata, line);
}

/* Returns a new test object {id, status "pass", summary "", value null, unit, expected null, ratio null, evidence {}}.
 */
static json_t *test_new(const char *id, const char *unit) {
        return json_pack("{s:s, s:s, s:s, s:n, s:s, s:n, s:n, s:{}}", "id", id, "status", "pass", "summary", "",
                         "value", "unit", unit ? unit : "", "expected", "ratio", "evidence");
}

/* Sets a test's status and its summary (printf-style). Returns nothing. */
_printf_(3, 4) static void test_say(json_t *t, const char *status, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *s = xvasprintf(fmt, ap);
        va_end(ap);
        json_object_set_new(t, "status", json_string(status));
        json_object_set_new(t, "summary", json_string(s));
}

/* Sets value, expected (<= 0: null) and their ratio, then the status from validate_rate(). Returns the status. */
static const char *test_figure(json_t *t, double value, double expected, double pass, double warn) {
        json_object_set_new(t, "value", json_real(round(value * 1000) / 1000));
        if (expected > 0) {
                json_object_set_new(t, "expected", json_real(expected));
                json_object_set_new(t, "ratio", json_real(round(value / expected * 1000) / 1000));
        }
        const char *st = validate_rate(value, expected, pass, warn);
        json_object_set_new(t, "status", json_string(st));
        return st;
}

/* Returns a JSON string "0x%08x" of v. */
static json_t *jhex(uint32_t v) {
        char b[16];
        snprintf(b, sizeof b, "0x%08x", v);
        return json_string(b);
}

/* Adds evidence key = value (stolen). Returns nothing. */
static void ev(json_t *t, const char *key, json_t *value) {
        json_object_set_new(json_object_get(t, "evidence"), key, value);
}

/* Marks the start of test id on w, bounded by budget_ms. Returns nothing. */
static void test_begin(struct worker *w, const char *id, uint64_t budget_ms) {
        pthread_mutex_lock(&w->lock);
        w->current = id;
        w->started_ms = monotonic_ms();
        w->budget_ms = budget_ms;
        pthread_mutex_unlock(&w->lock);
}

/* Records a finished test t (stolen) on w and sends its progress line. When the monitor abandoned the
 * worker meanwhile, drops t and ends the thread (nothing it holds may be touched any more). Returns nothing. */
static void test_end(const struct run *r, struct worker *w, json_t *t) {
        pthread_mutex_lock(&w->lock);
        if (w->abandoned) {
                pthread_mutex_unlock(&w->lock);
                json_decref(t);
                pthread_exit(NULL);
        }
        double secs = (double)(monotonic_ms() - w->started_ms) / 1000;
        w->current = NULL;
        json_object_set_new(t, "duration_s", json_real(round(secs * 1000) / 1000));
        json_array_append(w->tests, t);
        pthread_mutex_unlock(&w->lock);
        progress(r, "%s %-18s %-4s %s (%.1f s)", w->label, json_string_value(json_object_get(t, "id")),
                 json_string_value(json_object_get(t, "status")), json_string_value(json_object_get(t, "summary")),
                 secs);
        json_decref(t);
}

/* Records on t a failed CUDA call: the status fail, the call and the CUresult's name, and when the error
 * is sticky marks g's context dead. Returns false when rc is an error (for `if (!cu_ok(...)) goto out`). */
static bool cu_ok(struct gpu *g, json_t *t, const char *call, CUresult rc) {
        if (rc == CUDA_SUCCESS) return true;
        const char *id = json_string_value(json_object_get(t, "id"));
        bool sticky = cuda_result_is_sticky(rc);
        test_say(t, "fail", "%s failed on GPU %d: %s (%s)%s", call, g->index, cuda_result_name(rc),
                 cuda_result_message(rc), sticky ? "; the GPU's context is dead, its remaining tests are skipped" : "");
        ev(t, "cuda_error", json_string(cuda_result_name(rc)));
        ev(t, "cuda_call", json_string(call));
        if (sticky && !g->dead_rc) {
                g->dead_rc = rc;
                g->dead_test = id;
        }
        return false;
}

#define CU(call_name, expr)                                                                                            \
        do {                                                                                                           \
                if (!cu_ok(g, t, call_name, (expr))) goto out;                                                         \
        } while (0)

/* Returns true (and fills t as skipped) when g's context died in an earlier test. */
static bool skip_dead(struct gpu *g, json_t *t) {
        if (!g->dead_rc) return false;
        test_say(t, "skip", "not run: GPU %d's context died in %s (%s)", g->index, g->dead_test,
                 cuda_result_name(g->dead_rc));
        return true;
}

/* Launches kernel f on g's stream over the grid for grid-stride kernels. Returns the CUresult. */
static CUresult launch(struct gpu *g, CUfunction f, unsigned grid, void **params) {
        return g->run->cu->cuLaunchKernel(f, grid, 1, 1, BLOCK, 1, 1, 0, g->stream, params, NULL);
}

/* Returns the milliseconds between two recorded events after waiting for the second, or a negative
 * CUresult's opposite... kept simple: fills *ms, returns the CUresult. */
static CUresult elapsed_ms(struct gpu *g, CUevent a, CUevent b, double *ms) {
        CUresult rc = g->run->cu->cuEventSynchronize(b);
        if (rc) return rc;
        float f = 0;
        rc = g->run->cu->cuEventElapsedTime(&f, a, b);
        *ms = f;
        return rc;
}

/* Allocates up to want bytes (rounded down to 1 MiB, at least 1 MiB) on g, halving on CUDA_ERROR_OUT_OF_MEMORY
 * up to 4 times. Returns the CUresult with *ret and *ret_bytes. */
static CUresult alloc_upto(struct gpu *g, uint64_t want, CUdeviceptr *ret, uint64_t *ret_bytes) {
        want &= ~((1ull << 20) - 1);
        if (want < (1ull << 20)) want = 1ull << 20;
        CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;
        for (int i = 0; i < 5 && rc == CUDA_ERROR_OUT_OF_MEMORY; i++, want /= 2) {
                rc = g->run->cu->cuMemAlloc(ret, (size_t)want);
                if (rc == CUDA_SUCCESS) *ret_bytes = want;
        }
        return rc;
}

/* Returns NVML's volatile uncorrected ECC count of g, or -1 when NVML cannot tell. */
static long long ecc_uncorrected(struct gpu *g) {
        struct nvml_lib *nv = g->run->nv;
        unsigned long long c = 0;
        if (!g->nvml || !nv->nvmlDeviceGetTotalEccErrors ||
            nv->nvmlDeviceGetTotalEccErrors(g->nvml, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &c) !=
                    NVML_SUCCESS)
                return -1;
        return (long long)c;
}

/* memory.pattern: every pattern of the level written and read back on the GPU over most of the free memory
 * (quick: at most 1 GiB), mismatches counted with their first offsets, ECC before and after. */
static void test_memory_pattern(struct gpu *g) {
        struct run *r = g->run;
        struct cuda_lib *cu = r->cu;
        json_t *t = test_new("memory.pattern", "errors");
        test_begin(&g->w, "memory.pattern", r->budget_ms);
        CUdeviceptr buf = 0, res = 0;
        CUevent e0 = NULL, e1 = NULL;
        if (skip_dead(g, t)) goto out;
        size_t free_b = 0, total_b = 0;
        CU("cuMemGetInfo_v2", cu->cuMemGetInfo(&free_b, &total_b));
        uint64_t want = (uint64_t)((double)free_b * r->lv->pattern_fraction);
        if (r->lv->pattern_cap && want > r->lv->pattern_cap) want = r->lv->pattern_cap;
        uint64_t bytes = 0;
        CU("cuMemAlloc_v2", alloc_upto(g, want, &buf, &bytes));
        CU("cuMemAlloc_v2", cu->cuMemAlloc(&res, KERNEL_PATTERN_RESULT_WORDS * 8));
        CU("cuEventCreate", cu->cuEventCreate(&e0, CU_EVENT_DEFAULT));
        CU("cuEventCreate", cu->cuEventCreate(&e1, CU_EVENT_DEFAULT));
        long long ecc0 = ecc_uncorrected(g);
        uint64_t n = bytes / 4, mismatches = 0;
        unsigned grid = (unsigned)g->sms * BLOCKS_PER_SM;
        json_t *first = json_array(), *modes = json_array();
        ev(t, "first_mismatches", first);
        ev(t, "patterns", modes);
        double ms_total = 0;
        for (unsigned m = 0; m < r->lv->n_modes; m++) {
                unsigned mode = r->lv->modes[m];
                uint32_t seed = mode == PATTERN_RANDOM ? 0x5eed0000u + m : 0;
                json_array_append_new(modes, json_string(mode_names[mode]));
                CU("cuMemsetD32_v2", cu->cuMemsetD32(res, 0, KERNEL_PATTERN_RESULT_WORDS * 2));
                unsigned op = 0;
                void *params[] = { &buf, &n, &mode, &seed, &op, &res };
                CU("cuEventRecord", cu->cuEventRecord(e0, g->stream));
                CU("cuLaunchKernel(gpunode_pattern)", launch(g, g->f_pattern, grid, params));
                op = 1;
                CU("cuLaunchKernel(gpunode_pattern)", launch(g, g->f_pattern, grid, params));
                CU("cuEventRecord", cu->cuEventRecord(e1, g->stream));
                double ms = 0;
                CU("cuEventSynchronize", elapsed_ms(g, e0, e1, &ms));
                ms_total += ms;
                uint64_t out[KERNEL_PATTERN_RESULT_WORDS];
                CU("cuMemcpyDtoH_v2", cu->cuMemcpyDtoH(out, res, sizeof out));
                mismatches += out[0];
                for (uint64_t k = 0; k < out[0] && k < KERNEL_PATTERN_SLOTS && json_array_size(first) < 16; k++) {
                        uint64_t idx = out[1 + 2 * k];
                        uint32_t want_v = kernel_pattern_word(mode, seed, idx), got = (uint32_t)out[2 + 2 * k];
                        json_array_append_new(first,
                                              json_pack("{s:s, s:I, s:o, s:o, s:o}", "pattern", mode_names[mode],
                                                        "offset", (json_int_t)(idx * 4), "expected", jhex(want_v),
                                                        "read", jhex(got), "xor", jhex(want_v ^ got)));
                }
        }
        long long ecc1 = ecc_uncorrected(g);
        ev(t, "bytes", json_integer((json_int_t)bytes));
        ev(t, "free_bytes", json_integer((json_int_t)free_b));
        if (ms_total > 0) ev(t, "gbps", json_real(round((double)bytes * 2 * r->lv->n_modes / (ms_total / 1e3) / 1e9)));
        if (ecc0 >= 0) ev(t, "ecc_uncorrected_before", json_integer(ecc0));
        if (ecc1 >= 0) ev(t, "ecc_uncorrected_after", json_integer(ecc1));
        json_object_set_new(t, "value", json_integer((json_int_t)mismatches));
        json_object_set_new(t, "expected", json_integer(0));
        if (mismatches)
                test_say(
                        t, "fail",
                        "%llu mismatched words over %.2f GiB on GPU %d (first at byte offset %lld): the memory returns "
                        "other bits than were written",
                        (unsigned long long)mismatches, (double)bytes / (1 << 30), g->index,
                        (long long)json_integer_value(json_object_get(json_array_get(first, 0), "offset")));
        else if (ecc0 >= 0 && ecc1 > ecc0)
                test_say(t, "fail", "no mismatch, but %lld new uncorrectable ECC errors during the test on GPU %d",
                         ecc1 - ecc0, g->index);
        else
                test_say(t, "pass", "0 mismatches over %.2f GiB, %u patterns", (double)bytes / (1 << 30),
                         r->lv->n_modes);
out:
        if (e0) cu->cuEventDestroy(e0);
        if (e1) cu->cuEventDestroy(e1);
        if (buf) cu->cuMemFree(buf);
        if (res) cu->cuMemFree(res);
        test_end(r, &g->w, t);
}

/* memory.bandwidth: the copy kernel and cuMemcpyDtoD over up to 1 GiB (a third of the free memory at most),
 * GB/s counting the bytes read and written; the copy checked with the pattern kernel. */
static void test_memory_bandwidth(struct gpu *g) {
        struct run *r = g->run;
        struct cuda_lib *cu = r->cu;
        json_t *t = test_new("memory.bandwidth", "GB/s");
        test_begin(&g->w, "memory.bandwidth", r->budget_ms);
        CUdeviceptr src = 0, dst = 0, res = 0;
        CUevent e0 = NULL, e1 = NULL;
        if (skip_dead(g, t)) goto out;
        size_t free_b = 0, total_b = 0;
        CU("cuMemGetInfo_v2", cu->cuMemGetInfo(&free_b, &total_b));
        uint64_t want = free_b / 3 < BANDWIDTH_BYTES ? free_b / 3 : BANDWIDTH_BYTES, bytes = 0, bytes2 = 0;
        CU("cuMemAlloc_v2", alloc_upto(g, want, &src, &bytes));
        CU("cuMemAlloc_v2", alloc_upto(g, bytes, &dst, &bytes2));
        if (bytes2 < bytes) bytes = bytes2;
        CU("cuMemAlloc_v2", cu->cuMemAlloc(&res, KERNEL_PATTERN_RESULT_WORDS * 8));
        CU("cuEventCreate", cu->cuEventCreate(&e0, CU_EVENT_DEFAULT));
        CU("cuEventCreate", cu->cuEventCreate(&e1, CU_EVENT_DEFAULT));
        unsigned grid = (unsigned)g->sms * BLOCKS_PER_SM, mode = PATTERN_RANDOM, op = 0;
        uint32_t seed = 0xb00b;
        uint64_t words = bytes / 4, units = bytes / 16;
        void *fill[] = { &src, &words, &mode, &seed, &op, &res };
        CU("cuLaunchKernel(gpunode_pattern)", launch(g, g->f_pattern, grid, fill));
        void *cp[] = { &dst, &src, &units };
        CU("cuLaunchKernel(gpunode_copy)", launch(g, g->f_copy, grid, cp)); /* warm-up */
        CU("cuEventRecord", cu->cuEventRecord(e0, g->stream));
        for (unsigned i = 0; i < r->lv->reps; i++) CU("cuLaunchKernel(gpunode_copy)", launch(g, g->f_copy, grid, cp));
        CU("cuEventRecord", cu->cuEventRecord(e1, g->stream));
        double ms_kernel = 0, ms_dtod = 0;
        CU("cuEventSynchronize", elapsed_ms(g, e0, e1, &ms_kernel));
        CU("cuEventRecord", cu->cuEventRecord(e0, g->stream));
        for (unsigned i = 0; i < r->lv->reps; i++)
                CU("cuMemcpyDtoDAsync_v2", cu->cuMemcpyDtoDAsync(dst, src, (size_t)bytes, g->stream));
        CU("cuEventRecord", cu->cuEventRecord(e1, g->stream));
        CU("cuEventSynchronize", elapsed_ms(g, e0, e1, &ms_dtod));
        /* the copy arrived intact: dst holds src's pattern */
        CU("cuMemsetD32_v2", cu->cuMemsetD32(res, 0, KERNEL_PATTERN_RESULT_WORDS * 2));
        op = 1;
        void *check[] = { &dst, &words, &mode, &seed, &op, &res };
        CU("cuLaunchKernel(gpunode_pattern)", launch(g, g->f_pattern, grid, check));
        CU("cuStreamSynchronize", cu->cuStreamSynchronize(g->stream));
        uint64_t out[KERNEL_PATTERN_RESULT_WORDS];
        CU("cuMemcpyDtoH_v2", cu->cuMemcpyDtoH(out, res, sizeof out));
        double moved = 2.0 * (double)bytes * r->lv->reps;
        double k_gbps = ms_kernel > 0 ? moved / (ms_kernel / 1e3) / 1e9 : 0;
        double d_gbps = ms_dtod > 0 ? moved / (ms_dtod / 1e3) / 1e9 : 0;
        double best = k_gbps > d_gbps ? k_gbps : d_gbps;
        double expected = g->spec ? g->spec->memory_gbps : 0;
        ev(t, "bytes", json_integer((json_int_t)bytes));
        ev(t, "copy_kernel_gbps", json_real(round(k_gbps)));
        ev(t, "memcpy_dtod_gbps", json_real(round(d_gbps)));
        ev(t, "copy_mismatches", json_integer((json_int_t)out[0]));
        const char *st = test_figure(t, best, expected, MEM_PASS, MEM_WARN);
        if (out[0])
                test_say(t, "fail", "the copied buffer differs from its source in %llu words on GPU %d",
                         (unsigned long long)out[0], g->index);
        else if (expected > 0)
                test_say(t, st, "%.0f GB/s, %.0f%% of the %.0f GB/s specified for %s (pass >= %.0f%%)", best,
                         best / expected * 100, expected, g->spec->match, MEM_PASS * 100);
        else
                test_say(t, st, "%.0f GB/s (unknown product: no specification to compare)", best);
out:
        if (e0) cu->cuEventDestroy(e0);
        if (e1) cu->cuEventDestroy(e1);
        if (src) cu->cuMemFree(src);
        if (dst) cu->cuMemFree(dst);
        if (res) cu->cuMemFree(res);
        test_end(r, &g->w, t);
}

/* Returns the FNV-1a hash of n floats' bits. */
static uint64_t hash_floats(const float *v, size_t n) {
        uint64_t h = 0xcbf29ce484222325ull;
        const unsigned char *p = (const unsigned char *)v;
        for (size_t i = 0; i < n * 4; i++) h = (h ^ p[i]) * 0x100000001b3ull;
        return h ? h : 1;
}

/* Returns the FMA loop turns per launch at the run's scale. */
static uint32_t fma_iters(const struct run *r) {
        uint32_t it = FMA_ITERS / (r->scale ? r->scale : 1);
        return it ? it : 1;
}

/* compute.fma: the FMA kernel on every SM (8 blocks each), TFLOPS, every output bit-exact: against the
 * CPU reference for a sample, against itself (threads with the same inputs), across GPUs (main thread). */
static void test_compute_fma(struct gpu *g) {
        struct run *r = g->run;
        struct cuda_lib *cu = r->cu;
        json_t *t = test_new("compute.fma", "TFLOPS");
        test_begin(&g->w, "compute.fma", r->budget_ms);
        CUdeviceptr out = 0;
        CUevent e0 = NULL, e1 = NULL;
        float *host = NULL;
        if (skip_dead(g, t)) goto out;
        unsigned grid = (unsigned)g->sms * BLOCKS_PER_SM;
        uint64_t n = (uint64_t)grid * BLOCK;
        uint32_t iters = fma_iters(r);
        CU("cuMemAlloc_v2", cu->cuMemAlloc(&out, n * 4));
        CU("cuEventCreate", cu->cuEventCreate(&e0, CU_EVENT_DEFAULT));
        CU("cuEventCreate", cu->cuEventCreate(&e1, CU_EVENT_DEFAULT));
        void *params[] = { &out, &n, &iters };
        CU("cuEventRecord", cu->cuEventRecord(e0, g->stream));
        for (unsigned i = 0; i < r->lv->reps; i++) CU("cuLaunchKernel(gpunode_fma)", launch(g, g->f_fma, grid, params));
        CU("cuEventRecord", cu->cuEventRecord(e1, g->stream));
        double ms = 0;
        CU("cuEventSynchronize", elapsed_ms(g, e0, e1, &ms));
        host = xmalloc(n * 4);
        CU("cuMemcpyDtoH_v2", cu->cuMemcpyDtoH(host, out, n * 4));
        uint64_t bad_ref = 0, bad_self = 0;
        json_t *first = NULL;
        for (unsigned k = 0; k < FMA_SAMPLE; k++) {
                uint64_t tid = (n - 1) * k / (FMA_SAMPLE - 1);
                float want = kernel_fma_thread(tid, iters);
                if (memcmp(&want, &host[tid], 4) != 0) {
                        bad_ref++;
                        if (!first) {
                                uint32_t wb, gb;
                                memcpy(&wb, &want, 4);
                                memcpy(&gb, &host[tid], 4);
                                first = json_pack("{s:I, s:o, s:o}", "thread", (json_int_t)tid, "expected", jhex(wb),
                                                  "got", jhex(gb));
                        }
                }
        }
        for (uint64_t i = 65536; i < n; i++)
                if (memcmp(&host[i], &host[i & 0xffff], 4) != 0) bad_self++;
        g->fma_hash = hash_floats(host, n < FMA_PREFIX ? n : FMA_PREFIX);
        double tflops = ms > 0 ? (double)n * 2 * KERNEL_FMA_PER_TURN * iters * r->lv->reps / (ms / 1e3) / 1e12 : 0;
        g->fma_tflops = tflops;
        double expected = g->spec ? g->spec->fp32_tflops : 0;
        ev(t, "threads", json_integer((json_int_t)n));
        ev(t, "iterations", json_integer(iters));
        ev(t, "cpu_reference_checked", json_integer(FMA_SAMPLE));
        ev(t, "cpu_reference_mismatches", json_integer((json_int_t)bad_ref));
        ev(t, "self_mismatches", json_integer((json_int_t)bad_self));
        if (first) ev(t, "first_mismatch", first);
        const char *st = test_figure(t, tflops, expected, FLOPS_WARN, FLOPS_WARN);
        if (bad_ref || bad_self)
                test_say(t, "fail",
                         "silent data corruption on GPU %d: %llu of %u sampled FMA results differ from the CPU's IEEE "
                         "fmaf, "
                         "%llu outputs differ from threads with the same inputs",
                         g->index, (unsigned long long)bad_ref, FMA_SAMPLE, (unsigned long long)bad_self);
        else if (expected > 0)
                test_say(t, st, "%.1f TFLOPS FP32 (%.0f%% of the %.1f peak); results bit-exact with the CPU reference",
                         tflops, tflops / expected * 100, expected);
        else
                test_say(t, st, "%.1f TFLOPS FP32; results bit-exact with the CPU reference", tflops);
out:
        free(host);
        if (e0) cu->cuEventDestroy(e0);
        if (e1) cu->cuEventDestroy(e1);
        if (out) cu->cuMemFree(out);
        test_end(r, &g->w, t);
}

/* Fills *gen and *width with the fastest link the GPU and its slot allow (NVML's max generation and width:
 * the current ones drop while the GPU idles). Returns true when NVML answered both. */
static bool pcie_link(struct gpu *g, unsigned *gen, unsigned *width) {
        struct nvml_lib *nv = g->run->nv;
        return g->nvml && nv->nvmlDeviceGetMaxPcieLinkGeneration && nv->nvmlDeviceGetMaxPcieLinkWidth &&
               nv->nvmlDeviceGetMaxPcieLinkGeneration(g->nvml, gen) == NVML_SUCCESS &&
               nv->nvmlDeviceGetMaxPcieLinkWidth(g->nvml, width) == NVML_SUCCESS;
}

/* pcie.h2d and pcie.d2h: pinned host memory to the GPU and back, one GPU at a time (they share the host's
 * memory and root complexes), against the link NVML reports. */
static void test_pcie(struct gpu *g) {
        struct run *r = g->run;
        struct cuda_lib *cu = r->cu;
        static const char *const ids[2] = { "pcie.h2d", "pcie.d2h" };
        for (int dir = 0; dir < 2; dir++) {
                json_t *t = test_new(ids[dir], "GB/s");
                test_begin(&g->w, ids[dir], r->budget_ms);
                CUdeviceptr dbuf = 0;
                void *hbuf = NULL;
                CUevent e0 = NULL, e1 = NULL;
                bool locked = false;
                if (skip_dead(g, t)) goto out;
                struct timespec until = timespec_after_ms(CLOCK_REALTIME, r->budget_ms / 2);
                if (pthread_mutex_timedlock(&r->pcie_lock, &until) != 0) {
                        test_say(t, "skip", "not run: another GPU's PCIe test did not return within %.0f s",
                                 (double)r->budget_ms / 2000);
                        goto out;
                }
                locked = true;
                uint64_t bytes = 0;
                CU("cuMemAlloc_v2", alloc_upto(g, PCIE_BYTES, &dbuf, &bytes));
                CU("cuMemHostAlloc", cu->cuMemHostAlloc(&hbuf, (size_t)bytes, CU_MEMHOSTALLOC_PORTABLE));
                memset(hbuf, 0x5a, (size_t)bytes);
                CU("cuEventCreate", cu->cuEventCreate(&e0, CU_EVENT_DEFAULT));
                CU("cuEventCreate", cu->cuEventCreate(&e1, CU_EVENT_DEFAULT));
                CU("cuEventRecord", cu->cuEventRecord(e0, g->stream));
                for (unsigned i = 0; i < r->lv->reps; i++) {
                        if (dir == 0)
                                CU("cuMemcpyHtoDAsync_v2", cu->cuMemcpyHtoDAsync(dbuf, hbuf, (size_t)bytes, g->stream));
                        else
                                CU("cuMemcpyDtoHAsync_v2", cu->cuMemcpyDtoHAsync(hbuf, dbuf, (size_t)bytes, g->stream));
                }
                CU("cuEventRecord", cu->cuEventRecord(e1, g->stream));
                double ms = 0;
                CU("cuEventSynchronize", elapsed_ms(g, e0, e1, &ms));
                double gbps = ms > 0 ? (double)bytes * r->lv->reps / (ms / 1e3) / 1e9 : 0;
                unsigned gen = 0, width = 0;
                double expected = pcie_link(g, &gen, &width) ? validate_pcie_gbps(gen, width) : 0;
                ev(t, "bytes", json_integer((json_int_t)bytes));
                if (gen) ev(t, "link_generation", json_integer(gen));
                if (width) ev(t, "link_width", json_integer(width));
                const char *st = test_figure(t, gbps, expected, PCIE_PASS, PCIE_WARN);
                if (expected > 0)
                        test_say(t, st, "%.1f GB/s, %.0f%% of the %.1f GB/s a Gen%u x%u link carries (pass >= %.0f%%)",
                                 gbps, gbps / expected * 100, expected, gen, width, PCIE_PASS * 100);
                else
                        test_say(t, st, "%.1f GB/s (NVML did not report the link: no expectation)", gbps);
        out:
                if (locked) pthread_mutex_unlock(&r->pcie_lock);
                if (e0) cu->cuEventDestroy(e0);
                if (e1) cu->cuEventDestroy(e1);
                if (dbuf) cu->cuMemFree(dbuf);
                if (hbuf) cu->cuMemFreeHost(hbuf);
                test_end(r, &g->w, t);
        }
}

/* Makes g's context current on this thread, loads the PTX (once) and creates its stream. Returns true, or
 * false with g->setup_error set (the JIT log when the driver refused the PTX). */
static bool gpu_setup(struct gpu *g) {
        struct cuda_lib *cu = g->run->cu;
        CUresult rc = cu->cuCtxSetCurrent(g->ctx);
        if (rc) {
                g->setup_error = xasprintf("cuCtxSetCurrent: %s", cuda_result_name(rc));
                goto fail;
        }
        if (g->ready) return true;
        char log[4096] = "";
        CUjit_option opts[] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
        void *vals[] = { log, (void *)(uintptr_t)sizeof log };
        rc = cu->cuModuleLoadDataEx(&g->mod, validate_kernels_ptx, 2, opts, vals);
        if (rc) {
                log[sizeof log - 1] = 0;
                g->setup_error = xasprintf("cuModuleLoadDataEx (the embedded PTX): %s (%s)%s%s", cuda_result_name(rc),
                                           cuda_result_message(rc), *log ? ": " : "", log);
                goto fail;
        }
        static const char *const names[] = { "gpunode_pattern", "gpunode_copy", "gpunode_fma" };
        CUfunction *fs[] = { &g->f_pattern, &g->f_copy, &g->f_fma };
        for (int i = 0; i < 3; i++) {
                rc = cu->cuModuleGetFunction(fs[i], g->mod, names[i]);
                if (rc) {
                        g->setup_error = xasprintf("cuModuleGetFunction(%s): %s", names[i], cuda_result_name(rc));
                        goto fail;
                }
        }
        rc = cu->cuStreamCreate(&g->stream, CU_STREAM_NON_BLOCKING);
        if (rc) {
                g->setup_error = xasprintf("cuStreamCreate: %s", cuda_result_name(rc));
                goto fail;
        }
        g->ready = true;
        return true;
fail:
        if (cuda_result_is_sticky(rc)) {
                g->dead_rc = rc;
                g->dead_test = "setup";
        }
        return false;
}

/* The per-GPU worker of the first phase. Returns NULL. */
static void *gpu_worker(void *arg) {
        struct gpu *g = arg;
        test_begin(&g->w, "setup", g->run->budget_ms);
        if (gpu_setup(g)) {
                test_memory_pattern(g);
                test_memory_bandwidth(g);
                test_compute_fma(g);
                test_pcie(g);
        }
        pthread_mutex_lock(&g->w.lock);
        g->w.running = false;
        g->w.current = NULL;
        pthread_mutex_unlock(&g->w.lock);
        return NULL;
}

/* Names of the clocks-event reasons that matter under load. */
static void reasons_json(unsigned long long mask, json_t *arr) {
        static const struct {
                unsigned long long bit;
                const char *name;
        } names[] = {
                { nvmlClocksEventReasonSwPowerCap, "sw_power_cap" },
                { nvmlClocksThrottleReasonHwSlowdown, "hw_slowdown" },
                { nvmlClocksEventReasonSwThermalSlowdown, "sw_thermal_slowdown" },
                { nvmlClocksThrottleReasonHwThermalSlowdown, "hw_thermal_slowdown" },
                { nvmlClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown" },
        };
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (mask & names[i].bit) json_array_append_new(arr, json_string(names[i].name));
}

/* stress.sustained: the FMA and copy kernels back to back for the level's time while NVML is sampled:
 * clocks-event reasons (a hardware slowdown fails, software thermal slowdown warns), temperature against
 * the slowdown threshold, power; every FMA result must stay what compute.fma computed. */
static void *stress_worker(void *arg) {
        struct gpu *g = arg;
        struct run *r = g->run;
        struct cuda_lib *cu = r->cu;
        struct nvml_lib *nv = r->nv;
        uint64_t dur_ms = (uint64_t)r->lv->stress_s * 1000 / (r->scale ? r->scale : 1);
        json_t *t = test_new("stress.sustained", "TFLOPS");
        test_begin(&g->w, "stress.sustained", dur_ms + r->budget_ms);
        CUdeviceptr out = 0, a = 0, b = 0;
        CUevent e0 = NULL, e1 = NULL;
        if (skip_dead(g, t)) goto out;
        CU("cuCtxSetCurrent", cu->cuCtxSetCurrent(g->ctx));
        unsigned grid = (unsigned)g->sms * BLOCKS_PER_SM;
        uint64_t n = (uint64_t)grid * BLOCK, bytes = 0, bytes2 = 0;
        uint32_t iters = fma_iters(r);
        size_t free_b = 0, total_b = 0;
        CU("cuMemGetInfo_v2", cu->cuMemGetInfo(&free_b, &total_b));
        CU("cuMemAlloc_v2", cu->cuMemAlloc(&out, n * 4));
        CU("cuMemAlloc_v2", alloc_upto(g, free_b / 4 < BANDWIDTH_BYTES ? free_b / 4 : BANDWIDTH_BYTES, &a, &bytes));
        CU("cuMemAlloc_v2", alloc_upto(g, bytes, &b, &bytes2));
        if (bytes2 < bytes) bytes = bytes2;
        CU("cuEventCreate", cu->cuEventCreate(&e0, CU_EVENT_DEFAULT));
        CU("cuEventCreate", cu->cuEventCreate(&e1, CU_EVENT_DEFAULT));
        uint64_t units = bytes / 16;
        void *fp[] = { &out, &n, &iters };
        void *cp[] = { &b, &a, &units };
        unsigned long long reasons = 0;
        unsigned temp_max = 0, slowdown = 0, power_max_mw = 0, rounds = 0, samples = 0, drift = 0;
        double fma_ms = 0;
        uint64_t start = monotonic_ms(), next_sample = start;
        float prefix[FMA_PREFIX];
        size_t np = n < FMA_PREFIX ? n : FMA_PREFIX;
        if (g->nvml && nv->nvmlDeviceGetTemperatureThreshold)
                nv->nvmlDeviceGetTemperatureThreshold(g->nvml, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &slowdown);
        for (;;) {
                uint64_t now = monotonic_ms();
                if (g->nvml && now >= next_sample) {
                        unsigned long long m = 0;
                        unsigned v = 0;
                        if (nv->nvmlDeviceGetCurrentClocksEventReasons &&
                            nv->nvmlDeviceGetCurrentClocksEventReasons(g->nvml, &m) == NVML_SUCCESS)
                                reasons |= m;
                        if (nv->nvmlDeviceGetTemperature &&
                            nv->nvmlDeviceGetTemperature(g->nvml, NVML_TEMPERATURE_GPU, &v) == NVML_SUCCESS &&
                            v > temp_max)
                                temp_max = v;
                        if (nv->nvmlDeviceGetPowerUsage && nv->nvmlDeviceGetPowerUsage(g->nvml, &v) == NVML_SUCCESS &&
                            v > power_max_mw)
                                power_max_mw = v;
                        samples++;
                        next_sample = now + (dur_ms / 4 < 1000 ? dur_ms / 4 + 1 : 1000);
                }
                if (now - start >= dur_ms && rounds > 0) break;
                CU("cuEventRecord", cu->cuEventRecord(e0, g->stream));
                CU("cuLaunchKernel(gpunode_fma)", launch(g, g->f_fma, grid, fp));
                CU("cuEventRecord", cu->cuEventRecord(e1, g->stream));
                CU("cuLaunchKernel(gpunode_copy)", launch(g, g->f_copy, grid, cp));
                double ms = 0;
                CU("cuEventSynchronize", elapsed_ms(g, e0, e1, &ms));
                fma_ms += ms;
                CU("cuStreamSynchronize", cu->cuStreamSynchronize(g->stream));
                CU("cuMemcpyDtoH_v2", cu->cuMemcpyDtoH(prefix, out, np * 4));
                if (g->fma_hash && hash_floats(prefix, np) != g->fma_hash) drift++;
                rounds++;
        }
        double tflops = fma_ms > 0 ? (double)n * 2 * KERNEL_FMA_PER_TURN * iters * rounds / (fma_ms / 1e3) / 1e12 : 0;
        json_object_set_new(t, "value", json_real(round(tflops * 1000) / 1000));
        json_t *rs = json_array();
        reasons_json(reasons, rs);
        ev(t, "clocks_event_reasons", rs);
        ev(t, "rounds", json_integer(rounds));
        ev(t, "nvml_samples", json_integer(samples));
        ev(t, "seconds", json_real((double)dur_ms / 1000));
        if (temp_max) ev(t, "temperature_max_c", json_integer(temp_max));
        if (slowdown) ev(t, "temperature_slowdown_c", json_integer(slowdown));
        if (power_max_mw) ev(t, "power_max_w", json_real(power_max_mw / 1000.0));
        ev(t, "fma_result_changes", json_integer(drift));
        const unsigned long long hw = nvmlClocksThrottleReasonHwSlowdown | nvmlClocksThrottleReasonHwThermalSlowdown |
                                      nvmlClocksThrottleReasonHwPowerBrakeSlowdown;
        if (drift)
                test_say(t, "fail",
                         "GPU %d's FMA results changed under load in %u of %u rounds: silent data corruption", g->index,
                         drift, rounds);
        else if (reasons & hw)
                test_say(t, "fail",
                         "hardware slowdown on GPU %d under load (clocks-event reasons 0x%llx): power or cooling",
                         g->index, reasons & hw);
        else if ((reasons & nvmlClocksEventReasonSwThermalSlowdown) || (slowdown && temp_max >= slowdown))
                test_say(t, "warn", "GPU %d slowed down for temperature under load (max %u C, slowdown at %u C)",
                         g->index, temp_max, slowdown);
        else
                test_say(t, "pass", "%u rounds over %.1f s, %.1f TFLOPS sustained, no hardware slowdown%s", rounds,
                         (double)dur_ms / 1000, tflops, g->nvml ? "" : " (NVML absent: clocks not watched)");
out:
        if (e0) cu->cuEventDestroy(e0);
        if (e1) cu->cuEventDestroy(e1);
        if (out) cu->cuMemFree(out);
        if (a) cu->cuMemFree(a);
        if (b) cu->cuMemFree(b);
        test_end(r, &g->w, t);
        pthread_mutex_lock(&g->w.lock);
        g->w.running = false;
        pthread_mutex_unlock(&g->w.lock);
        return NULL;
}

/* Returns the number of active NVLinks NVML reports on g (0: none or NVML absent). */
static unsigned nvlinks_active(struct gpu *g) {
        struct nvml_lib *nv = g->run->nv;
        unsigned n = 0;
        if (!g->nvml || !nv->nvmlDeviceGetNvLinkState) return 0;
        for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
                nvmlEnableState_t on = NVML_FEATURE_DISABLED;
                if (nv->nvmlDeviceGetNvLinkState(g->nvml, l, &on) != NVML_SUCCESS) break;
                if (on == NVML_FEATURE_ENABLED) n++;
        }
        return n;
}

/* One direction of p2p.bandwidth: cuMemcpyPeerAsync from src's memory to dst's on src's stream.
 * Returns the test (new reference). */
static json_t *p2p_direction(struct pair *p, struct gpu *src, struct gpu *dst, bool peer) {
        struct run *r = src->run;
        struct cuda_lib *cu = r->cu;
        struct gpu *g = src; /* for CU() */
        json_t *t = test_new("p2p.bandwidth", "GB/s");
        char dirname[32];
        snprintf(dirname, sizeof dirname, "%d->%d", src->index, dst->index);
        json_object_set_new(t, "direction", json_string(dirname));
        CUdeviceptr s = 0, d = 0;
        CUevent e0 = NULL, e1 = NULL;
        uint64_t bytes = 0, bytes2 = 0;
        size_t free_b = 0, total_b = 0;
        CU("cuCtxSetCurrent", cu->cuCtxSetCurrent(dst->ctx));
        CU("cuMemGetInfo_v2", cu->cuMemGetInfo(&free_b, &total_b));
        if (!cu_ok(dst, t, "cuMemAlloc_v2",
                   alloc_upto(dst, free_b / 4 < P2P_BYTES ? free_b / 4 : P2P_BYTES, &d, &bytes2)))
                goto out;
        CU("cuCtxSetCurrent", cu->cuCtxSetCurrent(src->ctx));
        CU("cuMemAlloc_v2", alloc_upto(src, bytes2, &s, &bytes));
        if (bytes2 < bytes) bytes = bytes2;
        CU("cuEventCreate", cu->cuEventCreate(&e0, CU_EVENT_DEFAULT));
        CU("cuEventCreate", cu->cuEventCreate(&e1, CU_EVENT_DEFAULT));
        CU("cuEventRecord", cu->cuEventRecord(e0, src->stream));
        for (unsigned i = 0; i < r->lv->reps; i++)
                CU("cuMemcpyPeerAsync", cu->cuMemcpyPeerAsync(d, dst->ctx, s, src->ctx, (size_t)bytes, src->stream));
        CU("cuEventRecord", cu->cuEventRecord(e1, src->stream));
        double ms = 0;
        CU("cuEventSynchronize", elapsed_ms(src, e0, e1, &ms));
        double gbps = ms > 0 ? (double)bytes * r->lv->reps / (ms / 1e3) / 1e9 : 0;
        bool nvlink_expected = src->spec && src->spec->nvlink_gbps > 0 && dst->spec == src->spec;
        /* NVML absent ("unknown"): the figure alone says whether the pair reaches its NVLink */
        double expected = nvlink_expected && !streq(p->link, "pcie") ? src->spec->nvlink_gbps / 2 : 0;
        ev(t, "bytes", json_integer((json_int_t)bytes));
        ev(t, "peer_access", json_boolean(peer));
        const char *st = test_figure(t, gbps, expected, LINK_PASS, LINK_WARN);
        if (!peer && nvlink_expected)
                test_say(
                        t, "fail",
                        "GPU %d -> %d: no peer access (cuDeviceCanAccessPeer 0): copies are staged through the host at "
                        "%.1f GB/s where NVLink should carry %.0f GB/s",
                        src->index, dst->index, gbps, src->spec->nvlink_gbps / 2);
        else if (nvlink_expected && streq(p->link, "pcie"))
                test_say(t, "fail", "GPU %d -> %d: %.1f GB/s over %s: the pair does not reach its NVLink", src->index,
                         dst->index, gbps, p->link);
        else if (expected > 0)
                test_say(t, st, "GPU %d -> %d: %.0f GB/s, %.0f%% of NVLink's %.0f GB/s per direction", src->index,
                         dst->index, gbps, gbps / expected * 100, expected);
        else
                test_say(t, st, "GPU %d -> %d: %.1f GB/s over %s%s", src->index, dst->index, gbps, p->link,
                         peer ? "" : " (no peer access: staged through the host)");
out:
        if (e0) cu->cuEventDestroy(e0);
        if (e1) cu->cuEventDestroy(e1);
        if (s) cu->cuMemFree(s);
        if (d) {
                cu->cuCtxSetCurrent(dst->ctx);
                cu->cuMemFree(d);
        }
        return t;
}

/* The worker of one pair: peer access both ways, then both directions. Returns NULL. */
static void *pair_worker(void *arg) {
        struct pair *p = arg;
        struct run *r = p->a->run;
        struct cuda_lib *cu = r->cu;
        int can_ab = 0, can_ba = 0;
        cu->cuDeviceCanAccessPeer(&can_ab, p->a->dev, p->b->dev);
        cu->cuDeviceCanAccessPeer(&can_ba, p->b->dev, p->a->dev);
        bool peer = can_ab && can_ba;
        if (peer) {
                CUresult rc = CUDA_SUCCESS;
                if (cu->cuCtxSetCurrent(p->a->ctx) == CUDA_SUCCESS) rc = cu->cuCtxEnablePeerAccess(p->b->ctx, 0);
                if (rc == CUDA_SUCCESS || rc == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
                        if (cu->cuCtxSetCurrent(p->b->ctx) == CUDA_SUCCESS)
                                rc = cu->cuCtxEnablePeerAccess(p->a->ctx, 0);
                }
                if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) peer = false;
        }
        struct gpu *ends[2][2] = { { p->a, p->b }, { p->b, p->a } };
        for (int i = 0; i < 2; i++) {
                test_begin(&p->w, "p2p.bandwidth", r->budget_ms);
                test_end(r, &p->w, p2p_direction(p, ends[i][0], ends[i][1], peer));
        }
        pthread_mutex_lock(&p->w.lock);
        p->w.running = false;
        pthread_mutex_unlock(&p->w.lock);
        return NULL;
}

/* Starts fn(arg) on a detached thread with w running. Returns 0 or -errno (w not running then). */
static int worker_start(struct worker *w, void *(*fn)(void *), void *arg) {
        pthread_mutex_lock(&w->lock);
        w->running = true;
        w->started_ms = monotonic_ms();
        w->budget_ms = UINT64_MAX / 2;
        pthread_mutex_unlock(&w->lock);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_t th;
        int r = pthread_create(&th, &attr, fn, arg);
        pthread_attr_destroy(&attr);
        if (r != 0) {
                pthread_mutex_lock(&w->lock);
                w->running = false;
                pthread_mutex_unlock(&w->lock);
        }
        return -r;
}

/* Waits until none of the n workers runs; one whose test outlives its budget is marked hung and
 * abandoned, with a failed test naming it. Returns the number abandoned in this wait. */
static unsigned monitor(struct run *r, struct worker **ws, size_t n) {
        unsigned hung = 0;
        for (;;) {
                bool any = false;
                uint64_t now = monotonic_ms();
                for (size_t i = 0; i < n; i++) {
                        struct worker *w = ws[i];
                        pthread_mutex_lock(&w->lock);
                        if (w->running && !w->abandoned && now - w->started_ms > w->budget_ms) {
                                const char *id = w->current ? w->current : "setup";
                                json_t *t = test_new(id, "");
                                test_say(t, "fail",
                                         "%s: %s did not finish within %.0f s: a kernel or copy hangs (the worker was "
                                         "abandoned; reset the GPU before using it)",
                                         w->label, id, (double)w->budget_ms / 1000);
                                ev(t, "hung", json_true());
                                json_array_append_new(w->tests, t);
                                w->abandoned = w->hung = true;
                                w->running = false;
                                hung++;
                                progress(r, "%s %-18s fail hung: no answer within %.0f s", w->label, id,
                                         (double)w->budget_ms / 1000);
                        }
                        any |= w->running;
                        pthread_mutex_unlock(&w->lock);
                }
                if (!any) return hung;
                struct timespec ts = { 0, 20 * 1000 * 1000 };
                nanosleep(&ts, NULL);
        }
}

/* Returns the worst status of tests: 2 fail, 1 warn, 0 otherwise. */
static int worst(json_t *tests) {
        int v = 0;
        size_t i;
        json_t *t;
        json_array_foreach(tests, i, t) {
                const char *s = json_string_value(json_object_get(t, "status"));
                if (streq_ptr(s, "fail")) v = 2;
                if (streq_ptr(s, "warn") && v < 1) v = 1;
        }
        return v;
}

static const char *const verdict_names[] = { "pass", "degraded", "fail" };

/* Formats CUuuid bytes as "GPU-8-4-4-4-12". Returns nothing. */
static void format_uuid(const CUuuid *u, char *out, size_t len) {
        const unsigned char *b = (const unsigned char *)u->bytes;
        snprintf(out, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
                 b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* Parses "DDDD:BB:DD.F" (any number of domain digits). Returns true with the three numbers. */
static bool parse_pci(const char *s, unsigned *dom, unsigned *bus, unsigned *dev) {
        return sscanf(s, "%x:%x:%x", dom, bus, dev) == 3;
}

/* Opens NVML when it answers and maps each GPU to its NVML handle and index by PCI address. Returns nothing. */
static void nvml_map(struct run *r) {
        char *err = NULL;
        if (nvml_lib_open(r->o->nvml_library, &r->nv, &err) < 0) {
                json_array_append_new(
                        r->errors, json_pack("{s:s, s:s}", "source", "nvml", "error", err ? err : "cannot load NVML"));
                free(err);
                r->nv = NULL;
                return;
        }
        free(err);
        nvmlReturn_t rc = r->nv->nvmlInit();
        if (rc != NVML_SUCCESS) {
                json_array_append_new(r->errors,
                                      json_pack("{s:s, s:s}", "source", "nvml", "error", nvml_return_name(rc)));
                return;
        }
        r->nvml_ok = true;
        unsigned count = 0;
        if (r->nv->nvmlDeviceGetCount(&count) != NVML_SUCCESS) return;
        for (unsigned i = 0; i < count; i++) {
                nvmlDevice_t d;
                nvmlPciInfo_t pci = { 0 };
                if (r->nv->nvmlDeviceGetHandleByIndex(i, &d) != NVML_SUCCESS || !r->nv->nvmlDeviceGetPciInfo ||
                    r->nv->nvmlDeviceGetPciInfo(d, &pci) != NVML_SUCCESS)
                        continue;
                for (int k = 0; k < r->n; k++) {
                        unsigned dom, bus, dev;
                        if (parse_pci(r->gpus[k].pci, &dom, &bus, &dev) && dom == pci.domain && bus == pci.bus &&
                            dev == pci.device) {
                                r->gpus[k].nvml = d;
                                r->gpus[k].index = (int)i;
                        }
                }
        }
}

/* Refuses g when NVML shows compute processes on it (unless --force) or MIG mode on. Returns nothing. */
static void check_refusal(struct run *r, struct gpu *g) {
        if (!g->nvml) return;
        struct nvml_lib *nv = r->nv;
        unsigned cur = 0, pend = 0;
        if (nv->nvmlDeviceGetMigMode && nv->nvmlDeviceGetMigMode(g->nvml, &cur, &pend) == NVML_SUCCESS && cur == 1) {
                g->refused = true;
                g->refused_why =
                        xstrdup("MIG mode is enabled: gpunode validates whole GPUs; disable MIG (nvidia-smi -i "
                                "INDEX -mig 0) to validate it, MIG instances are not validated one by one");
                return;
        }
        nvmlProcessInfo_t procs[64];
        unsigned n = ELEMENTSOF(procs);
        nvmlReturn_t rc = nv->nvmlDeviceGetComputeRunningProcesses
                                  ? nv->nvmlDeviceGetComputeRunningProcesses(g->nvml, &n, procs)
                                  : NVML_ERROR_NOT_SUPPORTED;
        if ((rc == NVML_SUCCESS && n > 0) || rc == NVML_ERROR_INSUFFICIENT_SIZE) {
                if (r->o->force) return;
                g->refused = true;
                g->refused_why =
                        xasprintf("%u compute process%s run on GPU %d (first pid %u): validation needs the whole "
                                  "GPU; stop them or pass --force",
                                  rc == NVML_SUCCESS ? n : 64, n == 1 ? "" : "es", g->index,
                                  rc == NVML_SUCCESS ? procs[0].pid : 0);
        }
}

/* Applies the --gpu selectors. Returns 0, or -EINVAL with *ret_error naming the selector that matches no GPU. */
static int select_gpus(struct run *r, char **ret_error) {
        if (!r->o->n_gpus) {
                for (int k = 0; k < r->n; k++) r->gpus[k].selected = true;
                return 0;
        }
        for (size_t s = 0; s < r->o->n_gpus; s++) {
                const char *sel = r->o->gpus[s];
                bool hit = false;
                uint64_t idx;
                bool numeric = parse_u64(sel, 10, &idx) == 0;
                for (int k = 0; k < r->n; k++)
                        if ((numeric && (uint64_t)r->gpus[k].index == idx) || strcasecmp(sel, r->gpus[k].uuid) == 0) {
                                r->gpus[k].selected = hit = true;
                        }
                if (!hit) {
                        *ret_error = xasprintf("--gpu %s: no such GPU (%d GPU%s: indexes 0-%d, or a GPU-... UUID)", sel,
                                               r->n, r->n == 1 ? "" : "s", r->n - 1);
                        return -EINVAL;
                }
        }
        return 0;
}

/* Returns the report's skeleton: schema, node, level, time; verdict "error" until the run sets it. */
static json_t *report_new(const struct validate_options *o, time_t start) {
        char when[32];
        struct tm tm;
        gmtime_r(&start, &tm);
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
        return json_pack("{s:s, s:s, s:s, s:s, s:s, s:f, s:[], s:[], s:[]}", "schema", "gpunode.validate/v1", "node",
                         o->node ? o->node : "unknown", "level", levels[o->level].name, "verdict", "error", "time",
                         when, "duration_s", 0.0, "gpus", "pairs", "errors");
}

/* Ends a run that could not start: the error in errors[], the code returned. */
static int cannot_run(json_t *rep, const char *source, const char *error, int code) {
        json_array_append_new(json_object_get(rep, "errors"),
                              json_pack("{s:s, s:s}", "source", source, "error", error));
        return code;
}

/* Frees a run whose workers all returned. Returns nothing. */
static void run_free(struct run *r) {
        for (int k = 0; k < r->n; k++) {
                struct gpu *g = &r->gpus[k];
                if (g->ctx) {
                        r->cu->cuCtxSetCurrent(g->ctx);
                        if (g->stream) r->cu->cuStreamDestroy(g->stream);
                        if (g->mod) r->cu->cuModuleUnload(g->mod);
                        r->cu->cuCtxSetCurrent(NULL);
                        r->cu->cuDevicePrimaryCtxRelease(g->dev);
                }
                json_decref(g->w.tests);
                pthread_mutex_destroy(&g->w.lock);
                free(g->refused_why);
                free(g->setup_error);
        }
        for (int k = 0; k < r->n_pairs; k++) {
                json_decref(r->pairs[k].w.tests);
                pthread_mutex_destroy(&r->pairs[k].w.lock);
        }
        free(r->gpus);
        free(r->pairs);
        json_decref(r->errors);
        if (r->nv) {
                if (r->nvml_ok) r->nv->nvmlShutdown();
                nvml_lib_unref(r->nv);
        }
        cuda_lib_unref(r->cu);
        pthread_mutex_destroy(&r->pcie_lock);
        free(r);
}

/* Copies a GPU's entry into the report's gpus[]; returns its verdict (0-2). */
static int report_gpu(json_t *arr, struct gpu *g) {
        pthread_mutex_lock(&g->w.lock);
        json_t *tests = json_deep_copy(g->w.tests);
        pthread_mutex_unlock(&g->w.lock);
        int v = worst(tests);
        const char *verdict = verdict_names[v];
        if (g->refused) verdict = "refused";
        if (g->w.hung) v = 2, verdict = "fail";
        json_t *o =
                json_pack("{s:i, s:i, s:s, s:s, s:s, s:s, s:o}", "index", g->index, "cuda_ordinal", g->ordinal, "uuid",
                          g->uuid, "pci_bus_id", g->pci, "name", g->name, "verdict", verdict, "tests", tests);
        if (g->refused_why) json_object_set_new(o, "refused", json_string(g->refused_why));
        if (g->setup_error) json_object_set_new(o, "setup_error", json_string(g->setup_error));
        if (g->dead_rc)
                json_object_set_new(o, "context_dead",
                                    json_pack("{s:s, s:s}", "error", cuda_result_name(g->dead_rc), "test",
                                              g->dead_test ? g->dead_test : "setup"));
        if (!g->spec)
                json_object_set_new(o, "product", json_null());
        else
                json_object_set_new(o, "product", json_string(g->spec->match));
        json_array_append_new(arr, o);
        return g->refused ? 1 : v;
}

int validate_run(const struct validate_options *o, struct validate_result *ret) {
        time_t start = time(NULL);
        uint64_t t0 = monotonic_ms();
        json_t *rep = report_new(o, start);
        *ret = (struct validate_result){ .report = rep };
        struct run *r = xcalloc(1, sizeof *r);
        r->o = o;
        r->lv = &levels[o->level];
        r->scale = o->scale ? o->scale : 1;
        r->budget_ms = o->timeout_ms ? o->timeout_ms : DEFAULT_BUDGET;
        r->errors = json_array();
        pthread_mutex_init(&r->pcie_lock, NULL);
        int code = 0;

        /* nvidia-smi's order (PCI bus) rather than CUDA's default fastest-first, so indexes agree */
        setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
        char *err = NULL;
        if (cuda_lib_open(o->cuda_library, &r->cu, &err) < 0) {
                code = cannot_run(rep, "cuda", err ? err : "cannot load libcuda.so.1", VALIDATE_EXIT_UNAVAILABLE);
                free(err);
                goto done;
        }
        json_object_set_new(rep, "cuda_library", json_string(r->cu->path));
        CUresult rc = r->cu->cuInit(0);
        if (rc) {
                _cleanup_free_ char *m = xasprintf("cuInit: %s (%s)", cuda_result_name(rc), cuda_result_message(rc));
                code = cannot_run(rep, "cuda", m, VALIDATE_EXIT_UNAVAILABLE);
                goto done;
        }
        int version = 0, count = 0;
        if (r->cu->cuDriverGetVersion(&version) == CUDA_SUCCESS)
                json_object_set_new(rep, "cuda_driver_version", json_integer(version));
        rc = r->cu->cuDeviceGetCount(&count);
        if (rc || count <= 0) {
                _cleanup_free_ char *m =
                        rc ? xasprintf("cuDeviceGetCount: %s", cuda_result_name(rc)) : xstrdup("CUDA sees no GPU");
                code = cannot_run(rep, "cuda", m, VALIDATE_EXIT_UNAVAILABLE);
                goto done;
        }
        r->n = count;
        r->gpus = xcalloc((size_t)count, sizeof *r->gpus);
        for (int k = 0; k < count; k++) {
                struct gpu *g = &r->gpus[k];
                g->run = r;
                g->ordinal = g->index = k;
                pthread_mutex_init(&g->w.lock, NULL);
                g->w.tests = json_array();
                CUuuid u = { { 0 } };
                if ((rc = r->cu->cuDeviceGet(&g->dev, k)) ||
                    (rc = r->cu->cuDeviceGetName(g->name, sizeof g->name, g->dev)) ||
                    (rc = r->cu->cuDeviceGetUuid(&u, g->dev)) ||
                    (rc = r->cu->cuDeviceGetPCIBusId(g->pci, sizeof g->pci, g->dev)) ||
                    (rc = r->cu->cuDeviceGetAttribute(&g->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, g->dev)) ||
                    (rc = r->cu->cuDeviceTotalMem(&g->total, g->dev))) {
                        g->setup_error = xasprintf("describing CUDA device %d: %s", k, cuda_result_name(rc));
                        continue;
                }
                format_uuid(&u, g->uuid, sizeof g->uuid);
                if (g->sms <= 0) g->sms = 1;
                g->spec = validate_product_lookup(g->name);
        }
        nvml_map(r);
        if (select_gpus(r, &err) < 0) {
                code = cannot_run(rep, "options", err, VALIDATE_EXIT_USAGE);
                free(err);
                goto done;
        }

        /* phase 1: each GPU alone, all at once */
        struct worker **ws = xcalloc((size_t)count + 1, sizeof *ws);
        size_t nw = 0;
        int tested = 0;
        for (int k = 0; k < count; k++) {
                struct gpu *g = &r->gpus[k];
                snprintf(g->w.label, sizeof g->w.label, "GPU %d", g->index);
                if (!g->selected || g->setup_error) continue;
                check_refusal(r, g);
                if (g->refused) {
                        progress(r, "%s refused: %s", g->w.label, g->refused_why);
                        continue;
                }
                rc = r->cu->cuDevicePrimaryCtxRetain(&g->ctx, g->dev);
                if (rc) {
                        g->setup_error = xasprintf("cuDevicePrimaryCtxRetain: %s (%s)", cuda_result_name(rc),
                                                   cuda_result_message(rc));
                        g->ctx = NULL;
                        continue;
                }
                if (worker_start(&g->w, gpu_worker, g) == 0) {
                        ws[nw++] = &g->w;
                        tested++;
                }
        }
        unsigned hung = monitor(r, ws, nw);
        for (int k = 0; k < count; k++) {
                struct gpu *g = &r->gpus[k];
                if (g->selected && g->setup_error && !g->w.hung) {
                        json_t *t = test_new("setup", "");
                        test_say(t, g->dead_rc ? "fail" : "fail", "GPU %d cannot run tests: %s", g->index,
                                 g->setup_error);
                        pthread_mutex_lock(&g->w.lock);
                        json_array_append_new(g->w.tests, t);
                        pthread_mutex_unlock(&g->w.lock);
                }
        }

        /* the FMA results of every GPU must agree (the majority hash; a GPU alone has only the CPU's word) */
        for (int k = 0; k < count; k++) {
                struct gpu *g = &r->gpus[k];
                if (!g->fma_hash || g->w.hung) continue;
                int same = 0, others = 0;
                for (int j = 0; j < count; j++)
                        if (j != k && r->gpus[j].fma_hash && !r->gpus[j].w.hung) {
                                others++;
                                same += r->gpus[j].fma_hash == g->fma_hash;
                        }
                if (others > 0 && same * 2 < others) {
                        pthread_mutex_lock(&g->w.lock);
                        size_t i;
                        json_t *t;
                        json_array_foreach(g->w.tests, i, t) if (streq_ptr(json_string_value(json_object_get(t, "id")),
                                                                           "compute.fma")) {
                                json_object_set_new(t, "status", json_string("fail"));
                                json_object_set_new(
                                        t, "summary",
                                        json_sprintf("GPU %d's FMA results differ from %d of the %d other GPUs "
                                                     "(the same kernel, the same inputs): silent data corruption",
                                                     g->index, others - same, others));
                                json_object_set_new(json_object_get(t, "evidence"), "cross_gpu_mismatch", json_true());
                        }
                        pthread_mutex_unlock(&g->w.lock);
                }
        }

        /* phase 2: every pair of GPUs that finished phase 1 alive, one pair at a time */
        r->pairs = xcalloc((size_t)count * (size_t)count / 2 + 1, sizeof *r->pairs);
        for (int a = 0; a < count; a++)
                for (int b = a + 1; b < count; b++) {
                        struct gpu *ga = &r->gpus[a], *gb = &r->gpus[b];
                        if (!ga->ready || !gb->ready || ga->w.hung || gb->w.hung || ga->dead_rc || gb->dead_rc)
                                continue;
                        struct pair *p = &r->pairs[r->n_pairs++];
                        p->a = ga;
                        p->b = gb;
                        pthread_mutex_init(&p->w.lock, NULL);
                        p->w.tests = json_array();
                        snprintf(p->w.label, sizeof p->w.label, "pair %d-%d", ga->index, gb->index);
                        unsigned la = nvlinks_active(ga), lb = nvlinks_active(gb);
                        p->link = la && lb ? "nvlink" : r->nvml_ok && ga->nvml && gb->nvml ? "pcie" : "unknown";
                        struct worker *pw = &p->w;
                        if (worker_start(pw, pair_worker, p) == 0) hung += monitor(r, &pw, 1);
                }

        /* phase 3: every live GPU under load at once */
        nw = 0;
        for (int k = 0; k < count; k++) {
                struct gpu *g = &r->gpus[k];
                if (!g->ready || g->w.hung) continue;
                if (worker_start(&g->w, stress_worker, g) == 0) ws[nw++] = &g->w;
        }
        hung += monitor(r, ws, nw);
        free(ws);

        /* the report */
        int verdict = 0;
        json_t *gpus = json_object_get(rep, "gpus");
        for (int k = 0; k < count; k++)
                if (r->gpus[k].selected) {
                        int v = report_gpu(gpus, &r->gpus[k]);
                        if (v > verdict) verdict = v;
                }
        json_t *pairs = json_object_get(rep, "pairs");
        for (int k = 0; k < r->n_pairs; k++) {
                struct pair *p = &r->pairs[k];
                pthread_mutex_lock(&p->w.lock);
                json_t *tests = json_deep_copy(p->w.tests);
                pthread_mutex_unlock(&p->w.lock);
                int v = worst(tests);
                if (p->w.hung) v = 2;
                if (v > verdict) verdict = v;
                json_array_append_new(pairs, json_pack("{s:i, s:i, s:s, s:s, s:o}", "a", p->a->index, "b", p->b->index,
                                                       "link", p->link, "verdict", verdict_names[v], "tests", tests));
        }
        json_array_extend(json_object_get(rep, "errors"), r->errors);
        json_array_clear(r->errors);
        if (tested == 0) {
                code = cannot_run(rep, "gpus", "no GPU could be tested (all refused or failing)",
                                  VALIDATE_EXIT_UNAVAILABLE);
                goto done;
        }
        json_object_set_new(rep, "verdict", json_string(verdict_names[verdict]));
        code = verdict;
        if (hung) {
                ret->abandoned = true;
                if (n_abandoned < ELEMENTSOF(abandoned_runs)) abandoned_runs[n_abandoned++] = r;
                r = NULL; /* a stuck worker may return into it: never freed */
        }
done:
        if (r) json_array_extend(json_object_get(rep, "errors"), r->errors);
        json_object_set_new(rep, "duration_s", json_real(round((double)(monotonic_ms() - t0) / 10) / 100));
        if (r) run_free(r);
        return code;
}
