/* exporter.h: `gpunode exporter`: the sample model, the renderer, the sampler and the HTTP server. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "nvml/nvml_lib.h"
#include "basic/util.h"

/* ---- the metrics: DCGM-exporter's default counters that NVML can supply ---- */

enum exp_metric {
        EXP_SM_CLOCK,
        EXP_MEM_CLOCK,
        EXP_MEMORY_TEMP,
        EXP_GPU_TEMP,
        EXP_POWER_USAGE,
        EXP_TOTAL_ENERGY,
        EXP_PCIE_REPLAY,
        EXP_GPU_UTIL,
        EXP_MEM_COPY_UTIL,
        EXP_ENC_UTIL,
        EXP_DEC_UTIL,
        EXP_XID_ERRORS,
        EXP_FB_FREE,
        EXP_FB_USED,
        EXP_FB_RESERVED,
        EXP_NVLINK_BANDWIDTH_TOTAL,
        EXP_UNCORRECTABLE_REMAPPED_ROWS,
        EXP_CORRECTABLE_REMAPPED_ROWS,
        EXP_ROW_REMAP_FAILURE,
        /* Opt-in (served only when a collectors CSV names them): clock slowdowns, PCIe link, NVLink errors. */
        EXP_CLOCK_THROTTLE_REASONS,
        EXP_POWER_VIOLATION,
        EXP_THERMAL_VIOLATION,
        EXP_PCIE_LINK_GEN,
        EXP_PCIE_LINK_WIDTH,
        EXP_NVLINK_CRC_FLIT_ERRORS,
        EXP_NVLINK_CRC_DATA_ERRORS,
        EXP_NVLINK_REPLAY_ERRORS,
        EXP_NVLINK_RECOVERY_ERRORS,
        /* Profiling counters (DCGM's profiling module; here NVML GPM, and PCIe throughput): gpm.c. */
        EXP_PROF_GR_ENGINE_ACTIVE,
        EXP_PROF_PIPE_TENSOR_ACTIVE,
        EXP_PROF_DRAM_ACTIVE,
        EXP_PROF_PCIE_TX_BYTES,
        EXP_PROF_PCIE_RX_BYTES,
        EXP_N_METRICS,
};

struct exp_metric_def {
        const char *name; /* DCGM field name, e.g. "DCGM_FI_DEV_SM_CLOCK" */
        const char *type; /* "gauge" or "counter", as in dcgm-exporter's default-counters.csv */
        const char *help; /* the csv's help text, verbatim */
        bool is_double;   /* DCGM_FT_DOUBLE: rendered "%f"; else DCGM_FT_INT64: "%d" */
        bool opt_in;      /* not in dcgm-exporter's default set: served only when a collectors CSV names it */
};

/* Returns the definition of metric m (m < EXP_N_METRICS). Never fails. */
const struct exp_metric_def *exp_metric_def(enum exp_metric m);

/* Returns the index in the table of the metric named name ("DCGM_FI_DEV_SM_CLOCK"), or -ENOENT. Never
 * fails otherwise. */
int exp_metric_by_name(const char *name);

/* The longest CSV help text kept (bytes, escaped for # HELP). */
#define EXP_HELP_MAX 256

/*
 * Which DCGM counters the page holds, with whose help text: what a collectors CSV in dcgm-exporter's
 * format (-f/--collectors) names. Checked at render time, once per counter per sample; the sampler
 * still reads every default counter, and the opt-in ones only when the CSV names them.
 * Zero-initialised: not filtered (every default counter, the table's help; no opt-in counter).
 */
struct exp_counters {
        bool filtered;                          /* a CSV was given: only the enabled counters */
        bool enabled[EXP_N_METRICS];            /* named in the CSV */
        bool driver_label;                      /* DCGM_FI_DRIVER_VERSION named (type label) */
        char help[EXP_N_METRICS][EXP_HELP_MAX]; /* the CSV's help, escaped; "": the table's */
};

/*
 * Parses a collectors CSV in dcgm-exporter's format (text[0..len), file named in errors): lines
 * "FIELD, TYPE, HELP" (fields trimmed of spaces, double-quoted fields allowed), '#' comment lines and
 * blank lines. Every field must be one of the table's counters with its own type (gauge, counter), or
 * DCGM_FI_DRIVER_VERSION with type label. Returns 0 and *ret, or -EINVAL with a malloc'd sentence in
 * *ret_error naming the file and line: an unknown counter ("counter X in FILE line N is not one
 * gpunode serves; it serves: ..."), a type that differs, a field twice, not three fields, a help
 * text too long or holding control characters.
 */
