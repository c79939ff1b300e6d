/* nvml_mig_names.c: MIG profile names as go-nvlib (and the nvidia.com/mig-* resources) write them. */
#include "nvml/nvml_facts.h"

#include <math.h>

#include "basic/util.h"

int nvml_mig_profile_name(unsigned gi_profile, unsigned ci_profile, uint64_t mig_memory_mb, uint64_t gpu_memory_bytes,
                          char *buf, size_t size) {
        /* go-nvlib pkg/nvlib/device/mig_profile.go NewMigProfile and String. */
        unsigned g, c;
        const char *suffix = "";
        if (size > 0) buf[0] = 0;
        switch (gi_profile) {
        case NVML_GPU_INSTANCE_PROFILE_1_SLICE: g = 1; break;
        case NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1:
                g = 1;
                suffix = "+me";
                break;
        case NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2: g = 1; break;
        case NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX:
                g = 1;
                suffix = "+gfx";
                break;
        case NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME:
                g = 1;
                suffix = "-me";
                break;
        case NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME:
                g = 1;
                suffix = "+me.all";
                break;
        case NVML_GPU_INSTANCE_PROFILE_2_SLICE: g = 2; break;
        case NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1:
                g = 2;
                suffix = "+me";
                break;
        case NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX:
                g = 2;
                suffix = "+gfx";
                break;
        case NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME:
                g = 2;
                suffix = "-me";
                break;
        case NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME:
                g = 2;
                suffix = "+me.all";
                break;
        case NVML_GPU_INSTANCE_PROFILE_3_SLICE: g = 3; break;
        case NVML_GPU_INSTANCE_PROFILE_4_SLICE: g = 4; break;
        case NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX:
                g = 4;
                suffix = "+gfx";
                break;
        case NVML_GPU_INSTANCE_PROFILE_6_SLICE: g = 6; break;
        case NVML_GPU_INSTANCE_PROFILE_7_SLICE: g = 7; break;
        case NVML_GPU_INSTANCE_PROFILE_8_SLICE: g = 8; break;
        default: return -EINVAL; /* go-nvlib: "invalid GPU Instance Profile ID" (3_SLICE_GFX included) */
        }
        switch (ci_profile) {
        case NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE:
        case NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1: c = 1; break;
        case NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE: c = 2; break;
        case NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE: c = 3; break;
        case NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE: c = 4; break;
        case NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE: c = 6; break;
        case NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE:
        case NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE_NVL: c = 7; break;
        case NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE: c = 8; break;
        default: return -EINVAL;
        }
        struct nvml_mig_attributes a = { .gi_slices = g, .ci_slices = c, .memory_mb = mig_memory_mb };
        char base[24];
        int r = nvml_mig_name_from_attributes(&a, gpu_memory_bytes, base, sizeof base);
        if (r < 0) return r;
        snprintf(buf, size, "%s%s", base, suffix);
        return 0;
}

int nvml_mig_name_from_attributes(const struct nvml_mig_attributes *a, uint64_t gpu_memory_bytes, char *buf,
                                  size_t size) {
        if (size > 0) buf[0] = 0;
        if (gpu_memory_bytes == 0 || a->gi_slices == 0 || a->ci_slices == 0) return -EINVAL;
        /* go-nvlib getMigMemorySizeGB, in the same float64 arithmetic. */
        const double one_mb = 1024.0 * 1024.0;
        const uint64_t one_gb = 1024ULL * 1024 * 1024;
        double frac = ((double)a->memory_mb * one_mb) / (double)gpu_memory_bytes;
        frac = ceil(frac * 8) / 8;
        double total_gb = (double)((gpu_memory_bytes + one_gb - 1) / one_gb);
        unsigned long long gb = (unsigned long long)round(frac * total_gb);
        if (a->ci_slices == a->gi_slices)
                snprintf(buf, size, "%ug.%llugb", a->gi_slices, gb);
        else
                snprintf(buf, size, "%uc.%ug.%llugb", a->ci_slices, a->gi_slices, gb);
        return 0;
}
