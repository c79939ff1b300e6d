/* kernels_ref.c: kernels.ptx's pattern and FMA algorithms in C, bit for bit. */
#include "validate/kernels_ref.h"

#include <math.h>

uint32_t kernel_pattern_word(unsigned mode, uint32_t seed, uint64_t i) {
        uint32_t lo = (uint32_t)i, hi = (uint32_t)(i >> 32);
        switch (mode) {
        case PATTERN_WALKING_ONES: return 1u << ((lo + seed) & 31);
        case PATTERN_WALKING_ZEROS: return ~(1u << ((lo + seed) & 31));
        case PATTERN_ADDRESS: return (lo << 2) ^ hi ^ seed;
        default: {
                uint32_t x = lo * 0x9E3779B9u + hi * 0x85EBCA77u + seed;
                x ^= x >> 16;
                x *= 0x7FEB352Du;
                x ^= x >> 15;
                x *= 0x846CA68Bu;
                x ^= x >> 16;
                return x;
        }
        }
}

void kernel_pattern_run(uint32_t *buf, uint64_t n, unsigned mode, uint32_t seed, unsigned op, uint64_t *result) {
        for (uint64_t i = 0; i < n; i++) {
                uint32_t v = kernel_pattern_word(mode, seed, i);
                if (op == 0) {
                        buf[i] = v;
                        continue;
                }
                uint32_t got = buf[i];
                if (got == v) continue;
                uint64_t k = result[0]++;
                if (k < KERNEL_PATTERN_SLOTS) {
                        result[1 + 2 * k] = i;
                        result[2 + 2 * k] = got;
                }
        }
}

float kernel_fma_thread(uint64_t tid, uint32_t iters) {
        /* The constants of kernels.ptx (0f37800000 = 2^-16, 0f3F7FC000 = 1 - 2^-10, ...). */
        const float a = 1.0f - 0x1p-10f;
        float x[8];
        x[0] = (float)(uint32_t)(tid & 0xffff) * 0x1p-16f + 1.0f; /* both steps exact */
        for (int k = 1; k < 8; k++) x[k] = x[0] + 0.125f * (float)k;
        for (uint32_t t = 0; t < iters; t++)
                for (int rep = 0; rep < 2; rep++)
                        for (int k = 0; k < 8; k++) x[k] = fmaf(x[k], a, 0x1p-10f * (float)(k + 1));
        return ((x[0] + x[1]) + (x[2] + x[3])) + ((x[4] + x[5]) + (x[6] + x[7]));
}