int exp_counters_parse(const char *text, size_t len, const char *file, struct exp_counters *ret, char **ret_error);

/* NVML calls the sampler makes, for the error counter's `call` label. */
enum exp_call {
        CALL_LIBRARY_OPEN, /* dlopen of libnvidia-ml.so.1 (not an NVML call, counted alike) */
        CALL_INIT,
        CALL_SHUTDOWN,
        CALL_DRIVER_VERSION,
        CALL_DEVICE_COUNT,
        CALL_HANDLE,
        CALL_NAME,
        CALL_UUID,
        CALL_PCI_INFO,
        CALL_CLOCK_INFO,
        CALL_FIELD_VALUES,
        CALL_TEMPERATURE,
        CALL_POWER_USAGE,
        CALL_ENERGY,
        CALL_PCIE_REPLAY,
        CALL_UTILIZATION,
        CALL_ENCODER_UTIL,
        CALL_DECODER_UTIL,
        CALL_MEMORY_INFO,
        CALL_REMAPPED_ROWS,
        CALL_EVENT_SET_CREATE,
        CALL_REGISTER_EVENTS,
        CALL_EVENT_SET_WAIT,
        CALL_MIG_MODE,
        CALL_MIG_MAX_COUNT,
        CALL_MIG_HANDLE,
        CALL_GPU_INSTANCE_ID,
        CALL_ATTRIBUTES,
        CALL_GPU_INSTANCE_BY_ID,
        CALL_GPU_INSTANCE_INFO,
        CALL_GPU_INSTANCE_PROFILE_INFO,
        CALL_PCIE_THROUGHPUT,
        CALL_GPM_SUPPORT,
        CALL_GPM_SAMPLE_ALLOC,
        CALL_GPM_SAMPLE_GET,
        CALL_GPM_MIG_SAMPLE_GET,
        CALL_GPM_METRICS_GET,
        CALL_CLOCK_REASONS,
        CALL_VIOLATION_STATUS,
        CALL_PCIE_LINK_GEN,
        CALL_PCIE_LINK_WIDTH,
        EXP_N_CALLS,
};

/* Returns the NVML name of call c ("nvmlDeviceGetPowerUsage"). Never fails. */
const char *exp_call_name(enum exp_call c);

/* The profiling counters, EXP_PROF_FIRST .. EXP_N_METRICS - 1 (per GPU instance on MIG). */
#define EXP_PROF_FIRST EXP_PROF_GR_ENGINE_ACTIVE
#define EXP_N_PROF     (EXP_N_METRICS - EXP_PROF_FIRST)

/* ---- one sample ---- */

/* The most GPU instances kept per GPU (NVML allows 7 on A100/H100/B200, 8 slices at most). */
#define EXP_MAX_GPU_INSTANCES 16
/* The most containers whose labels one GPU or GPU instance carries (time-slicing replicas): each
 * repeats every series of the GPU, so a hostile or huge List cannot blow the page up. */
#define EXP_MAX_HOLDERS 128

/*
 * A container that holds a GPU or GPU instance (the kubelet's pod-resources List): its labels,
 * escaped and ready to append after DCGM_FI_DRIVER_VERSION. dcgm-exporter renders these
 * "attributes" sorted by key, so the Xid labels (err_code, err_msg) go between container and
 * namespace: text[0..split) is `,container="C"`, text[split..] `,namespace="N",pod="P"`.
 */
struct exp_holder {
        char *text;
        size_t split;
};

/* The containers holding one GPU or GPU instance; none: its series carry no pod labels. */
struct exp_holders {
        struct exp_holder *v;
        unsigned n;
};

/* A MIG device (a compute instance) of a GPU in MIG mode, for matching the device plugin's MIG ids. */
struct exp_mig_device {
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE]; /* "MIG-..." */
        unsigned instance;                          /* its GPU instance: an index into exp_gpu.instances */
};

/*
 * One MIG GPU instance, as dcgm-exporter reports it (one entity per GPU instance, whatever its compute
 * instances): its series carry the parent GPU's labels plus GPU_I_PROFILE and GPU_I_ID, the
 * framebuffer of the instance, and the parent GPU's other values.
 */
