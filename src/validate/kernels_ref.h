/* kernels_ref.h: the algorithms of kernels.ptx on the CPU: expected values, the sample cross-check, the fake libcuda's
 * kernels. */
#pragma once

#include <stdint.h>

/* The PTX text (kernels.ptx, made a C string at build time), NUL-terminated. */
extern const char validate_kernels_ptx[];

/* The pattern modes of gpunode_pattern. */
enum kernel_pattern_mode {
        PATTERN_WALKING_ONES = 0,
        PATTERN_WALKING_ZEROS = 1,
        PATTERN_ADDRESS = 2,
        PATTERN_RANDOM = 3,
};

/* How many mismatches gpunode_pattern records with their index and value (after the count). */
#define KERNEL_PATTERN_SLOTS 8
/* The result buffer's size in 64-bit words: the count, then SLOTS pairs {index, value read}. */
#define KERNEL_PATTERN_RESULT_WORDS (1 + 2 * KERNEL_PATTERN_SLOTS)

/* The FMA kernel's chains per thread and FMAs per chain per loop turn: a thread does 2 * 16 * iters flops. */
#define KERNEL_FMA_PER_TURN 16

/* Returns the value gpunode_pattern writes to word i in mode (enum kernel_pattern_mode) with seed. */
uint32_t kernel_pattern_word(unsigned mode, uint32_t seed, uint64_t i);

/* Runs gpunode_pattern on the CPU over n words at buf: op 0 writes, op 1 checks and records into
 * result (KERNEL_PATTERN_RESULT_WORDS words, zeroed by the caller) in index order. Returns nothing. */
void kernel_pattern_run(uint32_t *buf, uint64_t n, unsigned mode, uint32_t seed, unsigned op, uint64_t *result);

/* Returns the float gpunode_fma stores for thread tid after iters loop turns (bit-exact with the GPU). */
float kernel_fma_thread(uint64_t tid, uint32_t iters);
