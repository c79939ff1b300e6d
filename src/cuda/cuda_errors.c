/* cuda_errors.c: names and sentences for CUresult codes, shared by gpunode and the fake libcuda (tests/fake-cuda). */
#include "cuda/cuda_lib.h"

#include <stddef.h>

/* One row per CUresult the project names: cuda.h's name and a sentence for people. */
struct cuda_rc_text {
        int rc;
        const char *name, *message;
};

static const struct cuda_rc_text cuda_rc_texts[] = {
        { CUDA_SUCCESS, "CUDA_SUCCESS", "no error" },
        { CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
        { CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory" },
        { CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
        { CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED", "driver shutting down" },
        { CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY",
          "the CUDA driver loaded is a stub library (libcuda.so from the toolkit, not the driver's)" },
        { CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA_ERROR_DEVICE_UNAVAILABLE",
          "the device is unavailable (exclusive-process mode and in use, or prohibited)" },
        { CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected" },
        { CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
        { CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid" },
        { CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context" },
        { CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for the device" },
        { CUDA_ERROR_ECC_UNCORRECTABLE, "CUDA_ERROR_ECC_UNCORRECTABLE", "uncorrectable ECC error encountered" },
        { CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
          "peer access is not supported between these two devices" },
        { CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed" },
        { CUDA_ERROR_NVLINK_UNCORRECTABLE, "CUDA_ERROR_NVLINK_UNCORRECTABLE", "uncorrectable NVLink error detected" },
        { CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
          "the PTX JIT compiler library was not found (libnvidia-ptxjitcompiler)" },
        { CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
          "the PTX was compiled with an unsupported toolchain (the driver is older than the PTX ISA)" },
        { CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle" },
        { CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found" },
        { CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready" },
        { CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
          "an illegal memory access was encountered (the context is dead)" },
        { CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
          "too many resources requested for launch" },
        { CUDA_ERROR_LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated" },
        { CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
          "peer access is already enabled" },
        { CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED",
          "peer access has not been enabled" },
        { CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed" },
        { CUDA_ERROR_ASSERT, "CUDA_ERROR_ASSERT", "device-side assert triggered" },
        { CUDA_ERROR_HARDWARE_STACK_ERROR, "CUDA_ERROR_HARDWARE_STACK_ERROR", "hardware stack error" },
        { CUDA_ERROR_ILLEGAL_INSTRUCTION, "CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered" },
        { CUDA_ERROR_MISALIGNED_ADDRESS, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address" },
        { CUDA_ERROR_INVALID_ADDRESS_SPACE, "CUDA_ERROR_INVALID_ADDRESS_SPACE",
          "operation not supported on global/shared address space" },
        { CUDA_ERROR_INVALID_PC, "CUDA_ERROR_INVALID_PC", "invalid program counter" },
        { CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure (the context is dead)" },
        { CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted" },
        { CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported" },
        { CUDA_ERROR_SYSTEM_NOT_READY, "CUDA_ERROR_SYSTEM_NOT_READY",
          "system not yet initialized (on NVSwitch systems: is nvidia-fabricmanager running?)" },
        { CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
          "the libcuda version does not match the kernel driver's" },
        { CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
          "forward compatibility was attempted on non-supported hardware" },
        { CUDA_ERROR_TIMEOUT, "CUDA_ERROR_TIMEOUT", "wait operation timed out" },
        { CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error" },
};

/* Returns the row for rc, or NULL. */
static const struct cuda_rc_text *rc_text(int rc) {
        for (size_t i = 0; i < sizeof cuda_rc_texts / sizeof cuda_rc_texts[0]; i++)
                if (cuda_rc_texts[i].rc == rc) return &cuda_rc_texts[i];
        return NULL;
}

const char *cuda_result_name(int rc) {
        const struct cuda_rc_text *t = rc_text(rc);
        return t ? t->name : "CUDA_ERROR_UNRECOGNIZED";
}

const char *cuda_result_message(int rc) {
        const struct cuda_rc_text *t = rc_text(rc);
        return t ? t->message : "a CUresult this program does not know";
}

bool cuda_result_is_sticky(int rc) {
        switch (rc) {
        case CUDA_ERROR_ECC_UNCORRECTABLE:
        case CUDA_ERROR_NVLINK_UNCORRECTABLE:
        case CUDA_ERROR_ILLEGAL_ADDRESS:
        case CUDA_ERROR_LAUNCH_TIMEOUT:
        case CUDA_ERROR_ASSERT:
        case CUDA_ERROR_HARDWARE_STACK_ERROR:
        case CUDA_ERROR_ILLEGAL_INSTRUCTION:
        case CUDA_ERROR_MISALIGNED_ADDRESS:
        case CUDA_ERROR_INVALID_ADDRESS_SPACE:
        case CUDA_ERROR_INVALID_PC:
        case CUDA_ERROR_LAUNCH_FAILED:
        case CUDA_ERROR_CONTEXT_IS_DESTROYED: return true;
        default: return false;
        }
}
