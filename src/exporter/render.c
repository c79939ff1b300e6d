/* render.c: the exporter's page as Prometheus text: DCGM-compatible GPU series, its own health, gzip. */
#include "exporter/exporter.h"

#include <inttypes.h>
#include <math.h>
#include <zlib.h>

/* Names, types and help texts copied from NVIDIA/dcgm-exporter etc/default-counters.csv (4.x). */
static const struct exp_metric_def metric_defs[EXP_N_METRICS] = {
        [EXP_SM_CLOCK] = { "DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", false },
        [EXP_MEM_CLOCK] = { "DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", false },
        [EXP_MEMORY_TEMP] = { "DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", false },
        [EXP_GPU_TEMP] = { "DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", false },
        [EXP_POWER_USAGE] = { "DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", true },
        [EXP_TOTAL_ENERGY] = { "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
                               "Total energy consumption since boot (in mJ).", false },
        [EXP_PCIE_REPLAY] = { "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", false },
        [EXP_GPU_UTIL] = { "DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", false },
        [EXP_MEM_COPY_UTIL] = { "DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", false },
        [EXP_ENC_UTIL] = { "DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", false },
        [EXP_DEC_UTIL] = { "DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", false },
        [EXP_XID_ERRORS] = { "DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", false },
        [EXP_FB_FREE] = { "DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", false },
        [EXP_FB_USED] = { "DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", false },
        [EXP_FB_RESERVED] = { "DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB).", false },
        [EXP_NVLINK_BANDWIDTH_TOTAL] = { "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter",
                                         "Total number of NVLink bandwidth counters for all lanes.", false },
        [EXP_UNCORRECTABLE_REMAPPED_ROWS] = { "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
                                              "Number of remapped rows for uncorrectable errors", false },
        [EXP_CORRECTABLE_REMAPPED_ROWS] = { "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
                                            "Number of remapped rows for correctable errors", false },
        [EXP_ROW_REMAP_FAILURE] = { "DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed",
                                    false },
        /* Opt-in: DCGM fields dcgm-exporter serves only from a CSV naming them (etc/dcp-metrics-included.csv).
         * The violation times are DCGM's microseconds (NVML's nanoseconds / 1000). */
        [EXP_CLOCK_THROTTLE_REASONS] = { "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "gauge",
                                         "Current clock throttle reasons.", false, true },
        [EXP_POWER_VIOLATION] = { "DCGM_FI_DEV_POWER_VIOLATION", "counter",
                                  "Throttling duration due to power constraints (in us).", false, true },
        [EXP_THERMAL_VIOLATION] = { "DCGM_FI_DEV_THERMAL_VIOLATION", "counter",
                                    "Throttling duration due to thermal constraints (in us).", false, true },
        [EXP_PCIE_LINK_GEN] = { "DCGM_FI_DEV_PCIE_LINK_GEN", "gauge", "PCIe Current Link Generation.", false, true },
        [EXP_PCIE_LINK_WIDTH] = { "DCGM_FI_DEV_PCIE_LINK_WIDTH", "gauge", "PCIe Current Link Width.", false, true },
        [EXP_NVLINK_CRC_FLIT_ERRORS] = { "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter",
                                         "Total number of NVLink flow-control CRC errors.", false, true },
        [EXP_NVLINK_CRC_DATA_ERRORS] = { "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter",
                                         "Total number of NVLink data CRC errors.", false, true },
        [EXP_NVLINK_REPLAY_ERRORS] = { "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter",
                                       "Total number of NVLink retries.", false, true },
        [EXP_NVLINK_RECOVERY_ERRORS] = { "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter",
                                         "Total number of NVLink recovery errors.", false, true },
        /* The profiling fields: ratios are DCGM_FT_DOUBLE, the PCIe rates DCGM_FT_INT64 (bytes per second). */
        [EXP_PROF_GR_ENGINE_ACTIVE] = { "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge",
                                        "Ratio of time the graphics engine is active.", true },
        [EXP_PROF_PIPE_TENSOR_ACTIVE] = { "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
                                          "Ratio of cycles the tensor (HMMA) pipe is active.", true },
        [EXP_PROF_DRAM_ACTIVE] = { "DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
                                   "Ratio of cycles the device memory interface is active sending or receiving data.",
                                   true },
        [EXP_PROF_PCIE_TX_BYTES] = { "DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
                                     "The rate of data transmitted over the PCIe bus - including both protocol headers "
                                     "and data payloads - in bytes per second.",
                                     false },
        [EXP_PROF_PCIE_RX_BYTES] = { "DCGM_FI_PROF_PCIE_RX_BYTES", "gauge",
                                     "The rate of data received over the PCIe bus - including both protocol headers "
                                     "and data payloads - in bytes per second.",
                                     false },
};