struct exp_gpu_instance {
        unsigned id;      /* nvmlDeviceGetGpuInstanceId: GPU_I_ID */
        char profile[32]; /* GPU_I_PROFILE, go-nvlib's name ("3g.40gb", "1g.10gb+me"); "" unknown */
        bool has_fb, has_fb_reserved;
        double fb_free, fb_used, fb_reserved; /* MiB, from the MIG device's nvmlDeviceGetMemoryInfo */
        /* The instance's own profiling counters (nvmlGpmMigSampleGet), EXP_PROF_* - EXP_PROF_FIRST. */
        bool has_prof[EXP_N_PROF];
        double prof[EXP_N_PROF];
        struct exp_holders holders; /* the containers holding one of its MIG devices */
};

struct exp_gpu {
        unsigned index;
        bool identified; /* uuid, name and pci_bus_id known (this sample or an earlier one) */
        bool sampled;    /* values below were read in this sample */
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
        char pci_bus_id[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
        char problem[128]; /* empty when sampled; else what is missing and why */
        bool has[EXP_N_METRICS];
        double value[EXP_N_METRICS]; /* integers are exact below 2^53 */
        /* MIG mode enabled and GPU instances found: the GPU's series are rendered once per instance
         * (as dcgm-exporter's default "flex" device mode does), none for the GPU itself. */
        unsigned n_instances;
        struct exp_gpu_instance instances[EXP_MAX_GPU_INSTANCES];
        /* Pod attribution: the containers holding the GPU as a whole, and its MIG devices (read only
         * when attribution is on), both freed by exp_sample_clear. */
        struct exp_holders holders;
        struct exp_mig_device *mig_devices;
        unsigned n_mig_devices;
};

struct exp_sample {
        bool nvml_up;           /* the library loaded, nvmlInit and nvmlDeviceGetCount succeeded */
        char nvml_problem[192]; /* when !nvml_up: what failed */
        char driver_version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
        unsigned n_gpus;
        struct exp_gpu *gpus;
        double duration_seconds; /* how long the sample took */
        bool partial;            /* some GPUs were skipped because a call on them is stuck */
};

/* Frees what s holds (not s): its GPUs with their holders and MIG devices. Returns nothing. */
void exp_sample_clear(struct exp_sample *s);

struct podres_list;

/*
 * Pod attribution: gives each GPU and GPU instance of s the containers that hold it in l, the
 * kubelet's List answer, as dcgm-exporter's pod mapper does. Only the device plugin's resources
 * count (nvidia.com/gpu, nvidia.com/gpu.shared, nvidia.com/mig-*); a device id names a GPU by UUID
 * ("GPU-...", time-slicing replicas "GPU-...::N" with the suffix dropped) or by index ("0"), a
 * GPU instance by MIG device UUID ("MIG-...", or the older "MIG-GPU-<uuid>/<gi>/<ci>"). A container
 * listing one device twice counts once; past EXP_MAX_HOLDERS a device's further containers are
 * left out. Ids that match nothing are ignored. Replaces what s held before. Returns the number of
 * (device, container) pairs given labels; never fails.
 */
unsigned exp_attribute_pods(struct exp_sample *s, const struct podres_list *l);

/* Drops every holder of s's GPUs and instances (series without pod labels). Returns nothing. */
void exp_clear_holders(struct exp_sample *s);

/* ---- rendering (pure: no NVML, no clock) ---- */

struct exp_render_options {
        const char *hostname;                /* NULL: no hostname label */
        const char *hostname_label;          /* "Hostname" (dcgm-exporter <= 4.8) or "hostname" */
        const struct exp_counters *counters; /* NULL or not filtered: every counter, the table's help */
};

/* Appends s to b with Prometheus label-value escaping (\\, \", \n). Returns nothing; never fails. */
void exp_escape_label(struct buf *b, const char *s);

/* Appends a metric value: "%d" style for integers, "%f" for doubles (dcgm-exporter's formatting).
 * Returns nothing; never fails. */
void exp_format_value(struct buf *b, double v, bool is_double);

/* Appends the DCGM-compatible series of every sampled GPU to b, metric by metric (HELP, TYPE, one
 * line per GPU, or per GPU instance on a GPU in MIG mode: see exp_gpu_value); a metric with no value on
 * any GPU is left out. Returns nothing; never fails. */
void exp_render_gpus(struct buf *b, const struct exp_sample *s, const struct exp_render_options *o);

/*
 * The value of metric m for GPU g, or for its GPU instance inst (inst < g->n_instances; -1: the GPU):
 * an instance has its own framebuffer (FB_FREE, FB_USED, FB_RESERVED) and profiling counters
 * (DCGM_FI_PROF_*: DCGM reads them per GPU instance), no utilization series (DCGM does not support
 * them in MIG mode), and the GPU's value of everything else. Returns true and *ret,
 * or false when there is no such series.
 */
bool exp_gpu_value(const struct exp_gpu *g, int inst, enum exp_metric m, double *ret);

/* Counters and state kept across samples, rendered with each sample. */
struct exp_stats {
        uint64_t samples_total;
        uint64_t nvml_errors[EXP_N_CALLS];
        unsigned stuck_workers;
        uint64_t stuck_total;
        uint64_t xid_events_total;
        bool pod_attribution;            /* --kubernetes: the kubelet is asked who holds each GPU */
        bool pod_attribution_up;         /* the last List succeeded */
        uint64_t pod_attribution_errors; /* failed List calls since start */
};

/* Appends gpunode's own series about the sampler (gpunode_exporter_*) to b. Returns nothing. */
void exp_render_self(struct buf *b, const struct exp_sample *s, const struct exp_stats *st,
                     const struct exp_render_options *o);

/* Appends the series that change between samples (ages), computed at scrape time. sample_age < 0:
 * no sample yet. Returns nothing; never fails. */
void exp_render_ages(struct buf *b, double sample_age, double check_age);

/* How the runs of the layer diagnosis (a `gpunode check` child) went. */
enum exp_check_result {
        EXP_CHECK_OK,      /* it finished and its output was valid */
        EXP_CHECK_TIMEOUT, /* it ran past the check timeout and was killed */
        EXP_CHECK_FAILED,  /* it could not start, or exited with a usage or internal error, or by a signal */
        EXP_CHECK_INVALID, /* its output was not the diagnosis's exposition text, or too large */
        EXP_CHECK_BUSY,    /* not started: an earlier, killed child has not been reaped yet */
        EXP_CHECK_N_RESULTS,
        EXP_CHECK_NONE = EXP_CHECK_N_RESULTS, /* no run yet */
};

struct exp_check_status {
        enum exp_check_result last;
        double duration_seconds; /* of the last run */
        uint64_t runs_total[EXP_CHECK_N_RESULTS];
};

/* Appends the series about the layer diagnosis runs (gpunode_exporter_check_*) to b. Returns nothing. */
void exp_render_check_status(struct buf *b, const struct exp_check_status *cs);

/* ---- the published page ---- */

struct exp_page {
        int refs; /* atomic */
        char *text;
        size_t len;
        unsigned char *gz; /* an open gzip stream of text (exp_gzip_open), NULL when compression failed */
        size_t gz_len;
        uint32_t gz_crc;
        bool have_sample;
        struct timespec sample_time; /* CLOCK_MONOTONIC, when the sample finished */
        bool have_check;
        struct timespec check_time;
        bool nvml_up;
        char problem[256]; /* NVML's state when not up, or partial-sample notes */
};

/* Returns p with one more reference. Thread-safe. */
struct exp_page *exp_page_ref(struct exp_page *p);
/* Drops a reference; the last frees the page. Returns NULL. Thread-safe. */
struct exp_page *exp_page_unref(struct exp_page *p);

/*
 * Starts a gzip stream holding in[0..n): the header and deflate blocks ending in a sync flush, without
 * the final block and trailer, so that each response can close it with exp_gzip_close around its own
 * small tail: the page is compressed once per sample, every response is still one gzip member.
 * Returns 0, a malloc'd *ret / *ret_len and the CRC-32 of in in *ret_crc; -ENOMEM or -EIO when zlib fails.
 */
int exp_gzip_open(const void *in, size_t n, unsigned char **ret, size_t *ret_len, uint32_t *ret_crc);

/*
 * Writes what ends a stream from exp_gzip_open: tail[0..n) (n <= 65535) as a final stored deflate
 * block, then the trailer (CRC-32 and length of the whole text). out must hold n + 13 bytes. Returns
 * the bytes written, or -EINVAL when n is too large.
 */
int exp_gzip_close(const void *tail, size_t n, uint32_t open_crc, size_t open_len, unsigned char *out);

/* ---- the sampler ---- */

struct exp_options {
        const char *nvml_library; /* NULL: libnvidia-ml.so.1 */
        unsigned interval_ms;
        unsigned sample_timeout_ms; /* a call running longer makes its worker "stuck" */
        const char *root;
        const char *hostname; /* NULL: no label */
        const char *hostname_label;
        bool xid_events;
        const char *podres_socket;    /* host path below root; NULL: PODRES_SOCKET */
        struct exp_counters counters; /* -f/--collectors; zero: every counter */
        /* -k/--kubernetes (dcgm-exporter's DCGM_EXPORTER_KUBERNETES), --no-kubernetes: attribute GPUs to
         * the pods using them (pod, namespace, container labels); true by default (dcgm-exporter's is false): the
         * series of a GPU no container holds stay as they are, and a node without the socket says so on /health. */
        bool kubernetes;
        /* --kubernetes-gpu-id-type: how the kubelet's pod resources name a GPU (dcgm-exporter's "uid":
         * its UUID; "device-name": nvidia<index>). */
        enum exp_gpu_id_type { EXP_GPU_ID_UID, EXP_GPU_ID_DEVICE_NAME } kubernetes_gpu_id_type;
};

struct exporter;

/* Starts the sampler (Xid events and the diagnosis come from the daemon: exporter_xid_subscriber,
 * exporter_diagnosis_sink). Returns 0 and *ret, or -errno when its thread cannot be started. NVML
 * failing or absent is not an error: the page says so and the sampler retries. */
int exporter_start(const struct exp_options *o, struct exporter **ret);

/* Runs the stuck-sampler watchdog once; call it about every 250 ms. Returns nothing. */
void exporter_watchdog(struct exporter *e);

/* Returns the latest page with a reference (never NULL). Thread-safe; never calls NVML. */
struct exp_page *exporter_page(struct exporter *e);

/*
 * Fills reason with why the exporter is unhealthy (no sample yet, stale, NVML failing). Returns true
 * when healthy. Thread-safe; never calls NVML.
 */
bool exporter_health(struct exporter *e, char *reason, size_t reason_size);

/* Stops every thread (waiting a bounded time for one stuck in NVML) and frees e. Returns NULL. */
struct exporter *exporter_stop(struct exporter *e);

/* Returns seconds from a to b. */
static inline double exp_seconds_between(const struct timespec *a, const struct timespec *b) {
        return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* ---- on the daemon (src/daemon/): its HTTP server, its Xid watch, its diagnosis loop ---- */

struct http_request;
struct http_response;
/* The exporter's route on the daemon's HTTP server (userdata: the exporter): /metrics, /health
 * (/healthz), and an index at /. Returns true when it answered; never blocks, never calls NVML. */
bool exporter_http_route(void *userdata, const struct http_request *req, struct http_response *r);

struct xid_subscriber;
/* Fills *ret with the exporter's subscription to the daemon's Xid watch: the last Xid of each GPU
 * (DCGM_FI_DEV_XID_ERRORS), gpunode_exporter_xid_events_total and the watch's NVML errors. Returns
 * nothing. */
void exporter_xid_subscriber(struct exporter *e, struct xid_subscriber *ret);

struct diagnosis_sink;
/* Fills *ret with the exporter's sink of the daemon's diagnosis loop: the report's gpunode_check,
 * gpunode_layer_healthy, gpunode_verdict and gpunode_root_cause_layer series (the last good one, its age
 * in gpunode_exporter_check_age_seconds) and how each run went (gpunode_exporter_check_*). Returns
 * nothing. */
void exporter_diagnosis_sink(struct exporter *e, struct diagnosis_sink *ret);

struct daemon;
/* Adds the exporter to d: its route (/metrics, /health, /), its Xid subscriber and its diagnosis sink,
 * in that order after what d already has. Returns 0, or -E2BIG when d has no room left. */
int exporter_join_daemon(struct exporter *e, struct daemon *d);

struct daemon_loop_options;
/* Sets o's tick (the sampler's watchdog), capability-drop readiness (NVML tried) with its timeout
 * (the sample timeout) and userdata to e's. Returns nothing. */
void exporter_loop_hooks(struct exporter *e, struct daemon_loop_options *o);

/* Returns true once the sampler has tried NVML (a sample was published, complete or partial): the
 * daemon may drop its capabilities. Never fails. */
bool exporter_tried_nvml(struct exporter *e);

/* Returns the err_msg label dcgm-exporter writes on DCGM_FI_DEV_XID_ERRORS for Xid code ("No Error"
 * for 0, "Double Bit ECC Error" for 48, "Unknown Error" past its table), so dashboards and alert
 * rules written for dcgm-exporter match. Never NULL; never fails. */
const char *exp_dcgm_xid_err_msg(int code);
