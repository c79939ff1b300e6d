/* driver_lib.h: a GPU driver's user-space library (libnvidia-ml.so.1, libcuda.so.1) found and loaded
 * where drivers install it, under the root gpunode reads (hostfs), for NVML and CUDA alike. */
#pragma once

/*
 * Loads the driver library soname ("libnvidia-ml.so.1"): under a root other than "/" the root's own
 * first (it matches the root's kernel module: in each driver root, the host's and the GPU Operator's
 * driver container's /run/nvidia/driver, its ld.so.cache entry for this machine's ABI, then the
 * multiarch folder, /usr/lib64 and /usr/lib; symlinks resolved inside the root; only a file root owns
 * and nobody else may write, since loading it runs its code), then the dynamic linker's search
 * (LD_LIBRARY_PATH, the image's folders, or the one the nvidia runtime injected); under "/" the linker
 * first. Returns the dlopen handle, or NULL with a malloc'd sentence in *ret_error (when not NULL)
 * naming the linker's error and every place looked in under the root.
 */
void *driver_lib_dlopen(const char *soname, char **ret_error);