static const char *const call_names[EXP_N_CALLS] = {
        [CALL_LIBRARY_OPEN] = "dlopen",
        [CALL_INIT] = "nvmlInit",
        [CALL_SHUTDOWN] = "nvmlShutdown",
        [CALL_DRIVER_VERSION] = "nvmlSystemGetDriverVersion",
        [CALL_DEVICE_COUNT] = "nvmlDeviceGetCount",
        [CALL_HANDLE] = "nvmlDeviceGetHandleByIndex",
        [CALL_NAME] = "nvmlDeviceGetName",
        [CALL_UUID] = "nvmlDeviceGetUUID",
        [CALL_PCI_INFO] = "nvmlDeviceGetPciInfo",
        [CALL_CLOCK_INFO] = "nvmlDeviceGetClockInfo",
        [CALL_FIELD_VALUES] = "nvmlDeviceGetFieldValues",
        [CALL_TEMPERATURE] = "nvmlDeviceGetTemperature",
        [CALL_POWER_USAGE] = "nvmlDeviceGetPowerUsage",
        [CALL_ENERGY] = "nvmlDeviceGetTotalEnergyConsumption",
        [CALL_PCIE_REPLAY] = "nvmlDeviceGetPcieReplayCounter",
        [CALL_UTILIZATION] = "nvmlDeviceGetUtilizationRates",
        [CALL_ENCODER_UTIL] = "nvmlDeviceGetEncoderUtilization",
        [CALL_DECODER_UTIL] = "nvmlDeviceGetDecoderUtilization",
        [CALL_MEMORY_INFO] = "nvmlDeviceGetMemoryInfo",
        [CALL_REMAPPED_ROWS] = "nvmlDeviceGetRemappedRows",
        [CALL_EVENT_SET_CREATE] = "nvmlEventSetCreate",
        [CALL_REGISTER_EVENTS] = "nvmlDeviceRegisterEvents",
        [CALL_EVENT_SET_WAIT] = "nvmlEventSetWait",
        [CALL_MIG_MODE] = "nvmlDeviceGetMigMode",
        [CALL_MIG_MAX_COUNT] = "nvmlDeviceGetMaxMigDeviceCount",
        [CALL_MIG_HANDLE] = "nvmlDeviceGetMigDeviceHandleByIndex",
        [CALL_GPU_INSTANCE_ID] = "nvmlDeviceGetGpuInstanceId",
        [CALL_ATTRIBUTES] = "nvmlDeviceGetAttributes",
        [CALL_GPU_INSTANCE_BY_ID] = "nvmlDeviceGetGpuInstanceById",
        [CALL_GPU_INSTANCE_INFO] = "nvmlGpuInstanceGetInfo",
        [CALL_GPU_INSTANCE_PROFILE_INFO] = "nvmlDeviceGetGpuInstanceProfileInfo",
        [CALL_PCIE_THROUGHPUT] = "nvmlDeviceGetPcieThroughput",
        [CALL_GPM_SUPPORT] = "nvmlGpmQueryDeviceSupport",
        [CALL_GPM_SAMPLE_ALLOC] = "nvmlGpmSampleAlloc",
        [CALL_GPM_SAMPLE_GET] = "nvmlGpmSampleGet",
        [CALL_GPM_MIG_SAMPLE_GET] = "nvmlGpmMigSampleGet",
        [CALL_GPM_METRICS_GET] = "nvmlGpmMetricsGet",
        [CALL_CLOCK_REASONS] = "nvmlDeviceGetCurrentClocksEventReasons",
        [CALL_VIOLATION_STATUS] = "nvmlDeviceGetViolationStatus",
        [CALL_PCIE_LINK_GEN] = "nvmlDeviceGetCurrPcieLinkGeneration",
        [CALL_PCIE_LINK_WIDTH] = "nvmlDeviceGetCurrPcieLinkWidth",
};

