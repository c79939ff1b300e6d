/* gpu_health.c: how the gpu.* and nvlink.* checks judge NVML's health values, and the one GPU recovery verdict. */
#include "layer1_hardware/gpu_health.h"

#include <stdio.h>

#include "basic/util.h"
#include "nvml/nvml_lib.h"
#include "nvml/nvml_probe.h"

/* The clock event reason bits (nvml.h nvmlClocksEventReason*), with the words nvidia-smi -q uses. */
static const struct {
        uint64_t bit;
        const char *name;
} reasons[] = {
        { 0x1, "idle" },
        { 0x2, "applications clocks setting" },
        { 0x4, "SW power cap" },
        { 0x8, "HW slowdown" },
        { 0x10, "sync boost" },
        { 0x20, "SW thermal slowdown" },
        { 0x40, "HW thermal slowdown" },
        { 0x80, "HW power brake slowdown" },
        { 0x100, "display clock setting" },
};

char *gpu_clock_reasons_text(uint64_t mask, char *buf, size_t size) {
        if (size == 0) return buf;
        buf[0] = 0;
        if (mask == 0) {
                snprintf(buf, size, "none");
                return buf;
        }
        size_t n = 0;
        uint64_t known = 0;
        for (size_t i = 0; i < ELEMENTSOF(reasons); i++) {
                known |= reasons[i].bit;
                if (!(mask & reasons[i].bit)) continue;
                int w = snprintf(buf + n, size - n, "%s%s", n ? ", " : "", reasons[i].name);
                if (w < 0 || (size_t)w >= size - n) return buf;
                n += (size_t)w;
        }
        if (mask & ~known) snprintf(buf + n, size - n, "%s0x%llx", n ? ", " : "", (unsigned long long)(mask & ~known));
        return buf;
}

enum check_status gpu_slowdown_judge(uint64_t first, bool again_known, uint64_t again) {
        uint64_t hw1 = first & GPU_REASONS_HW, hw2 = again_known ? again & GPU_REASONS_HW : 0;
        if (hw1 && hw2) return CHECK_FAIL;
        if (hw1 || hw2) return CHECK_WARN;
        if ((first | (again_known ? again : 0)) & GPU_REASON_SW_THERMAL) return CHECK_WARN;
        return CHECK_PASS;
}

enum check_status gpu_temperature_judge(unsigned t, unsigned shutdown, unsigned slowdown, unsigned gpu_max) {
        if ((shutdown && t >= shutdown) || (slowdown && t >= slowdown)) return CHECK_FAIL;
        if ((gpu_max && t >= gpu_max) || (slowdown && t + GPU_TEMP_MARGIN >= slowdown)) return CHECK_WARN;
        return CHECK_PASS;
}

enum check_status gpu_memory_temperature_judge(unsigned t, unsigned mem_max) {
        return mem_max && t + GPU_TEMP_MARGIN >= mem_max ? CHECK_WARN : CHECK_PASS;
}

unsigned nvlink_expected_links(const char *name) {
        if (!name) return 0;
        /* PCIe and NVL cards: links are bridges between neighbours, not an NVSwitch fabric. */
        if (strstr(name, "PCIe") || strstr(name, " NVL")) return 0;
        static const struct {
                const char *word;
                unsigned links;
        } table[] = {
                { "GH200", 18 },    { "GB200", 18 },   { "GB300", 18 },    { "B100", 18 },     { "B200", 18 },
                { "B300", 18 },     { "H100", 18 },    { "H200", 18 },     { "H20", 18 },      { "H800", 8 },
                { "A100-SXM", 12 }, { "A800-SXM", 8 }, { "V100-SXM2", 6 }, { "V100-SXM3", 6 },
        };
        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                const char *p = strstr(name, table[i].word);
                if (!p) continue;
                /* a model number ends where its digits do: "H20" is not the start of "H200" */
                size_t n = strlen(table[i].word);
                bool ends_in_digit = table[i].word[n - 1] >= '0' && table[i].word[n - 1] <= '9';
                if (!ends_in_digit || p[n] < '0' || p[n] > '9') return table[i].links;
        }
        return 0;
}

bool gpu_fact_error_evidence(struct finding *f, const char *label, const char *what, int rc) {
        if (rc == NVML_SUCCESS || rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_FACT_NOT_QUERIED) return false;
        finding_evidence(f, "%s: %s unknown: %s (%s)", label, what, nvml_return_message(rc), nvml_return_name(rc));
        return true;
}
