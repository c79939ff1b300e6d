/* specs.c: the public specifications a GPU's figures are held against, PCIe link arithmetic, the pass/warn/fail rule.
 */
#include "validate/validate.h"

#include <string.h>

/* Most specific first: "H100 PCIe" before "H100", "L40S" before "L4". Figures from NVIDIA's data sheets:
 * memory bandwidth, NVLink per GPU (both directions together), FP32 peak (no tensor cores, no sparsity). */
static const struct validate_product products[] = {
        { "H200", 4800, 900, 67 },    /* H200 SXM 141 GB HBM3e (NVL: same memory) */
        { "H100 PCIe", 2000, 0, 51 }, /* H100 PCIe 80 GB HBM2e; NVLink only through a bridge */
        { "H100 NVL", 3900, 0, 60 },  /* H100 NVL 94 GB */
        { "H100", 3350, 900, 67 },    /* H100 SXM5 80 GB HBM3 ("NVIDIA H100 80GB HBM3") */
        { "A100-SXM4-80GB", 2039, 600, 19.5 },
        { "A100-SXM4-40GB", 1555, 600, 19.5 },
        { "A100 80GB PCIe", 1935, 0, 19.5 },
        { "A100-PCIE-40GB", 1555, 0, 19.5 },
        { "L40S", 864, 0, 91.6 },
        { "L40", 864, 0, 90.5 },
        { "L4", 300, 0, 30.3 },
};

/* Returns true when name contains match as a word: the characters around it are not letters or digits
 * ("NVIDIA L4" matches "L4", "NVIDIA L40S" does not). */
static bool contains_word(const char *name, const char *match) {
        size_t n = strlen(match);
        for (const char *p = name; (p = strstr(p, match)); p++) {
                bool left = p == name || !((p[-1] >= 'A' && p[-1] <= 'Z') || (p[-1] >= 'a' && p[-1] <= 'z') ||
                                           (p[-1] >= '0' && p[-1] <= '9'));
                char c = p[n];
                bool right = !((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'));
                if (left && right) return true;
        }
        return false;
}

const struct validate_product *validate_product_lookup(const char *name) {
        if (!name) return NULL;
        for (size_t i = 0; i < sizeof products / sizeof products[0]; i++)
                if (contains_word(name, products[i].match)) return &products[i];
        return NULL;
}

double validate_pcie_gbps(unsigned gen, unsigned width) {
        /* GB/s per lane and direction: GT/s x encoding efficiency / 8 bits */
        static const double lane[] = {
                0, 0.25, 0.5, 8 * 128.0 / 130 / 8, 16 * 128.0 / 130 / 8, 32 * 128.0 / 130 / 8, 64 * 242.0 / 256 / 8
        };
        if (gen == 0 || gen >= sizeof lane / sizeof lane[0] || width == 0 || width > 32) return 0;
        return lane[gen] * width;
}

const char *validate_rate(double value, double expected, double pass_frac, double warn_frac) {
        if (!(expected > 0)) return "info";
        if (value >= pass_frac * expected) return "pass";
        if (value >= warn_frac * expected) return "warn";
        return "fail";
}