const struct exp_metric_def *exp_metric_def(enum exp_metric m) {
        return &metric_defs[m];
}

int exp_metric_by_name(const char *name) {
        for (unsigned m = 0; m < EXP_N_METRICS; m++)
                if (metric_defs[m].name && streq(metric_defs[m].name, name)) return (int)m;
        return -ENOENT;
}

/* The one field of dcgm-exporter's CSVs that gpunode serves as a label, not a series. */
#define DRIVER_VERSION_FIELD "DCGM_FI_DRIVER_VERSION"

/* Returns the malloc'd list of what a collectors CSV may name: every counter of the table, then the
 * driver version label. Never fails (aborts on OOM). */
static char *served_list(void) {
        struct buf b = { 0 };
        for (unsigned m = 0; m < EXP_N_METRICS; m++)
                if (metric_defs[m].name) buf_printf(&b, "%s, ", metric_defs[m].name);
        buf_puts(&b, DRIVER_VERSION_FIELD " (label)");
        return b.data;
}

/*
 * Splits one CSV line (NUL-terminated, no newline; modified in place) into fields as dcgm-exporter's
 * reader does: separated by commas, spaces around them trimmed, a field may be double-quoted (""
 * inside is one quote, commas inside are kept). Returns the number of fields (up to max stored in
 * fields[]; more are counted), or -EINVAL for an unterminated quote or text after a closing one.
 */
static int csv_split(char *line, char **fields, int max) {
        int n = 0;
        char *p = line;
        for (;;) {
                while (*p == ' ' || *p == '\t') p++;
                char *start = p, *end;
                if (*p == '"') {
                        char *w = start;
                        for (p++;; p++) {
                                if (!*p) return -EINVAL;
                                if (*p == '"' && p[1] == '"')
                                        *w++ = *p++;
                                else if (*p == '"')
                                        break;
                                else
                                        *w++ = *p;
                        }
                        end = w;
                        p++;
                        while (*p == ' ' || *p == '\t') p++;
                        if (*p && *p != ',') return -EINVAL;
                } else {
                        while (*p && *p != ',') p++;
                        end = p;
                        while (end > start && (end[-1] == ' ' || end[-1] == '\t')) end--;
                }
                bool more = *p == ',';
                *end = 0;
                if (n < max) fields[n] = start;
                n++;
                if (!more) return n;
                p++;
        }
}

int exp_counters_parse(const char *text, size_t len, const char *file, struct exp_counters *ret, char **ret_error) {
        struct exp_counters c = { .filtered = true };
        unsigned first_line[EXP_N_METRICS] = { 0 }, driver_line = 0;
        unsigned lineno = 0;
        for (size_t off = 0; off < len;) {
                const char *nl = memchr(text + off, '\n', len - off);
                size_t n = nl ? (size_t)(nl - (text + off)) : len - off;
                _cleanup_free_ char *line = xstrndup(text + off, n);
                off += n + 1;
                lineno++;
                if (strlen(line) != n) {
                        *ret_error = xasprintf("%s line %u: a NUL byte", file, lineno);
                        return -EINVAL;
                }
                if (n > 0 && line[n - 1] == '\r') line[--n] = 0; /* CRLF */
                const char *q = line;
                while (*q == ' ' || *q == '\t') q++;
                if (!*q || *q == '#') continue; /* blank, comment */
                char *f[3];
                int k = csv_split(line, f, 3);
                if (k < 0) {
                        *ret_error = xasprintf("%s line %u: a quoted field is not closed, or text follows its quote",
                                               file, lineno);
                        return -EINVAL;
                }
                if (k != 3) {
                        *ret_error = xasprintf(
                                "%s line %u: %d field(s), not the 3 of dcgm-exporter's format (FIELD, TYPE, HELP)",
                                file, lineno, k);
                        return -EINVAL;
                }
                const char *name = f[0], *type = f[1], *help = f[2];
                if (!streq(type, "gauge") && !streq(type, "counter") && !streq(type, "label") &&
                    !streq(type, "histogram") && !streq(type, "summary")) {
                        *ret_error = xasprintf("%s line %u: type '%.40s' of %.80s is not gauge, counter or label", file,
                                               lineno, type, name);
                        return -EINVAL;
                }
                if (streq(name, DRIVER_VERSION_FIELD)) {
                        if (!streq(type, "label")) {
                                *ret_error =
                                        xasprintf("counter %s in %s line %u has type %s; gpunode serves it as a label "
                                                  "on every series (type label)",
                                                  name, file, lineno, type);
                                return -EINVAL;
                        }
                        if (driver_line) {
                                *ret_error = xasprintf("%s in %s line %u was named on line %u already", name, file,
                                                       lineno, driver_line);
                                return -EINVAL;
                        }
                        driver_line = lineno;
                        c.driver_label = true;
                        continue;
                }
                int m = exp_metric_by_name(name);
                if (m < 0) {
                        _cleanup_free_ char *list = served_list();
                        *ret_error = xasprintf("counter %.80s in %s line %u is not one gpunode serves; it serves: %s",
                                               name, file, lineno, list);
                        return -EINVAL;
                }
                if (!streq(type, metric_defs[m].type)) {
                        *ret_error = xasprintf("counter %s in %s line %u has type %s; it is a %s", name, file, lineno,
                                               type, metric_defs[m].type);
                        return -EINVAL;
                }
                if (first_line[m]) {
                        *ret_error = xasprintf("counter %s in %s line %u was named on line %u already", name, file,
                                               lineno, first_line[m]);
                        return -EINVAL;
                }
                first_line[m] = lineno;
                c.enabled[m] = true;
                /* # HELP text: a backslash is escaped (a newline cannot occur in a line) */
                size_t w = 0;
                for (const char *h = help; *h; h++) {
                        if ((unsigned char)*h < 0x20 && *h != '\t') {
                                *ret_error = xasprintf("%s line %u: the help text of %s holds a control character",
                                                       file, lineno, name);
                                return -EINVAL;
                        }
                        size_t need = *h == '\\' ? 2 : 1;
                        if (w + need >= EXP_HELP_MAX) {
                                *ret_error = xasprintf("%s line %u: the help text of %s is longer than %d bytes", file,
                                                       lineno, name, EXP_HELP_MAX - 1);
                                return -EINVAL;
                        }
                        if (*h == '\\') c.help[m][w++] = '\\';
                        c.help[m][w++] = *h;
                }
                c.help[m][w] = 0;
        }
        *ret = c;
        return 0;
}

const char *exp_call_name(enum exp_call c) {
        return (unsigned)c < EXP_N_CALLS ? call_names[c] : "unknown";
}

void exp_escape_label(struct buf *b, const char *s) {
        const char *run = s;
        for (; *s; s++) {
                const char *esc = *s == '\\' ? "\\\\" : *s == '"' ? "\\\"" : *s == '\n' ? "\\n" : NULL;
                if (!esc) continue;
                buf_append(b, run, (size_t)(s - run));
                buf_puts(b, esc);
                run = s + 1;
        }
        buf_append(b, run, (size_t)(s - run));
}

void exp_format_value(struct buf *b, double v, bool is_double) {
        if (isnan(v)) {
                buf_puts(b, "NaN");
        } else if (isinf(v)) {
                buf_puts(b, v > 0 ? "+Inf" : "-Inf");
        } else if (is_double) {
                buf_printf(b, "%f", v);
        } else if (v >= 0 && v < 18446744073709551616.0) {
                buf_printf(b, "%" PRIu64, (uint64_t)v);
        } else if (v < 0 && v >= -9223372036854775808.0) {
                buf_printf(b, "%" PRId64, (int64_t)v);
        } else {
                buf_printf(b, "%.17g", v);
        }
}

/* Appends GPU g's labels up to modelName (without braces), in dcgm-exporter's order. Returns nothing. */
static void gpu_labels_head(struct buf *b, const struct exp_gpu *g) {
        buf_printf(b, "gpu=\"%u\",UUID=\"", g->index);
        exp_escape_label(b, g->uuid);
        buf_puts(b, "\",pci_bus_id=\"");
        exp_escape_label(b, g->pci_bus_id);
        buf_printf(b, "\",device=\"nvidia%u\",modelName=\"", g->index);
        exp_escape_label(b, g->name);
        buf_puts(b, "\"");
}

/* Appends the labels that follow modelName and the MIG labels: Hostname, DCGM_FI_DRIVER_VERSION. Returns nothing. */
static void gpu_labels_tail(struct buf *b, const char *driver, const struct exp_render_options *o) {
        if (o->hostname) {
                buf_printf(b, ",%s=\"", o->hostname_label ? o->hostname_label : "Hostname");
                exp_escape_label(b, o->hostname);
                buf_puts(b, "\"");
        }
        /* A collectors CSV without DCGM_FI_DRIVER_VERSION drops the label, as dcgm-exporter does. */
        if (o->counters && o->counters->filtered && !o->counters->driver_label) return;
        buf_puts(b, ",DCGM_FI_DRIVER_VERSION=\"");
        exp_escape_label(b, driver);
        buf_puts(b, "\"");
}

bool exp_gpu_value(const struct exp_gpu *g, int inst, enum exp_metric m, double *ret) {
        if (!g->sampled) return false;
        if (inst < 0 || (unsigned)inst >= g->n_instances) {
                if (g->n_instances > 0 || !g->has[m]) return false; /* MIG mode: instances only */
                *ret = g->value[m];
                return true;
        }
        const struct exp_gpu_instance *gi = &g->instances[inst];
        switch (m) {
        case EXP_FB_FREE: *ret = gi->fb_free; return gi->has_fb;
        case EXP_FB_USED: *ret = gi->fb_used; return gi->has_fb;
        case EXP_FB_RESERVED: *ret = gi->fb_reserved; return gi->has_fb_reserved;
        case EXP_GPU_UTIL:
        case EXP_MEM_COPY_UTIL:
        case EXP_ENC_UTIL:
        case EXP_DEC_UTIL: return false; /* "not supported for MIG configurations" (dcgm-exporter #430, #105) */
        case EXP_PROF_GR_ENGINE_ACTIVE:
        case EXP_PROF_PIPE_TENSOR_ACTIVE:
        case EXP_PROF_DRAM_ACTIVE:
        case EXP_PROF_PCIE_TX_BYTES:
        case EXP_PROF_PCIE_RX_BYTES: *ret = gi->prof[m - EXP_PROF_FIRST]; return gi->has_prof[m - EXP_PROF_FIRST];
        default: *ret = g->value[m]; return g->has[m];
        }
}

/*
 * Appends dcgm-exporter's Xid labels for the last Xid v (0: none yet) to b: err_code, the number,
 * and err_msg, dcgm-exporter's own text for it ("No Error" for 0), not gpunode's catalog wording.
 * Returns nothing; never fails.
 */
static void xid_labels(struct buf *b, double v) {
        int code = v >= 0 && v < 1e9 ? (int)v : -1;
        buf_printf(b, ",err_code=\"%d\",err_msg=\"", code);
        exp_escape_label(b, exp_dcgm_xid_err_msg(code));
        buf_puts(b, "\"");
}

/* Appends the series lines of metric d for GPU g (instance inst, -1: the GPU) with value v: one, or
 * one per container holding it, each with its pod labels (dcgm-exporter repeats a time-sliced GPU's
 * series per container). Returns nothing. */
static void series_lines(struct buf *b, const struct exp_metric_def *d, enum exp_metric m, const struct exp_gpu *g,
                         int inst, const struct buf *head, const struct buf *tail, double v) {
        const struct exp_holders *h = inst >= 0 ? &g->instances[inst].holders : &g->holders;
        struct buf err = { 0 };
        if (m == EXP_XID_ERRORS) xid_labels(&err, v);
        for (unsigned k = 0; k < (h->n ? h->n : 1); k++) {
                buf_puts(b, d->name);
                buf_puts(b, "{");
                buf_append(b, head->data, head->len);
                if (inst >= 0) {
                        const struct exp_gpu_instance *gi = &g->instances[inst];
                        buf_puts(b, ",GPU_I_PROFILE=\"");
                        exp_escape_label(b, gi->profile);
                        buf_printf(b, "\",GPU_I_ID=\"%u\"", gi->id);
                }
                buf_append(b, tail->data, tail->len);
                /* the attributes, keys sorted as dcgm-exporter renders them: container, err_code,
                 * err_msg, namespace, pod */
                const struct exp_holder *ho = h->n ? &h->v[k] : NULL;
                if (ho) buf_append(b, ho->text, ho->split);
                if (err.len) buf_append(b, err.data, err.len);
                if (ho) buf_puts(b, ho->text + ho->split);
                buf_puts(b, "} ");
                exp_format_value(b, v, d->is_double);
                buf_puts(b, "\n");
        }
        buf_free(&err);
}

void exp_render_gpus(struct buf *b, const struct exp_sample *s, const struct exp_render_options *o) {
        if (s->n_gpus == 0) return;
        /* Label sets once per GPU (the MIG labels go between head and tail), then metric by metric. */
        struct buf *head = xcalloc(s->n_gpus, sizeof *head);
        struct buf tail = { 0 };
        gpu_labels_tail(&tail, s->driver_version, o);
        for (unsigned i = 0; i < s->n_gpus; i++)
                if (s->gpus[i].sampled) gpu_labels_head(&head[i], &s->gpus[i]);
        const struct exp_counters *c = o->counters && o->counters->filtered ? o->counters : NULL;
        for (unsigned m = 0; m < EXP_N_METRICS; m++) {
                const struct exp_metric_def *d = &metric_defs[m];
                if (c ? !c->enabled[m] : d->opt_in) continue; /* not in the collectors CSV, or opt-in without one */
                const char *help = c && c->help[m][0] ? c->help[m] : d->help;
                bool any = false;
                double v;
                for (unsigned i = 0; i < s->n_gpus && !any; i++) {
                        const struct exp_gpu *g = &s->gpus[i];
                        any = exp_gpu_value(g, -1, m, &v);
                        for (unsigned k = 0; k < g->n_instances && !any; k++) any = exp_gpu_value(g, (int)k, m, &v);
                }
                if (!any) continue;
                buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", d->name, help, d->name, d->type);
                for (unsigned i = 0; i < s->n_gpus; i++) {
                        const struct exp_gpu *g = &s->gpus[i];
                        if (exp_gpu_value(g, -1, m, &v)) series_lines(b, d, m, g, -1, &head[i], &tail, v);
                        for (unsigned k = 0; k < g->n_instances; k++)
                                if (exp_gpu_value(g, (int)k, m, &v))
                                        series_lines(b, d, m, g, (int)k, &head[i], &tail, v);
                }
        }
        for (unsigned i = 0; i < s->n_gpus; i++) buf_free(&head[i]);
        buf_free(&tail);
        free(head);
}

void exp_render_self(struct buf *b, const struct exp_sample *s, const struct exp_stats *st,
                     const struct exp_render_options *o) {
        buf_puts(b, "# HELP gpunode_exporter_nvml_up 1 when NVML loaded, initialised and listed the GPUs in the last "
                    "sample.\n"
                    "# TYPE gpunode_exporter_nvml_up gauge\n");
        buf_printf(b, "gpunode_exporter_nvml_up %d\n", s->nvml_up);
        buf_puts(b, "# HELP gpunode_exporter_gpus GPUs NVML listed in the last sample.\n"
                    "# TYPE gpunode_exporter_gpus gauge\n");
        buf_printf(b, "gpunode_exporter_gpus %u\n", s->n_gpus);
        if (s->n_gpus > 0) {
                buf_puts(b, "# HELP gpunode_exporter_gpu_up 1 when every series of the GPU was read in the last "
                            "sample; 0 with the reason when it was not.\n"
                            "# TYPE gpunode_exporter_gpu_up gauge\n");
                for (unsigned i = 0; i < s->n_gpus; i++) {
                        const struct exp_gpu *g = &s->gpus[i];
                        buf_printf(b, "gpunode_exporter_gpu_up{gpu=\"%u\",uuid=\"", g->index);
                        exp_escape_label(b, g->uuid);
                        buf_puts(b, "\",pci_bus_id=\"");
                        exp_escape_label(b, g->pci_bus_id);
                        buf_puts(b, "\",reason=\"");
                        exp_escape_label(b, g->problem);
                        buf_printf(b, "\"} %d\n", g->sampled);
                }
        }
        buf_puts(b, "# HELP gpunode_exporter_sample_duration_seconds How long the last sample of every GPU took.\n"
                    "# TYPE gpunode_exporter_sample_duration_seconds gauge\n");
        buf_printf(b, "gpunode_exporter_sample_duration_seconds %.6f\n", s->duration_seconds);
        buf_puts(b, "# HELP gpunode_exporter_samples_total Samples taken since start.\n"
                    "# TYPE gpunode_exporter_samples_total counter\n");
        buf_printf(b, "gpunode_exporter_samples_total %" PRIu64 "\n", st->samples_total);
        buf_puts(b, "# HELP gpunode_exporter_nvml_errors_total NVML calls that failed (not counting \"not "
                    "supported\"), by call.\n"
                    "# TYPE gpunode_exporter_nvml_errors_total counter\n");
        for (unsigned c = 0; c < EXP_N_CALLS; c++)
                buf_printf(b, "gpunode_exporter_nvml_errors_total{call=\"%s\"} %" PRIu64 "\n", call_names[c],
                           st->nvml_errors[c]);
        buf_puts(b, "# HELP gpunode_exporter_stuck_workers Sampler threads abandoned inside an NVML call that has not "
                    "returned.\n"
                    "# TYPE gpunode_exporter_stuck_workers gauge\n");
        buf_printf(b, "gpunode_exporter_stuck_workers %u\n", st->stuck_workers);
        buf_puts(b, "# HELP gpunode_exporter_stuck_samples_total Samples abandoned because an NVML call did not return "
                    "in time.\n"
                    "# TYPE gpunode_exporter_stuck_samples_total counter\n");
        buf_printf(b, "gpunode_exporter_stuck_samples_total %" PRIu64 "\n", st->stuck_total);
        buf_puts(b, "# HELP gpunode_exporter_xid_events_total Xid events NVML delivered since start.\n"
                    "# TYPE gpunode_exporter_xid_events_total counter\n");
        buf_printf(b, "gpunode_exporter_xid_events_total %" PRIu64 "\n", st->xid_events_total);
        if (st->pod_attribution) {
                buf_puts(b, "# HELP gpunode_exporter_pod_attribution_up 1 when the last call of the kubelet's "
                            "pod-resources List succeeded (the pod, namespace and container labels are current).\n"
                            "# TYPE gpunode_exporter_pod_attribution_up gauge\n");
                buf_printf(b, "gpunode_exporter_pod_attribution_up %d\n", st->pod_attribution_up);
                buf_puts(b, "# HELP gpunode_exporter_pod_attribution_errors_total Calls of the kubelet's pod-resources "
                            "List that failed.\n"
                            "# TYPE gpunode_exporter_pod_attribution_errors_total counter\n");
                buf_printf(b, "gpunode_exporter_pod_attribution_errors_total %" PRIu64 "\n",
                           st->pod_attribution_errors);
        }
        (void)o;
}

void exp_render_ages(struct buf *b, double sample_age, double check_age) {
        buf_puts(b, "# HELP gpunode_exporter_sample_age_seconds Seconds since the last complete sample of every GPU "
                    "(-1: none yet).\n"
                    "# TYPE gpunode_exporter_sample_age_seconds gauge\n");
        buf_printf(b, "gpunode_exporter_sample_age_seconds %.3f\n", sample_age);
        buf_puts(b, "# HELP gpunode_exporter_check_age_seconds Seconds since the last layer diagnosis (-1: none yet).\n"
                    "# TYPE gpunode_exporter_check_age_seconds gauge\n");
        buf_printf(b, "gpunode_exporter_check_age_seconds %.3f\n", check_age);
}

void exp_render_check_status(struct buf *b, const struct exp_check_status *cs) {
        static const char *const names[EXP_CHECK_N_RESULTS] = { "ok", "timeout", "failed", "invalid", "busy" };
        buf_puts(b, "# HELP gpunode_exporter_check_timed_out 1 when the last layer diagnosis ran past the check "
                    "timeout and was killed.\n"
                    "# TYPE gpunode_exporter_check_timed_out gauge\n");
        buf_printf(b, "gpunode_exporter_check_timed_out %d\n", cs->last == EXP_CHECK_TIMEOUT);
        buf_puts(b, "# HELP gpunode_exporter_check_up 1 when the last layer diagnosis finished with valid output.\n"
                    "# TYPE gpunode_exporter_check_up gauge\n");
        buf_printf(b, "gpunode_exporter_check_up %d\n", cs->last == EXP_CHECK_OK);
        buf_puts(b, "# HELP gpunode_exporter_check_duration_seconds How long the last layer diagnosis (a gpunode check "
                    "child) took.\n"
                    "# TYPE gpunode_exporter_check_duration_seconds gauge\n");
        buf_printf(b, "gpunode_exporter_check_duration_seconds %.6f\n", cs->duration_seconds);
        buf_puts(b, "# HELP gpunode_exporter_check_runs_total Layer diagnosis runs since start, by result.\n"
                    "# TYPE gpunode_exporter_check_runs_total counter\n");
        for (unsigned i = 0; i < EXP_CHECK_N_RESULTS; i++)
                buf_printf(b, "gpunode_exporter_check_runs_total{result=\"%s\"} %" PRIu64 "\n", names[i],
                           cs->runs_total[i]);
}

struct exp_page *exp_page_ref(struct exp_page *p) {
        if (p) __atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
        return p;
}

struct exp_page *exp_page_unref(struct exp_page *p) {
        if (!p || __atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) > 0) return NULL;
        free(p->text);
        free(p->gz);
        free(p);
        return NULL;
}

int exp_gzip_open(const void *in, size_t n, unsigned char **ret, size_t *ret_len, uint32_t *ret_crc) {
        z_stream z = { 0 };
        /* Raw deflate (windowBits -15): the gzip header is written here, the trailer per response. */
        if (deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) return -ENOMEM;
        static const unsigned char header[10] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3 };
        size_t cap = sizeof header + deflateBound(&z, (uLong)n) + 64;
        unsigned char *out = malloc(cap);
        if (!out) {
                deflateEnd(&z);
                return -ENOMEM;
        }
        memcpy(out, header, sizeof header);
        z.next_in = (Bytef *)in;
        z.avail_in = (uInt)n;
        z.next_out = out + sizeof header;
        z.avail_out = (uInt)(cap - sizeof header);
        /* A sync flush ends on a byte boundary without a final block, so more blocks may follow. */
        int r = deflate(&z, Z_SYNC_FLUSH);
        size_t len = cap - z.avail_out;
        bool all_in = z.avail_in == 0;
        deflateEnd(&z);
        if (r != Z_OK || !all_in) {
                free(out);
                return -EIO;
        }
        *ret = out;
        *ret_len = len;
        *ret_crc = (uint32_t)crc32(crc32(0, Z_NULL, 0), in, (uInt)n);
        return 0;
}

/* Stores v little-endian in 4 bytes at p. Returns nothing. */
static void put_le32(unsigned char *p, uint32_t v) {
        p[0] = v & 0xff;
        p[1] = (v >> 8) & 0xff;
        p[2] = (v >> 16) & 0xff;
        p[3] = (v >> 24) & 0xff;
}

int exp_gzip_close(const void *tail, size_t n, uint32_t open_crc, size_t open_len, unsigned char *out) {
        if (n > 65535) return -EINVAL;
        unsigned char *p = out;
        *p++ = 1; /* BFINAL, BTYPE 00 (stored) */
        *p++ = n & 0xff;
        *p++ = (n >> 8) & 0xff;
        *p++ = ~n & 0xff;
        *p++ = (~n >> 8) & 0xff;
        memcpy(p, tail, n);
        p += n;
        uint32_t tail_crc = (uint32_t)crc32(crc32(0, Z_NULL, 0), tail, (uInt)n);
        put_le32(p, (uint32_t)crc32_combine(open_crc, tail_crc, (z_off_t)n));
        put_le32(p + 4, (uint32_t)(open_len + n));
        p += 8;
        return (int)(p - out);
}
