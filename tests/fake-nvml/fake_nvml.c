/* fake_nvml.c: a test-only libnvidia-ml.so.1 that answers NVML calls from a JSON description of GPUs. */

/*
 * Built as libnvidia-ml.so.1 (never installed). It exports the real library's symbol names, versioned
 * and unversioned, with the real signatures, structs and return codes (declared in src/nvml/nvml.h, which
 * was checked against NVIDIA's nvml.h), so a program that dlopens NVML cannot tell it from the real one.
 *
 * The description is the JSON file named by the environment variable GPUNODE_FAKE_NVML:
 *
 * {
 *   "driver_version": "550.54.15",          nvmlSystemGetDriverVersion
 *   "nvml_version": "12.550.54.15",         nvmlSystemGetNVMLVersion
 *   "cuda_driver_version": 12040,           nvmlSystemGetCudaDriverVersion(_v2)
 *   "init_error": 0,                        nonzero: nvmlInit* returns this code (9, 18, ...)
 *   "errors": {"nvmlDeviceGetCount": 999},  system calls that fail with a code
 *   "block": {"call": "nvmlDeviceGetPowerUsage", "gpu": 3, "seconds": 30},
 *                                           that call sleeps first (gpu -1 or absent: a system call)
 *   "fabric_info_max_version": 3,           2: nvmlDeviceGetGpuFabricInfoV rejects v3 like older drivers
 *   "gpus": [ {
 *     "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-...", "minor_number": 0,
 *     "pci_bus_id": "00000000:18:00.0", "pci_device_id": "0x233010DE", "pci_subsystem_id": "0x16C110DE",
 *     "memory": {"total": 85520809984, "used": 0, "free": 0, "reserved": 0},   bytes
 *     "compute_capability": [9, 0],
 *     "mig_mode": {"current": 0, "pending": 0},           null: not MIG capable
 *     "mig_max_devices": 7,                                nvmlDeviceGetMaxMigDeviceCount with MIG on
 *     "mig_devices": [{"uuid": "MIG-...", "gi": 7, "ci": 0, "gi_profile": 0, "ci_profile": 0,
 *                      "attributes": {...nvmlDeviceAttributes_t in snake case...}, "memory": {...},
 *                      "errors": {...}}, null],            MIG device handles; null: NOT_FOUND (README.md)
 *     "persistence_mode": 1,
 *     "fabric": {"state": 3, "status": 0, "cluster_uuid": "8-4-4-4-12 hex", "clique_id": 1,
 *                "health_mask": 0},                        null: not supported
 *     "ecc": {"mode_current": 1, "mode_pending": 1, "volatile_corrected": 0, "volatile_uncorrected": 0,
 *             "aggregate_corrected": 0, "aggregate_uncorrected": 0},
 *     "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": false, "failure": false},
 *     "recovery_action": 0,                                field 230 (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION)
 *     "memory_temperature": 40,                            field 82 (NVML_FI_DEV_MEMORY_TEMP)
 *     "fields": {"94": 0},                                 any other field id -> unsigned long long
 *     "temperature": 33, "power_mw": 71000, "energy_mj": 123456789,
 *     "utilization": {"gpu": 0, "memory": 0},
 *     "clocks": {"sm": 1980, "mem": 2619, "graphics": 1980, "video": 1755},   MHz
 *     "pcie_replay": 0, "clocks_event_reasons": 1,
 *     "pcie_tx_kbps": 2000, "pcie_rx_kbps": 3000,        nvmlDeviceGetPcieThroughput (KB/s)
 *     "gpm": {"graphics_util": 42.5, "any_tensor_util": 30, "dram_bw_util": 55.5,
 *             "pcie_tx_per_sec": 1000, "pcie_rx_per_sec": 2000},   GPM rates (percent, MiB/s)
 *     "gpm_supported": true,                               default: whether "gpm" is an object
 *     "violation": {"power_ns": 0, "thermal_ns": 0},      nvmlDeviceGetViolationStatus
 *     "temperature_thresholds": {"shutdown": 92, "slowdown": 89, "mem_max": 95, "gpu_max": 87},
 *     "nvlinks": [{"active": true, "replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0}],
 *                                                          past the end: INVALID_ARGUMENT (README.md)
 *     "pcie": {"width": 16, "width_max": 16, "gen": 5, "gen_max": 5, "gen_gpu_max": 5},
 *     "retired_pages": {"sbe": 0, "dbe": 0, "pending": false},   before Ampere only
 *     "processes": [{"pid": 4242, "used_memory": 1073741824}], "graphics_processes": [],
 *     "drain_state": 0,                                    nvmlDeviceQueryDrainState (by PCI address)
 *     "xid_events": [48, {"xid": 79, "gi": 1, "ci": 0}],   delivered once each by nvmlEventSetWait
 *     "lost": false,                                       true: every per-device call returns 15
 *     "errors": {"nvmlDeviceGetPowerUsage": 3}             per call name, an nvmlReturn_t
 *   } ]
 * }
 *
 * Rules: a missing key answers NVML_ERROR_NOT_SUPPORTED. Call names in "errors" and "block" are the
 * unversioned NVML names and cover every version of the call: nvmlInit (nvmlInit_v2, nvmlInitWithFlags),
 * nvmlDeviceGetPciInfo (_v2, _v3), nvmlDeviceGetMemoryInfo (_v2), nvmlDeviceGetTemperature
 * (nvmlDeviceGetTemperatureV), nvmlDeviceGetGpuFabricInfo (...V), nvmlDeviceGetCurrentClocksEventReasons
 * (...ThrottleReasons), nvmlEventSetWait (_v2), nvmlSystemGetCudaDriverVersion (_v2).
 * A missing or unreadable description makes nvmlInit return NVML_ERROR_DRIVER_NOT_LOADED (9), what the
 * real library answers on a host without the NVIDIA kernel driver. Calls before nvmlInit (or after the
 * last nvmlShutdown) return NVML_ERROR_UNINITIALIZED; init and shutdown are reference counted. Unlike
 * the real library, every successful nvmlInit re-reads the description, so tests can switch it.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "nvml/nvml.h"
#include "nvml/nvml_errors.h"

#define FAKE_MAX_GPUS 64
#define EXPORT __attribute__((visibility("default")))

struct nvmlDevice_st {
        unsigned index;
};

struct nvmlEventSet_st {
        unsigned long long types[FAKE_MAX_GPUS];
        size_t next[FAKE_MAX_GPUS];
};

static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
static int init_count;                                 /* under fake_lock */
static json_t *fake_desc;                              /* under fake_lock */
static struct nvmlDevice_st devices[FAKE_MAX_GPUS] = { /* constant after load */
        { 0 },  { 1 },  { 2 },  { 3 },  { 4 },  { 5 },  { 6 },  { 7 },  { 8 },  { 9 },  { 10 }, { 11 }, { 12 },
        { 13 }, { 14 }, { 15 }, { 16 }, { 17 }, { 18 }, { 19 }, { 20 }, { 21 }, { 22 }, { 23 }, { 24 }, { 25 },
        { 26 }, { 27 }, { 28 }, { 29 }, { 30 }, { 31 }, { 32 }, { 33 }, { 34 }, { 35 }, { 36 }, { 37 }, { 38 },
        { 39 }, { 40 }, { 41 }, { 42 }, { 43 }, { 44 }, { 45 }, { 46 }, { 47 }, { 48 }, { 49 }, { 50 }, { 51 },
        { 52 }, { 53 }, { 54 }, { 55 }, { 56 }, { 57 }, { 58 }, { 59 }, { 60 }, { 61 }, { 62 }, { 63 },
};

/* MIG devices, GPU instances and compute instances: handle k * FAKE_MAX_MIG + m is MIG device entry m
 * (of "mig_devices") of GPU k; only the address matters. */
#define FAKE_MAX_MIG 16
struct nvmlGpuInstance_st {
        char unused;
};
struct nvmlComputeInstance_st {
        char unused;
};
static struct nvmlDevice_st mig_handles[FAKE_MAX_GPUS * FAKE_MAX_MIG];
static struct nvmlGpuInstance_st gi_handles[FAKE_MAX_GPUS * FAKE_MAX_MIG];
static struct nvmlComputeInstance_st ci_handles[FAKE_MAX_GPUS * FAKE_MAX_MIG];

/* A description reference dropped at scope exit (jansson's own json_decrefp). */
#define _cleanup_json_ __attribute__((cleanup(json_decrefp)))

/* Sleeps for seconds (fractions allowed). Returns nothing. */
static void sleep_seconds(double seconds) {
        if (seconds <= 0) return;
        struct timespec ts = { .tv_sec = (time_t)seconds,
                               .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9) };
        while (nanosleep(&ts, &ts) != 0) {}
}

/* Sleeps when the description blocks call on gpu (-1: system). Returns nothing. */
static void maybe_block(json_t *d, const char *call, int gpu) {
        json_t *b = json_object_get(d, "block");
        if (!json_is_object(b)) return;
        const char *c = json_string_value(json_object_get(b, "call"));
        json_t *g = json_object_get(b, "gpu");
        int bg = json_is_integer(g) ? (int)json_integer_value(g) : -1;
        if (c && strcmp(c, call) == 0 && bg == gpu) sleep_seconds(json_number_value(json_object_get(b, "seconds")));
}

/* Returns the code an integer JSON value names, or NVML_SUCCESS for anything else. */
static nvmlReturn_t injected_code(json_t *v) {
        return json_is_integer(v) ? (nvmlReturn_t)json_integer_value(v) : NVML_SUCCESS;
}

/* Returns the code errors[call] of obj asks for, or NVML_SUCCESS. */
static nvmlReturn_t injected(json_t *obj, const char *call) {
        json_t *e = json_object_get(json_object_get(obj, "errors"), call);
        return json_is_integer(e) ? (nvmlReturn_t)json_integer_value(e) : NVML_SUCCESS;
}

/* Starts a system call: takes a description reference into *ret_d. Returns NVML_SUCCESS or the
 * code the call must answer (uninitialized, injected error). */
static nvmlReturn_t begin_sys(const char *call, json_t **ret_d) {
        pthread_mutex_lock(&fake_lock);
        if (init_count == 0) {
                pthread_mutex_unlock(&fake_lock);
                return NVML_ERROR_UNINITIALIZED;
        }
        json_t *d = json_incref(fake_desc);
        pthread_mutex_unlock(&fake_lock);
        *ret_d = d;
        maybe_block(d, call, -1);
        return injected(d, call);
}

/* Starts a call about GPU index: like begin_sys, plus *ret_g (borrowed from *ret_d). Returns
 * NVML_SUCCESS or the code to answer (invalid index, injected error; lost when handle_based). */
static nvmlReturn_t begin_gpu(const char *call, unsigned index, bool handle_based, json_t **ret_d, json_t **ret_g) {
        pthread_mutex_lock(&fake_lock);
        if (init_count == 0) {
                pthread_mutex_unlock(&fake_lock);
                return NVML_ERROR_UNINITIALIZED;
        }
        json_t *d = json_incref(fake_desc);
        pthread_mutex_unlock(&fake_lock);
        *ret_d = d;
        json_t *g = json_array_get(json_object_get(d, "gpus"), index);
        if (!g || index >= FAKE_MAX_GPUS) return NVML_ERROR_INVALID_ARGUMENT;
        *ret_g = g;
        maybe_block(d, call, (int)index);
        if (handle_based && json_is_true(json_object_get(g, "lost"))) return NVML_ERROR_GPU_IS_LOST;
        return injected(g, call);
}

/* Starts a call on a device handle. Returns like begin_gpu; an unknown handle is an invalid argument. */
static nvmlReturn_t begin_dev(const char *call, nvmlDevice_t dev, json_t **ret_d, json_t **ret_g) {
        if (!dev || dev < devices || dev >= devices + FAKE_MAX_GPUS) return NVML_ERROR_INVALID_ARGUMENT;
        return begin_gpu(call, dev->index, true, ret_d, ret_g);
}

/* Copies string s into buf of length len. Returns NVML_SUCCESS or NVML_ERROR_INSUFFICIENT_SIZE. */
static nvmlReturn_t put_string(const char *s, char *buf, unsigned len) {
        if (!buf) return NVML_ERROR_INVALID_ARGUMENT;
        if (strlen(s) + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
        memcpy(buf, s, strlen(s) + 1);
        return NVML_SUCCESS;
}

/* Reads obj[key] as an unsigned number (an integer, or a "0x..." string) into *ret. Returns false when absent. */
static bool get_u64(json_t *obj, const char *key, unsigned long long *ret) {
        json_t *v = json_object_get(obj, key);
        if (json_is_integer(v)) {
                *ret = (unsigned long long)json_integer_value(v);
                return true;
        }
        if (json_is_true(v) || json_is_false(v)) {
                *ret = json_is_true(v);
                return true;
        }
        if (json_is_string(v)) {
                char *end;
                *ret = strtoull(json_string_value(v), &end, 0);
                return *end == 0;
        }
        return false;
}

/* Answers an unsigned int fact obj[key]. Returns NVML_SUCCESS or NVML_ERROR_NOT_SUPPORTED. */
static nvmlReturn_t answer_uint(json_t *obj, const char *key, unsigned *out) {
        unsigned long long v;
        if (!out) return NVML_ERROR_INVALID_ARGUMENT;
        if (!get_u64(obj, key, &v)) return NVML_ERROR_NOT_SUPPORTED;
        *out = (unsigned)v;
        return NVML_SUCCESS;
}

/* Answers an unsigned long long fact obj[key]. Returns NVML_SUCCESS or NVML_ERROR_NOT_SUPPORTED. */
static nvmlReturn_t answer_ull(json_t *obj, const char *key, unsigned long long *out) {
        if (!out) return NVML_ERROR_INVALID_ARGUMENT;
        return get_u64(obj, key, out) ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

/* ---- init, shutdown, errors ---- */

static struct stat reload_seen; /* under fake_lock: the description file last loaded */

/*
 * GPUNODE_FAKE_NVML_RELOAD=1: while initialised, nvmlDeviceGetCount re-reads the description when the
 * file changed (mtime, size or inode), so a test can change a long-running process's GPUs (lose one,
 * fail a call) without it calling nvmlInit again. Replace the file atomically (write, rename). A new
 * description that does not parse is ignored. Returns nothing.
 */
static void maybe_reload(void) {
        struct stat *seen_p = &reload_seen;
        const char *flag = getenv("GPUNODE_FAKE_NVML_RELOAD");
        const char *path = getenv("GPUNODE_FAKE_NVML");
        struct stat st;
        if (!flag || strcmp(flag, "1") != 0 || !path || stat(path, &st) < 0) return;
        pthread_mutex_lock(&fake_lock);
        bool changed = init_count > 0 && (st.st_ino != seen_p->st_ino || st.st_size != seen_p->st_size ||
                                          st.st_mtim.tv_sec != seen_p->st_mtim.tv_sec ||
                                          st.st_mtim.tv_nsec != seen_p->st_mtim.tv_nsec);
        if (changed) {
                json_t *d = json_load_file(path, 0, NULL);
                if (json_is_object(d)) {
                        json_decref(fake_desc);
                        fake_desc = d;
                        *seen_p = st;
                } else {
                        json_decref(d);
                }
        }
        pthread_mutex_unlock(&fake_lock);
}

/* How often each GPU's clock event reasons were asked since nvmlInit (under fake_lock). */
static unsigned reasons_calls[FAKE_MAX_GPUS];

/* Loads the description and takes an init reference. Returns NVML_SUCCESS, init_error, or
 * NVML_ERROR_DRIVER_NOT_LOADED when there is no readable description. */
static nvmlReturn_t fake_init(void) {
        const char *path = getenv("GPUNODE_FAKE_NVML");
        json_t *d = path ? json_load_file(path, 0, NULL) : NULL;
        if (!json_is_object(d)) {
                json_decref(d);
                return NVML_ERROR_DRIVER_NOT_LOADED;
        }
        maybe_block(d, "nvmlInit", -1);
        json_t *ie = json_object_get(d, "init_error");
        if (json_is_integer(ie) && json_integer_value(ie) != 0) {
                nvmlReturn_t rc = (nvmlReturn_t)json_integer_value(ie);
                json_decref(d);
                return rc;
        }
        struct stat st;
        pthread_mutex_lock(&fake_lock);
        if (stat(path, &st) == 0) reload_seen = st;
        json_decref(fake_desc);
        fake_desc = d;
        init_count++;
        memset(reasons_calls, 0, sizeof reasons_calls);
        pthread_mutex_unlock(&fake_lock);
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlInit(void) { return fake_init(); }
EXPORT nvmlReturn_t nvmlInit_v2(void) { return fake_init(); }
EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
        (void)flags;
        return fake_init();
}

EXPORT nvmlReturn_t nvmlShutdown(void) {
        json_t *old = NULL;
        pthread_mutex_lock(&fake_lock);
        if (init_count == 0) {
                pthread_mutex_unlock(&fake_lock);
                return NVML_ERROR_UNINITIALIZED;
        }
        if (--init_count == 0) {
                old = fake_desc;
                fake_desc = NULL;
        }
        pthread_mutex_unlock(&fake_lock);
        json_decref(old);
        return NVML_SUCCESS;
}

/* The strings the real library returns (src/nvml/nvml_errors.c, shared with gpunode). */
EXPORT const char *nvmlErrorString(nvmlReturn_t result) {
        return nvml_error_string(result);
}

/* ---- system queries ---- */

/* Answers a string fact of the description. Returns an nvmlReturn_t. */
static nvmlReturn_t sys_string(const char *call, const char *key, char *buf, unsigned len) {
        _cleanup_json_ json_t *d = NULL;
        nvmlReturn_t rc = begin_sys(call, &d);
        if (rc != NVML_SUCCESS) return rc;
        const char *s = json_string_value(json_object_get(d, key));
        return s ? put_string(s, buf, len) : NVML_ERROR_NOT_SUPPORTED;
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
        return sys_string("nvmlSystemGetDriverVersion", "driver_version", version, length);
}

EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
        return sys_string("nvmlSystemGetNVMLVersion", "nvml_version", version, length);
}

/* Answers nvmlSystemGetCudaDriverVersion (both versions). Returns an nvmlReturn_t. */
static nvmlReturn_t cuda_version(int *out) {
        _cleanup_json_ json_t *d = NULL;
        nvmlReturn_t rc = begin_sys("nvmlSystemGetCudaDriverVersion", &d);
        unsigned v;
        if (rc != NVML_SUCCESS) return rc;
        rc = answer_uint(d, "cuda_driver_version", &v);
        if (rc == NVML_SUCCESS) *out = (int)v;
        return rc;
}

EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion) { return cuda_version(cudaDriverVersion); }
EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion) {
        return cuda_version(cudaDriverVersion);
}

/* Answers nvmlDeviceGetCount (both versions). Returns an nvmlReturn_t. */
static nvmlReturn_t device_count(unsigned *out) {
        _cleanup_json_ json_t *d = NULL;
        maybe_reload();
        nvmlReturn_t rc = begin_sys("nvmlDeviceGetCount", &d);
        if (rc != NVML_SUCCESS) return rc;
        if (!out) return NVML_ERROR_INVALID_ARGUMENT;
        size_t n = json_array_size(json_object_get(d, "gpus"));
        *out = (unsigned)(n > FAKE_MAX_GPUS ? FAKE_MAX_GPUS : n);
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount) { return device_count(deviceCount); }
EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount) { return device_count(deviceCount); }

/* Answers nvmlDeviceGetHandleByIndex (both versions). Returns an nvmlReturn_t. */
static nvmlReturn_t handle_by_index(unsigned index, nvmlDevice_t *out) {
        _cleanup_json_ json_t *d = NULL;
        json_t *g = NULL;
        nvmlReturn_t rc = begin_gpu("nvmlDeviceGetHandleByIndex", index, false, &d, &g);
        if (rc != NVML_SUCCESS) return rc;
        if (!out) return NVML_ERROR_INVALID_ARGUMENT;
        *out = &devices[index];
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
        return handle_by_index(index, device);
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
        return handle_by_index(index, device);
}

/* ---- per-device queries ---- */

/* Declares d and g and starts a device call, returning early on any failure. */
#define BEGIN(call)                                             \
        _cleanup_json_ json_t *d = NULL;                        \
        json_t *g = NULL;                                       \
        nvmlReturn_t rc = begin_dev((call), device, &d, &g);    \
        if (rc != NVML_SUCCESS) return rc

EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index) {
        BEGIN("nvmlDeviceGetIndex");
        if (!index) return NVML_ERROR_INVALID_ARGUMENT;
        *index = device->index;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
        BEGIN("nvmlDeviceGetName");
        const char *s = json_string_value(json_object_get(g, "name"));
        return s ? put_string(s, name, length) : NVML_ERROR_NOT_SUPPORTED;
}

static bool is_mig_handle(nvmlDevice_t dev);
static nvmlReturn_t mig_uuid(nvmlDevice_t device, char *uuid, unsigned length);
static nvmlReturn_t mig_memory(nvmlDevice_t device, unsigned long long *total, unsigned long long *reserved,
                               unsigned long long *used, unsigned long long *free_);

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
        if (is_mig_handle(device)) return mig_uuid(device, uuid, length);
        BEGIN("nvmlDeviceGetUUID");
        const char *s = json_string_value(json_object_get(g, "uuid"));
        return s ? put_string(s, uuid, length) : NVML_ERROR_NOT_SUPPORTED;
}

EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber) {
        BEGIN("nvmlDeviceGetMinorNumber");
        return answer_uint(g, "minor_number", minorNumber);
}

/* Answers every nvmlDeviceGetPciInfo version (they share nvmlPciInfo_t). Returns an nvmlReturn_t. */
static nvmlReturn_t pci_info(nvmlDevice_t device, nvmlPciInfo_t *pci) {
        BEGIN("nvmlDeviceGetPciInfo");
        const char *id = json_string_value(json_object_get(g, "pci_bus_id"));
        unsigned dom, bus, dev, fn;
        unsigned long long did = 0, sid = 0;
        if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
        if (!id || sscanf(id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) return NVML_ERROR_NOT_SUPPORTED;
        get_u64(g, "pci_device_id", &did);
        get_u64(g, "pci_subsystem_id", &sid);
        memset(pci, 0, sizeof *pci);
        snprintf(pci->busId, sizeof pci->busId, "%s", id);
        snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT, dom & 0xffff, bus,
                 dev);
        pci->domain = dom;
        pci->bus = bus;
        pci->device = dev;
        pci->pciDeviceId = (unsigned)did;
        pci->pciSubSystemId = (unsigned)sid;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci) { return pci_info(device, pci); }
EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci) { return pci_info(device, pci); }
EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) { return pci_info(device, pci); }

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
        unsigned long long reserved;
        if (is_mig_handle(device))
                return memory ? mig_memory(device, &memory->total, &reserved, &memory->used, &memory->free)
                              : NVML_ERROR_INVALID_ARGUMENT;
        BEGIN("nvmlDeviceGetMemoryInfo");
        json_t *m = json_object_get(g, "memory");
        if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
        if (!json_is_object(m)) return NVML_ERROR_NOT_SUPPORTED;
        memory->total = memory->used = memory->free = 0;
        get_u64(m, "total", &memory->total);
        get_u64(m, "used", &memory->used);
        get_u64(m, "free", &memory->free);
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory) {
        if (is_mig_handle(device)) {
                if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
                if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
                return mig_memory(device, &memory->total, &memory->reserved, &memory->used, &memory->free);
        }
        BEGIN("nvmlDeviceGetMemoryInfo");
        json_t *m = json_object_get(g, "memory");
        if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
        if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
        if (!json_is_object(m)) return NVML_ERROR_NOT_SUPPORTED;
        memory->total = memory->reserved = memory->used = memory->free = 0;
        get_u64(m, "total", &memory->total);
        get_u64(m, "reserved", &memory->reserved);
        get_u64(m, "used", &memory->used);
        get_u64(m, "free", &memory->free);
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor) {
        BEGIN("nvmlDeviceGetCudaComputeCapability");
        json_t *cc = json_object_get(g, "compute_capability");
        if (!major || !minor) return NVML_ERROR_INVALID_ARGUMENT;
        if (json_array_size(cc) != 2) return NVML_ERROR_NOT_SUPPORTED;
        *major = (int)json_integer_value(json_array_get(cc, 0));
        *minor = (int)json_integer_value(json_array_get(cc, 1));
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode) {
        BEGIN("nvmlDeviceGetMigMode");
        json_t *m = json_object_get(g, "mig_mode");
        if (!currentMode || !pendingMode) return NVML_ERROR_INVALID_ARGUMENT;
        if (!json_is_object(m)) return NVML_ERROR_NOT_SUPPORTED;
        if (answer_uint(m, "current", currentMode) != NVML_SUCCESS) *currentMode = 0;
        if (answer_uint(m, "pending", pendingMode) != NVML_SUCCESS) *pendingMode = *currentMode;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t *mode) {
        BEGIN("nvmlDeviceGetPersistenceMode");
        unsigned v;
        if (!mode) return NVML_ERROR_INVALID_ARGUMENT;
        rc = answer_uint(g, "persistence_mode", &v);
        if (rc == NVML_SUCCESS) *mode = v ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
        return rc;
}

/* Parses a UUID string's 32 hex digits (dashes ignored) into 16 bytes. Returns nothing; bad input gives zeros. */
static void parse_uuid(const char *s, unsigned char out[16]) {
        unsigned n = 0;
        memset(out, 0, 16);
        for (; s && *s && n < 32; s++) {
                int v;
                if (*s >= '0' && *s <= '9') v = *s - '0';
                else if (*s >= 'a' && *s <= 'f') v = *s - 'a' + 10;
                else if (*s >= 'A' && *s <= 'F') v = *s - 'A' + 10;
                else continue;
                out[n / 2] |= (unsigned char)(n % 2 ? v : v << 4);
                n++;
        }
}

/* Reads the fabric object into its parts. Returns NVML_SUCCESS or NVML_ERROR_NOT_SUPPORTED. */
static nvmlReturn_t fabric(json_t *g, unsigned char uuid[16], nvmlReturn_t *status, unsigned *clique,
                           nvmlGpuFabricState_t *state, unsigned *health) {
        json_t *f = json_object_get(g, "fabric");
        unsigned v = 0;
        if (!json_is_object(f)) return NVML_ERROR_NOT_SUPPORTED;
        parse_uuid(json_string_value(json_object_get(f, "cluster_uuid")), uuid);
        *status = answer_uint(f, "status", &v) == NVML_SUCCESS ? (nvmlReturn_t)v : NVML_SUCCESS;
        *clique = answer_uint(f, "clique_id", &v) == NVML_SUCCESS ? v : 0;
        *state = answer_uint(f, "state", &v) == NVML_SUCCESS ? (nvmlGpuFabricState_t)v : 0;
        *health = answer_uint(f, "health_mask", &v) == NVML_SUCCESS ? v : 0;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t device, nvmlGpuFabricInfo_t *gpuFabricInfo) {
        BEGIN("nvmlDeviceGetGpuFabricInfo");
        unsigned health;
        if (!gpuFabricInfo) return NVML_ERROR_INVALID_ARGUMENT;
        return fabric(g, gpuFabricInfo->clusterUuid, &gpuFabricInfo->status, &gpuFabricInfo->cliqueId,
                      &gpuFabricInfo->state, &health);
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, nvmlGpuFabricInfoV_t *gpuFabricInfo) {
        BEGIN("nvmlDeviceGetGpuFabricInfo");
        unsigned long long maxv = 3;
        if (!gpuFabricInfo) return NVML_ERROR_INVALID_ARGUMENT;
        get_u64(d, "fabric_info_max_version", &maxv);
        unsigned ver = gpuFabricInfo->version;
        if (!(ver == nvmlGpuFabricInfo_v2 || (ver == nvmlGpuFabricInfo_v3 && maxv >= 3)))
                return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
        /* Write only the fields of the version asked for: a v2 caller's buffer ends before healthSummary. */
        nvmlGpuFabricInfo_v3_t tmp;
        memset(&tmp, 0, sizeof tmp);
        rc = fabric(g, tmp.clusterUuid, &tmp.status, &tmp.cliqueId, &tmp.state, &tmp.healthMask);
        if (rc != NVML_SUCCESS) return rc;
        tmp.version = ver;
        memcpy(gpuFabricInfo, &tmp, ver == nvmlGpuFabricInfo_v2 ? sizeof(nvmlGpuFabricInfo_v2_t) : sizeof tmp);
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t *current, nvmlEnableState_t *pending) {
        BEGIN("nvmlDeviceGetEccMode");
        json_t *e = json_object_get(g, "ecc");
        unsigned c, p;
        if (!current || !pending) return NVML_ERROR_INVALID_ARGUMENT;
        if (answer_uint(e, "mode_current", &c) != NVML_SUCCESS) return NVML_ERROR_NOT_SUPPORTED;
        if (answer_uint(e, "mode_pending", &p) != NVML_SUCCESS) p = c;
        *current = c ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
        *pending = p ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                                nvmlEccCounterType_t counterType, unsigned long long *eccCounts) {
        BEGIN("nvmlDeviceGetTotalEccErrors");
        char key[64];
        if (errorType >= NVML_MEMORY_ERROR_TYPE_COUNT || counterType >= NVML_ECC_COUNTER_TYPE_COUNT)
                return NVML_ERROR_INVALID_ARGUMENT;
        snprintf(key, sizeof key, "%s_%s", counterType == NVML_VOLATILE_ECC ? "volatile" : "aggregate",
                 errorType == NVML_MEMORY_ERROR_TYPE_CORRECTED ? "corrected" : "uncorrected");
        return answer_ull(json_object_get(g, "ecc"), key, eccCounts);
}

EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows, unsigned int *uncRows,
                                              unsigned int *isPending, unsigned int *failureOccurred) {
        BEGIN("nvmlDeviceGetRemappedRows");
        json_t *r = json_object_get(g, "remapped_rows");
        if (!corrRows || !uncRows || !isPending || !failureOccurred) return NVML_ERROR_INVALID_ARGUMENT;
        if (!json_is_object(r)) return NVML_ERROR_NOT_SUPPORTED;
        if (answer_uint(r, "correctable", corrRows) != NVML_SUCCESS) *corrRows = 0;
        if (answer_uint(r, "uncorrectable", uncRows) != NVML_SUCCESS) *uncRows = 0;
        if (answer_uint(r, "pending", isPending) != NVML_SUCCESS) *isPending = 0;
        if (answer_uint(r, "failure", failureOccurred) != NVML_SUCCESS) *failureOccurred = 0;
        return NVML_SUCCESS;
}

/* Answers the NVLink error totals (fields 38, 45, 52, 59) as the sum of g's "nvlinks" counters over
 * its active links, as the driver sums them. Returns false for another field or without "nvlinks". */
static bool nvlink_total(json_t *g, unsigned field, unsigned long long *ret) {
        const char *key = field == NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL   ? "crc_flit"
                          : field == NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL ? "crc_data"
                          : field == NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL   ? "replay"
                          : field == NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL ? "recovery"
                                                                                   : NULL;
        json_t *a = json_object_get(g, "nvlinks");
        if (!key || !json_is_array(a)) return false;
        unsigned long long sum = 0, v;
        for (size_t i = 0; i < json_array_size(a); i++) {
                json_t *l = json_array_get(a, i);
                if (json_is_true(json_object_get(l, "active")) && get_u64(l, key, &v)) sum += v;
        }
        *ret = sum;
        return true;
}

EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t *values) {
        BEGIN("nvmlDeviceGetFieldValues");
        struct timespec now;
        if (valuesCount < 0 || (valuesCount > 0 && !values)) return NVML_ERROR_INVALID_ARGUMENT;
        clock_gettime(CLOCK_REALTIME, &now);
        for (int i = 0; i < valuesCount; i++) {
                nvmlFieldValue_t *v = &values[i];
                unsigned long long x;
                char key[16];
                v->timestamp = (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000;
                v->latencyUsec = 0;
                memset(&v->value, 0, sizeof v->value);
                v->nvmlReturn = NVML_SUCCESS;
                snprintf(key, sizeof key, "%u", v->fieldId);
                if (v->fieldId == NVML_FI_DEV_GET_GPU_RECOVERY_ACTION && get_u64(g, "recovery_action", &x)) {
                        v->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
                        v->value.uiVal = (unsigned)x;
                } else if (v->fieldId == NVML_FI_DEV_MEMORY_TEMP && get_u64(g, "memory_temperature", &x)) {
                        v->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
                        v->value.uiVal = (unsigned)x;
                } else if (get_u64(json_object_get(g, "fields"), key, &x)) {
                        v->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
                        v->value.ullVal = x;
                } else if (nvlink_total(g, v->fieldId, &x)) {
                        v->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
                        v->value.ullVal = x;
                } else {
                        v->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
                }
        }
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                             unsigned int *temp) {
        BEGIN("nvmlDeviceGetTemperature");
        if (sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
        return answer_uint(g, "temperature", temp);
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t device, nvmlTemperature_t *temperature) {
        BEGIN("nvmlDeviceGetTemperature");
        unsigned t;
        if (!temperature) return NVML_ERROR_INVALID_ARGUMENT;
        if (temperature->version != nvmlTemperature_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
        if (temperature->sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
        rc = answer_uint(g, "temperature", &t);
        if (rc == NVML_SUCCESS) temperature->temperature = (int)t;
        return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power) {
        BEGIN("nvmlDeviceGetPowerUsage");
        return answer_uint(g, "power_mw", power);
}

EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *energy) {
        BEGIN("nvmlDeviceGetTotalEnergyConsumption");
        return answer_ull(g, "energy_mj", energy);
}

EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization) {
        BEGIN("nvmlDeviceGetUtilizationRates");
        json_t *u = json_object_get(g, "utilization");
        if (!utilization) return NVML_ERROR_INVALID_ARGUMENT;
        if (!json_is_object(u)) return NVML_ERROR_NOT_SUPPORTED;
        if (answer_uint(u, "gpu", &utilization->gpu) != NVML_SUCCESS) utilization->gpu = 0;
        if (answer_uint(u, "memory", &utilization->memory) != NVML_SUCCESS) utilization->memory = 0;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock) {
        BEGIN("nvmlDeviceGetClockInfo");
        static const char *const names[] = { "graphics", "sm", "mem", "video" };
        if ((unsigned)type >= 4) return NVML_ERROR_INVALID_ARGUMENT;
        return answer_uint(json_object_get(g, "clocks"), names[type], clock);
}

EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int *value) {
        BEGIN("nvmlDeviceGetPcieReplayCounter");
        return answer_uint(g, "pcie_replay", value);
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device, unsigned long long *reasons) {
        BEGIN("nvmlDeviceGetCurrentClocksEventReasons");
        json_t *a = json_object_get(g, "clocks_event_reasons");
        if (!json_is_array(a)) return answer_ull(g, "clocks_event_reasons", reasons);
        /* An array: the n-th call since nvmlInit answers element n (the last one from then on). */
        if (!reasons) return NVML_ERROR_INVALID_ARGUMENT;
        pthread_mutex_lock(&fake_lock);
        size_t n = reasons_calls[device->index]++;
        pthread_mutex_unlock(&fake_lock);
        size_t len = json_array_size(a);
        if (len == 0) return NVML_ERROR_NOT_SUPPORTED;
        json_t *v = json_array_get(a, n < len ? n : len - 1);
        if (!json_is_integer(v)) return NVML_ERROR_NOT_SUPPORTED;
        *reasons = (unsigned long long)json_integer_value(v);
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device, unsigned long long *reasons) {
        return nvmlDeviceGetCurrentClocksEventReasons(device, reasons);
}

/* Answers nvmlDeviceGet{Encoder,Decoder}Utilization from g[key] (percent); the period is 167 ms like
 * the real library's. Returns an nvmlReturn_t. */
static nvmlReturn_t codec_util(json_t *g, const char *key, unsigned *util, unsigned *period_us) {
        if (!util || !period_us) return NVML_ERROR_INVALID_ARGUMENT;
        nvmlReturn_t rc = answer_uint(g, key, util);
        if (rc == NVML_SUCCESS) *period_us = 167000;
        return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device, unsigned int *utilization,
                                                    unsigned int *samplingPeriodUs) {
        BEGIN("nvmlDeviceGetEncoderUtilization");
        return codec_util(g, "encoder_utilization", utilization, samplingPeriodUs);
}

EXPORT nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device, unsigned int *utilization,
                                                    unsigned int *samplingPeriodUs) {
        BEGIN("nvmlDeviceGetDecoderUtilization");
        return codec_util(g, "decoder_utilization", utilization, samplingPeriodUs);
}

/* ---- health queries: violation times, temperature thresholds, NVLink, PCIe link, retired pages,
 * processes, drain state ---- */

EXPORT nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t device, nvmlPerfPolicyType_t perfPolicyType,
                                                 nvmlViolationTime_t *violTime) {
        BEGIN("nvmlDeviceGetViolationStatus");
        static const char *const keys[] = { [NVML_PERF_POLICY_POWER] = "power_ns", [NVML_PERF_POLICY_THERMAL] = "thermal_ns" };
        struct timespec now;
        unsigned long long ns;
        if (!violTime || (unsigned)perfPolicyType >= NVML_PERF_POLICY_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
        if ((unsigned)perfPolicyType >= sizeof keys / sizeof keys[0] || !keys[perfPolicyType]) return NVML_ERROR_NOT_SUPPORTED;
        rc = answer_ull(json_object_get(g, "violation"), keys[perfPolicyType], &ns);
        if (rc != NVML_SUCCESS) return rc;
        clock_gettime(CLOCK_REALTIME, &now);
        violTime->referenceTime = (unsigned long long)now.tv_sec * 1000000ULL + (unsigned long long)now.tv_nsec / 1000;
        violTime->violationTime = ns;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device, nvmlTemperatureThresholds_t thresholdType,
                                                      unsigned int *temp) {
        BEGIN("nvmlDeviceGetTemperatureThreshold");
        static const char *const keys[] = { "shutdown", "slowdown", "mem_max", "gpu_max" };
        if (!temp || (unsigned)thresholdType >= NVML_TEMPERATURE_THRESHOLD_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
        if ((unsigned)thresholdType >= sizeof keys / sizeof keys[0]) return NVML_ERROR_NOT_SUPPORTED;
        return answer_uint(json_object_get(g, "temperature_thresholds"), keys[thresholdType], temp);
}

/* Returns link's entry of g's "nvlinks" into *ret_l, or the code the call answers: NOT_SUPPORTED
 * without "nvlinks", INVALID_ARGUMENT past its end, an entry's "error". */
static nvmlReturn_t nvlink_entry(json_t *g, unsigned link, json_t **ret_l) {
        json_t *a = json_object_get(g, "nvlinks");
        if (!json_is_array(a)) return NVML_ERROR_NOT_SUPPORTED;
        json_t *l = json_array_get(a, link);
        if (!json_is_object(l)) return NVML_ERROR_INVALID_ARGUMENT;
        nvmlReturn_t e = injected_code(json_object_get(l, "error"));
        if (e != NVML_SUCCESS) return e;
        *ret_l = l;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, nvmlEnableState_t *isActive) {
        BEGIN("nvmlDeviceGetNvLinkState");
        json_t *l = NULL;
        if (!isActive) return NVML_ERROR_INVALID_ARGUMENT;
        if ((rc = nvlink_entry(g, link, &l)) != NVML_SUCCESS) return rc;
        *isActive = json_is_true(json_object_get(l, "active")) ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t device, unsigned int link,
                                                    nvmlNvLinkErrorCounter_t counter, unsigned long long *counterValue) {
        BEGIN("nvmlDeviceGetNvLinkErrorCounter");
        static const char *const keys[] = { "replay", "recovery", "crc_flit", "crc_data", "ecc_data" };
        json_t *l = NULL;
        if (!counterValue || (unsigned)counter >= NVML_NVLINK_ERROR_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
        if ((rc = nvlink_entry(g, link, &l)) != NVML_SUCCESS) return rc;
        nvmlReturn_t e = injected_code(json_object_get(json_object_get(l, "counter_errors"), keys[counter]));
        if (e != NVML_SUCCESS) return e;
        return answer_ull(l, keys[counter], counterValue);
}

/* Answers one of the PCIe link queries from g's "pcie"[key]. Returns an nvmlReturn_t. */
static nvmlReturn_t pcie_link(nvmlDevice_t device, const char *call, const char *key, unsigned *out) {
        BEGIN(call);
        return answer_uint(json_object_get(g, "pcie"), key, out);
}

EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int *v) {
        return pcie_link(device, "nvmlDeviceGetCurrPcieLinkWidth", "width", v);
}
EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int *v) {
        return pcie_link(device, "nvmlDeviceGetMaxPcieLinkWidth", "width_max", v);
}
EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int *v) {
        return pcie_link(device, "nvmlDeviceGetCurrPcieLinkGeneration", "gen", v);
}
EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int *v) {
        return pcie_link(device, "nvmlDeviceGetMaxPcieLinkGeneration", "gen_max", v);
}
EXPORT nvmlReturn_t nvmlDeviceGetGpuMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int *v) {
        return pcie_link(device, "nvmlDeviceGetGpuMaxPcieLinkGeneration", "gen_gpu_max", v);
}

EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, nvmlPageRetirementCause_t cause, unsigned int *pageCount,
                                              unsigned long long *addresses) {
        BEGIN("nvmlDeviceGetRetiredPages");
        unsigned n;
        if (!pageCount || (unsigned)cause >= NVML_PAGE_RETIREMENT_CAUSE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
        rc = answer_uint(json_object_get(g, "retired_pages"),
                         cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR ? "dbe" : "sbe", &n);
        if (rc != NVML_SUCCESS) return rc;
        if (*pageCount < n) {
                *pageCount = n;
                return NVML_ERROR_INSUFFICIENT_SIZE;
        }
        if (n > 0 && !addresses) return NVML_ERROR_INVALID_ARGUMENT;
        for (unsigned i = 0; i < n; i++) addresses[i] = 0x1000ULL * (i + 1) + ((unsigned long long)cause << 32);
        *pageCount = n;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages_v2(nvmlDevice_t device, nvmlPageRetirementCause_t cause,
                                                 unsigned int *pageCount, unsigned long long *addresses,
                                                 unsigned long long *timestamps) {
        unsigned want = pageCount ? *pageCount : 0;
        nvmlReturn_t rc = nvmlDeviceGetRetiredPages(device, cause, pageCount, addresses);
        if (rc == NVML_SUCCESS && timestamps)
                for (unsigned i = 0; i < *pageCount && i < want; i++) timestamps[i] = 1700000000ULL + i;
        return rc;
}

EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device, nvmlEnableState_t *isPending) {
        BEGIN("nvmlDeviceGetRetiredPagesPendingStatus");
        unsigned v;
        if (!isPending) return NVML_ERROR_INVALID_ARGUMENT;
        rc = answer_uint(json_object_get(g, "retired_pages"), "pending", &v);
        if (rc == NVML_SUCCESS) *isPending = v ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
        return rc;
}

/* Answers a running-processes call from the list g[key] ({pid, used_memory, gi, ci} objects) and
 * g[count_key] (a count larger than the list: entries past it are zero). Returns an nvmlReturn_t. */
static nvmlReturn_t processes(json_t *g, const char *key, const char *count_key, unsigned *infoCount,
                              nvmlProcessInfo_t *infos) {
        json_t *a = json_object_get(g, key);
        unsigned long long extra = 0;
        if (!infoCount) return NVML_ERROR_INVALID_ARGUMENT;
        if (!json_is_array(a)) return NVML_ERROR_NOT_SUPPORTED;
        get_u64(g, count_key, &extra);
        unsigned n = (unsigned)json_array_size(a);
        if (extra > n) n = (unsigned)extra;
        if (*infoCount < n) {
                *infoCount = n;
                return NVML_ERROR_INSUFFICIENT_SIZE;
        }
        if (n > 0 && !infos) return NVML_ERROR_INVALID_ARGUMENT;
        for (unsigned i = 0; i < n; i++) {
                json_t *p = json_array_get(a, i);
                unsigned long long v;
                memset(&infos[i], 0, sizeof infos[i]);
                infos[i].gpuInstanceId = infos[i].computeInstanceId = 0xFFFFFFFFu;
                if (get_u64(p, "pid", &v)) infos[i].pid = (unsigned)v;
                if (get_u64(p, "used_memory", &v)) infos[i].usedGpuMemory = v;
                if (get_u64(p, "gi", &v)) infos[i].gpuInstanceId = (unsigned)v;
                if (get_u64(p, "ci", &v)) infos[i].computeInstanceId = (unsigned)v;
        }
        *infoCount = n;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                           nvmlProcessInfo_t *infos) {
        BEGIN("nvmlDeviceGetComputeRunningProcesses");
        return processes(g, "processes", "processes_count", infoCount, infos);
}
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                           nvmlProcessInfo_t *infos) {
        return nvmlDeviceGetComputeRunningProcesses_v3(device, infoCount, infos);
}
EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                            nvmlProcessInfo_t *infos) {
        BEGIN("nvmlDeviceGetGraphicsRunningProcesses");
        return processes(g, "graphics_processes", "graphics_processes_count", infoCount, infos);
}
EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                            nvmlProcessInfo_t *infos) {
        return nvmlDeviceGetGraphicsRunningProcesses_v3(device, infoCount, infos);
}

EXPORT nvmlReturn_t nvmlDeviceQueryDrainState(nvmlPciInfo_t *pciInfo, nvmlEnableState_t *currentState) {
        _cleanup_json_ json_t *d = NULL;
        json_t *g = NULL;
        if (!pciInfo || !currentState) return NVML_ERROR_INVALID_ARGUMENT;
        /* The GPU is named by its PCI address, as the real call takes it. */
        pthread_mutex_lock(&fake_lock);
        json_t *gpus = init_count ? json_object_get(fake_desc, "gpus") : NULL;
        unsigned index = FAKE_MAX_GPUS;
        for (size_t i = 0; i < json_array_size(gpus) && i < FAKE_MAX_GPUS; i++) {
                const char *id = json_string_value(json_object_get(json_array_get(gpus, i), "pci_bus_id"));
                if (id && strncasecmp(id, pciInfo->busId, sizeof pciInfo->busId) == 0) index = (unsigned)i;
        }
        bool up = init_count > 0;
        pthread_mutex_unlock(&fake_lock);
        if (!up) return NVML_ERROR_UNINITIALIZED;
        if (index == FAKE_MAX_GPUS) return NVML_ERROR_NOT_FOUND;
        nvmlReturn_t rc = begin_gpu("nvmlDeviceQueryDrainState", index, true, &d, &g);
        if (rc != NVML_SUCCESS) return rc;
        unsigned v;
        rc = answer_uint(g, "drain_state", &v);
        if (rc == NVML_SUCCESS) *currentState = v ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
        return rc;
}

/* ---- MIG devices ---- */

/* GPU instance profile ids by NVML_GPU_INSTANCE_PROFILE_* index, as an A100/H100 answers them (1g 19,
 * 1g+me 20, 1g.20gb 15, 2g 14, 3g 9, 4g 5, 7g 0); other indices get 32 + index. Ids differ from
 * indices on purpose, as on real GPUs. Compute instance profile ids equal their index. */
static unsigned gi_profile_id(unsigned index) {
        static const unsigned ids[] = { 19, 14, 9, 5, 0, 32 + 5, 32 + 6, 20, 32 + 8, 15 };
        return index < sizeof ids / sizeof ids[0] ? ids[index] : 32 + index;
}

/* Returns true when dev is a MIG device handle of this library. */
static bool is_mig_handle(nvmlDevice_t dev) {
        return dev && dev >= mig_handles && dev < mig_handles + FAKE_MAX_GPUS * FAKE_MAX_MIG;
}

/* Returns GPU k's "mig_devices" entry m when it is an object, or NULL. */
static json_t *mig_entry(json_t *g, size_t m) {
        json_t *e = json_array_get(json_object_get(g, "mig_devices"), m);
        return json_is_object(e) ? e : NULL;
}

/* Starts a call on a MIG-related handle numbered slot (k * FAKE_MAX_MIG + m): takes a description
 * reference into *ret_d, the GPU into *ret_g and the entry into *ret_e. Returns NVML_SUCCESS or the
 * code to answer (uninitialized, invalid handle, lost parent, error injected into the entry). */
static nvmlReturn_t begin_slot(const char *call, size_t slot, json_t **ret_d, json_t **ret_g, json_t **ret_e) {
        unsigned k = (unsigned)(slot / FAKE_MAX_MIG);
        /* The GPU's own "errors" are for its handle, not for its MIG devices': only uninitialised,
         * a bad index and a lost parent carry over. */
        *ret_g = NULL;
        nvmlReturn_t rc = begin_gpu(call ? call : "", k, false, ret_d, ret_g);
        if (!*ret_g) return rc;
        if (json_is_true(json_object_get(*ret_g, "lost"))) return NVML_ERROR_GPU_IS_LOST;
        json_t *e = mig_entry(*ret_g, slot % FAKE_MAX_MIG);
        if (!e) return NVML_ERROR_INVALID_ARGUMENT;
        *ret_e = e;
        return call ? injected(e, call) : NVML_SUCCESS;
}

/* Declares d, g and e and starts a call on MIG device handle `device`, returning early on any failure. */
#define BEGIN_MIG(call)                                                                              \
        _cleanup_json_ json_t *d = NULL;                                                             \
        json_t *g = NULL, *e = NULL;                                                                 \
        if (!is_mig_handle(device)) return NVML_ERROR_INVALID_ARGUMENT;                              \
        nvmlReturn_t rc = begin_slot((call), (size_t)(device - mig_handles), &d, &g, &e);           \
        if (rc != NVML_SUCCESS) return rc

/* Answers nvmlDeviceGetUUID on a MIG device handle. Returns an nvmlReturn_t. */
static nvmlReturn_t mig_uuid(nvmlDevice_t device, char *uuid, unsigned length) {
        BEGIN_MIG("nvmlDeviceGetUUID");
        const char *s = json_string_value(json_object_get(e, "uuid"));
        return s ? put_string(s, uuid, length) : NVML_ERROR_NOT_SUPPORTED;
}

/* Answers nvmlDeviceGetMemoryInfo(_v2) on a MIG device handle. Returns an nvmlReturn_t. */
static nvmlReturn_t mig_memory(nvmlDevice_t device, unsigned long long *total, unsigned long long *reserved,
                               unsigned long long *used, unsigned long long *free_) {
        BEGIN_MIG("nvmlDeviceGetMemoryInfo");
        json_t *m = json_object_get(e, "memory");
        if (!json_is_object(m)) return NVML_ERROR_NOT_SUPPORTED;
        *total = *reserved = *used = *free_ = 0;
        get_u64(m, "total", total);
        get_u64(m, "reserved", reserved);
        get_u64(m, "used", used);
        get_u64(m, "free", free_);
        return NVML_SUCCESS;
}

/* Returns the MIG handle count of GPU g: "mig_max_devices" (default 7) with MIG mode on, else 0. */
static unsigned mig_max(json_t *g) {
        unsigned long long v = 7, cur = 0;
        json_t *m = json_object_get(g, "mig_mode");
        if (!json_is_object(m) || !get_u64(m, "current", &cur) || cur != 1) return 0;
        get_u64(g, "mig_max_devices", &v);
        return (unsigned)v;
}

EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count) {
        BEGIN("nvmlDeviceGetMaxMigDeviceCount");
        if (!count) return NVML_ERROR_INVALID_ARGUMENT;
        *count = mig_max(g);
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice) {
        BEGIN("nvmlDeviceGetMigDeviceHandleByIndex");
        if (!migDevice) return NVML_ERROR_INVALID_ARGUMENT;
        if (mig_max(g) == 0) return NVML_ERROR_NOT_SUPPORTED;
        if (index >= mig_max(g) || index >= FAKE_MAX_MIG) return NVML_ERROR_INVALID_ARGUMENT;
        if (!mig_entry(g, index)) return NVML_ERROR_NOT_FOUND;
        *migDevice = &mig_handles[device->index * FAKE_MAX_MIG + index];
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t device, nvmlDevice_t *parent) {
        BEGIN_MIG("nvmlDeviceGetDeviceHandleFromMigDeviceHandle");
        if (!parent) return NVML_ERROR_INVALID_ARGUMENT;
        *parent = &devices[(device - mig_handles) / FAKE_MAX_MIG];
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice) {
        if (!isMigDevice) return NVML_ERROR_INVALID_ARGUMENT;
        if (is_mig_handle(device)) {
                *isMigDevice = 1;
                return NVML_SUCCESS;
        }
        BEGIN("nvmlDeviceIsMigDeviceHandle");
        *isMigDevice = 0;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id) {
        if (!is_mig_handle(device)) return NVML_ERROR_NOT_SUPPORTED;
        BEGIN_MIG("nvmlDeviceGetGpuInstanceId");
        return answer_uint(e, "gi", id);
}

EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id) {
        if (!is_mig_handle(device)) return NVML_ERROR_NOT_SUPPORTED;
        BEGIN_MIG("nvmlDeviceGetComputeInstanceId");
        return answer_uint(e, "ci", id);
}

/* Answers nvmlDeviceGetAttributes (both versions) from the entry's "attributes". Returns an nvmlReturn_t. */
static nvmlReturn_t attributes(nvmlDevice_t device, nvmlDeviceAttributes_t *a) {
        if (!is_mig_handle(device)) return NVML_ERROR_NOT_SUPPORTED; /* nvml.h: MIG device handles only */
        BEGIN_MIG("nvmlDeviceGetAttributes");
        json_t *o = json_object_get(e, "attributes");
        if (!a) return NVML_ERROR_INVALID_ARGUMENT;
        if (!json_is_object(o)) return NVML_ERROR_NOT_SUPPORTED;
        memset(a, 0, sizeof *a);
        answer_uint(o, "multiprocessor_count", &a->multiprocessorCount);
        answer_uint(o, "shared_copy_engine_count", &a->sharedCopyEngineCount);
        answer_uint(o, "shared_decoder_count", &a->sharedDecoderCount);
        answer_uint(o, "shared_encoder_count", &a->sharedEncoderCount);
        answer_uint(o, "shared_jpeg_count", &a->sharedJpegCount);
        answer_uint(o, "shared_ofa_count", &a->sharedOfaCount);
        answer_uint(o, "gpu_instance_slice_count", &a->gpuInstanceSliceCount);
        answer_uint(o, "compute_instance_slice_count", &a->computeInstanceSliceCount);
        get_u64(o, "memory_size_mb", &a->memorySizeMB);
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetAttributes(nvmlDevice_t device, nvmlDeviceAttributes_t *a) { return attributes(device, a); }
EXPORT nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t *a) {
        return attributes(device, a);
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                                        nvmlGpuInstanceProfileInfo_t *info) {
        BEGIN("nvmlDeviceGetGpuInstanceProfileInfo");
        if (!info || profile >= NVML_GPU_INSTANCE_PROFILE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
        if (!json_is_object(json_object_get(g, "mig_mode"))) return NVML_ERROR_NOT_SUPPORTED;
        memset(info, 0, sizeof *info);
        info->id = gi_profile_id(profile);
        return NVML_SUCCESS;
}

/* Returns the slot of GPU k's first MIG entry of GPU instance gi (and compute instance ci unless ci < 0)
 * that injects an error into `call` (when call) or carries `key` (when key), or with neither, the first
 * of that instance; -1 when none. A GPU or compute instance answers from the first MIG device of it that
 * says something about the call. */
static long find_slot_with(json_t *g, unsigned k, unsigned gi, long ci, const char *call, const char *key) {
        for (size_t m = 0; m < FAKE_MAX_MIG; m++) {
                json_t *e = mig_entry(g, m);
                unsigned long long v;
                if (!e || !get_u64(e, "gi", &v) || v != gi) continue;
                if (ci >= 0 && (!get_u64(e, "ci", &v) || v != (unsigned long long)ci)) continue;
                if (call && !json_object_get(json_object_get(e, "errors"), call)) continue;
                if (key && !json_object_get(e, key)) continue;
                return (long)(k * FAKE_MAX_MIG + m);
        }
        return -1;
}

/* Returns the slot of GPU k's first MIG entry of that instance, or -1. */
static long find_slot(json_t *g, unsigned k, unsigned gi, long ci) { return find_slot_with(g, k, gi, ci, NULL, NULL); }

/* Returns the error injected into `call` on GPU instance gi (compute instance ci unless ci < 0) of GPU k, or success. */
static nvmlReturn_t instance_rc(json_t *g, unsigned k, unsigned gi, long ci, const char *call) {
        long slot = find_slot_with(g, k, gi, ci, call, NULL);
        return slot < 0 ? NVML_SUCCESS : injected(mig_entry(g, (size_t)slot % FAKE_MAX_MIG), call);
}

EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t *gpuInstance) {
        BEGIN("nvmlDeviceGetGpuInstanceById");
        if (!gpuInstance) return NVML_ERROR_INVALID_ARGUMENT;
        if (mig_max(g) == 0) return NVML_ERROR_NOT_SUPPORTED;
        long slot = find_slot(g, device->index, id, -1);
        if (slot < 0) return NVML_ERROR_NOT_FOUND;
        rc = instance_rc(g, device->index, id, -1, "nvmlDeviceGetGpuInstanceById");
        if (rc == NVML_SUCCESS) *gpuInstance = &gi_handles[slot];
        return rc;
}

/* Declares d, g, e (the handle's MIG entry), k (the GPU) and the instance's gi, for a GPU or compute
 * instance handle h of array arr; answers an error injected into the call on the instance (on compute
 * instance ci of it unless ci_of_entry is false), returning early on any failure. */
#define BEGIN_INSTANCE(call, h, arr, ci_of_entry)                                                   \
        _cleanup_json_ json_t *d = NULL;                                                            \
        json_t *g = NULL, *e = NULL;                                                                \
        if (!(h) || (h) < (arr) || (h) >= (arr) + FAKE_MAX_GPUS * FAKE_MAX_MIG)                     \
                return NVML_ERROR_INVALID_ARGUMENT;                                                 \
        size_t slot = (size_t)((h) - (arr));                                                        \
        unsigned k = (unsigned)(slot / FAKE_MAX_MIG);                                               \
        nvmlReturn_t rc = begin_slot(NULL, slot, &d, &g, &e);                                       \
        if (rc != NVML_SUCCESS) return rc;                                                          \
        unsigned long long gi = 0, ci = 0;                                                          \
        get_u64(e, "gi", &gi);                                                                      \
        get_u64(e, "ci", &ci);                                                                      \
        rc = instance_rc(g, k, (unsigned)gi, (ci_of_entry) ? (long)ci : -1, (call));                \
        if (rc != NVML_SUCCESS) return rc

EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t *info) {
        BEGIN_INSTANCE("nvmlGpuInstanceGetInfo", gpuInstance, gi_handles, false);
        unsigned long long p;
        if (!info) return NVML_ERROR_INVALID_ARGUMENT;
        long ps = find_slot_with(g, k, (unsigned)gi, -1, NULL, "gi_profile");
        if (ps < 0 || !get_u64(mig_entry(g, (size_t)ps % FAKE_MAX_MIG), "gi_profile", &p)) return NVML_ERROR_NOT_SUPPORTED;
        (void)ci;
        memset(info, 0, sizeof *info);
        info->device = &devices[k];
        info->id = (unsigned)gi;
        info->profileId = p < NVML_GPU_INSTANCE_PROFILE_COUNT ? gi_profile_id((unsigned)p) : 0xFFFFFFF0u;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance, unsigned int profile,
                                                                 unsigned int engProfile,
                                                                 nvmlComputeInstanceProfileInfo_t *info) {
        BEGIN_INSTANCE("nvmlGpuInstanceGetComputeInstanceProfileInfo", gpuInstance, gi_handles, false);
        (void)ci;
        if (!info || profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT || engProfile >= NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT)
                return NVML_ERROR_INVALID_ARGUMENT;
        memset(info, 0, sizeof *info);
        info->id = profile;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gpuInstance, unsigned int id,
                                                          nvmlComputeInstance_t *computeInstance) {
        BEGIN_INSTANCE("nvmlGpuInstanceGetComputeInstanceById", gpuInstance, gi_handles, false);
        (void)ci;
        if (!computeInstance) return NVML_ERROR_INVALID_ARGUMENT;
        long cs = find_slot(g, k, (unsigned)gi, id);
        if (cs < 0) return NVML_ERROR_NOT_FOUND;
        *computeInstance = &ci_handles[cs];
        return NVML_SUCCESS;
}

/* Answers nvmlComputeInstanceGetInfo (both versions). Returns an nvmlReturn_t. */
static nvmlReturn_t ci_info(nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t *info) {
        BEGIN_INSTANCE("nvmlComputeInstanceGetInfo", computeInstance, ci_handles, true);
        unsigned long long p;
        if (!info) return NVML_ERROR_INVALID_ARGUMENT;
        long ps = find_slot_with(g, k, (unsigned)gi, (long)ci, NULL, "ci_profile");
        if (ps < 0 || !get_u64(mig_entry(g, (size_t)ps % FAKE_MAX_MIG), "ci_profile", &p)) return NVML_ERROR_NOT_SUPPORTED;
        long gs = find_slot(g, k, (unsigned)gi, -1);
        memset(info, 0, sizeof *info);
        info->device = &devices[k];
        info->gpuInstance = gs >= 0 ? &gi_handles[gs] : NULL;
        info->id = (unsigned)ci;
        info->profileId = p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT ? (unsigned)p : 0xFFFFFFF0u;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlComputeInstanceGetInfo(nvmlComputeInstance_t ci, nvmlComputeInstanceInfo_t *info) {
        return ci_info(ci, info);
}
EXPORT nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t ci, nvmlComputeInstanceInfo_t *info) {
        return ci_info(ci, info);
}

/* ---- events ---- */

EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
        _cleanup_json_ json_t *d = NULL;
        nvmlReturn_t rc = begin_sys("nvmlEventSetCreate", &d);
        if (rc != NVML_SUCCESS) return rc;
        if (!set) return NVML_ERROR_INVALID_ARGUMENT;
        *set = calloc(1, sizeof **set);
        return *set ? NVML_SUCCESS : NVML_ERROR_MEMORY;
}

EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *eventTypes) {
        BEGIN("nvmlDeviceGetSupportedEventTypes");
        if (!eventTypes) return NVML_ERROR_INVALID_ARGUMENT;
        *eventTypes = nvmlEventTypeXidCriticalError | nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set) {
        BEGIN("nvmlDeviceRegisterEvents");
        if (!set) return NVML_ERROR_INVALID_ARGUMENT;
        pthread_mutex_lock(&fake_lock);
        set->types[device->index] |= eventTypes;
        pthread_mutex_unlock(&fake_lock);
        return NVML_SUCCESS;
}

/* Delivers the next undelivered Xid of a registered GPU, or waits timeoutms. Returns an nvmlReturn_t. */
static nvmlReturn_t event_wait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned timeoutms) {
        _cleanup_json_ json_t *d = NULL;
        nvmlReturn_t rc = begin_sys("nvmlEventSetWait", &d);
        if (rc != NVML_SUCCESS) return rc;
        if (!set || !data) return NVML_ERROR_INVALID_ARGUMENT;
        json_t *gpus = json_object_get(d, "gpus");
        pthread_mutex_lock(&fake_lock);
        for (unsigned i = 0; i < FAKE_MAX_GPUS && i < json_array_size(gpus); i++) {
                if (!(set->types[i] & nvmlEventTypeXidCriticalError)) continue;
                json_t *x = json_object_get(json_array_get(gpus, i), "xid_events");
                if (set->next[i] < json_array_size(x)) {
                        memset(data, 0, sizeof *data);
                        data->device = &devices[i];
                        data->eventType = nvmlEventTypeXidCriticalError;
                        /* a number, or {"xid": N, "gi": G, "ci": C}: an Xid on MIG GPU instance G (compute
                         * instance C), as the driver names the instance of a MIG-specific error */
                        json_t *e = json_array_get(x, set->next[i]);
                        unsigned long long xid = 0, gi = 0xFFFFFFFFu, ci = 0xFFFFFFFFu;
                        if (json_is_object(e)) {
                                get_u64(e, "xid", &xid);
                                get_u64(e, "gi", &gi);
                                get_u64(e, "ci", &ci);
                        } else
                                xid = (unsigned long long)json_integer_value(e);
                        data->eventData = xid;
                        data->gpuInstanceId = (unsigned)gi;
                        data->computeInstanceId = (unsigned)ci;
                        set->next[i]++;
                        pthread_mutex_unlock(&fake_lock);
                        return NVML_SUCCESS;
                }
        }
        pthread_mutex_unlock(&fake_lock);
        sleep_seconds(timeoutms / 1000.0);
        return NVML_ERROR_TIMEOUT;
}

EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms) {
        return event_wait(set, data, timeoutms);
}
EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms) {
        return event_wait(set, data, timeoutms);
}

EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
        free(set);
        return NVML_SUCCESS;
}

/* ---- PCIe throughput and GPM ---- */

EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, nvmlPcieUtilCounter_t counter, unsigned int *value) {
        BEGIN("nvmlDeviceGetPcieThroughput");
        if (!value) return NVML_ERROR_INVALID_ARGUMENT;
        switch (counter) {
        case NVML_PCIE_UTIL_TX_BYTES: return answer_uint(g, "pcie_tx_kbps", value);
        case NVML_PCIE_UTIL_RX_BYTES: return answer_uint(g, "pcie_rx_kbps", value);
        default: return NVML_ERROR_INVALID_ARGUMENT;
        }
}

/* The GPM metrics the fake knows: their id and the key of their rate in a "gpm" object. */
static const struct {
        unsigned id;
        const char *key;
} gpm_keys[] = {
        { NVML_GPM_METRIC_GRAPHICS_UTIL, "graphics_util" },     { NVML_GPM_METRIC_ANY_TENSOR_UTIL, "any_tensor_util" },
        { NVML_GPM_METRIC_DRAM_BW_UTIL, "dram_bw_util" },       { NVML_GPM_METRIC_PCIE_TX_PER_SEC, "pcie_tx_per_sec" },
        { NVML_GPM_METRIC_PCIE_RX_PER_SEC, "pcie_rx_per_sec" },
};
#define FAKE_GPM_N (sizeof gpm_keys / sizeof gpm_keys[0])
#define FAKE_MAX_GI 32
#define FAKE_GPM_MAGIC 0x47504d53u

/* A sample: which GPU (and GPU instance, -1: the whole GPU) it was read from, when, and the counters. */
struct nvmlGpmSample_st {
        unsigned magic;
        unsigned gpu;
        int gi;
        double t;
        double acc[FAKE_GPM_N];
};

/* Counters that advance by the described rates (a percentage integrates to percent-seconds, MiB/s to
 * MiB), so that two samples give the rate back the way the real library does from hardware counters. */
static pthread_mutex_t gpm_lock = PTHREAD_MUTEX_INITIALIZER;
struct gpm_counter {
        bool started;
        double t; /* when last read */
        double acc[FAKE_GPM_N];
};
static struct gpm_counter gpm_counters[FAKE_MAX_GPUS][FAKE_MAX_GI + 1]; /* under gpm_lock; [k][0] the GPU, [k][1 + gi] instance gi */

/* Returns CLOCK_MONOTONIC in seconds. Never fails. */
static double mono_seconds(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Returns true when GPU g answers GPM: "gpm_supported", by default whether it has a "gpm" object. */
static bool gpm_supported(json_t *g) {
        json_t *s = json_object_get(g, "gpm_supported");
        if (json_is_boolean(s)) return json_is_true(s);
        return json_is_object(json_object_get(g, "gpm"));
}

/* Returns true when s is a sample buffer of this library. */
static bool gpm_sample_ok(nvmlGpmSample_t s) { return s && s->magic == FAKE_GPM_MAGIC; }

/* Advances the counters of GPU k (instance gi, -1: the GPU) by rates (a "gpm" object, may be NULL)
 * since they were last read and copies them into s. Returns nothing. */
static void gpm_take(unsigned k, int gi, json_t *rates, nvmlGpmSample_t s) {
        pthread_mutex_lock(&gpm_lock);
        double now = mono_seconds();
        struct gpm_counter *c = &gpm_counters[k][gi + 1];
        for (size_t n = 0; c->started && n < FAKE_GPM_N; n++) {
                json_t *v = json_object_get(rates, gpm_keys[n].key);
                if (json_is_number(v)) c->acc[n] += json_number_value(v) * (now - c->t);
        }
        c->started = true;
        c->t = now;
        s->gpu = k;
        s->gi = gi;
        s->t = now;
        memcpy(s->acc, c->acc, sizeof s->acc);
        pthread_mutex_unlock(&gpm_lock);
}

EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t *gpmSupport) {
        BEGIN("nvmlGpmQueryDeviceSupport");
        if (!gpmSupport) return NVML_ERROR_INVALID_ARGUMENT;
        if (gpmSupport->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
        gpmSupport->isSupportedDevice = gpm_supported(g);
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *gpmSample) {
        if (!gpmSample) return NVML_ERROR_INVALID_ARGUMENT;
        nvmlGpmSample_t s = calloc(1, sizeof *s);
        if (!s) return NVML_ERROR_MEMORY;
        s->magic = FAKE_GPM_MAGIC;
        s->gi = -1;
        *gpmSample = s;
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample) {
        if (!gpm_sample_ok(gpmSample)) return NVML_ERROR_INVALID_ARGUMENT;
        gpmSample->magic = 0;
        free(gpmSample);
        return NVML_SUCCESS;
}

/* Answers nvmlGpmSampleGet on a MIG device handle: a sample of its GPU instance. Returns an nvmlReturn_t. */
static nvmlReturn_t mig_gpm_sample(nvmlDevice_t device, nvmlGpmSample_t gpmSample) {
        BEGIN_MIG("nvmlGpmSampleGet");
        unsigned long long gi;
        unsigned k = (unsigned)((size_t)(device - mig_handles) / FAKE_MAX_MIG);
        if (!gpm_sample_ok(gpmSample)) return NVML_ERROR_INVALID_ARGUMENT;
        if (!gpm_supported(g)) return NVML_ERROR_NOT_SUPPORTED;
        if (!get_u64(e, "gi", &gi) || gi >= FAKE_MAX_GI) return NVML_ERROR_NOT_FOUND;
        long slot = find_slot_with(g, k, (unsigned)gi, -1, NULL, "gpm");
        gpm_take(k, (int)gi, slot < 0 ? NULL : json_object_get(mig_entry(g, (size_t)slot % FAKE_MAX_MIG), "gpm"),
                 gpmSample);
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample) {
        if (is_mig_handle(device)) return mig_gpm_sample(device, gpmSample);
        BEGIN("nvmlGpmSampleGet");
        if (!gpm_sample_ok(gpmSample)) return NVML_ERROR_INVALID_ARGUMENT;
        if (!gpm_supported(g)) return NVML_ERROR_NOT_SUPPORTED;
        gpm_take(device->index, -1, json_object_get(g, "gpm"), gpmSample);
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId, nvmlGpmSample_t gpmSample) {
        BEGIN("nvmlGpmMigSampleGet");
        unsigned k = device->index;
        if (!gpm_sample_ok(gpmSample)) return NVML_ERROR_INVALID_ARGUMENT;
        if (!gpm_supported(g)) return NVML_ERROR_NOT_SUPPORTED;
        unsigned long long cur;
        json_t *mm = json_object_get(g, "mig_mode");
        if (!get_u64(mm, "current", &cur) || cur != NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_NOT_SUPPORTED;
        if (gpuInstanceId >= FAKE_MAX_GI || find_slot(g, k, gpuInstanceId, -1) < 0) return NVML_ERROR_NOT_FOUND;
        rc = instance_rc(g, k, gpuInstanceId, -1, "nvmlGpmMigSampleGet");
        if (rc != NVML_SUCCESS) return rc;
        long slot = find_slot_with(g, k, gpuInstanceId, -1, NULL, "gpm");
        gpm_take(k, (int)gpuInstanceId, slot < 0 ? NULL : json_object_get(mig_entry(g, (size_t)slot % FAKE_MAX_MIG), "gpm"),
                 gpmSample);
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *metricsGet) {
        if (!metricsGet) return NVML_ERROR_INVALID_ARGUMENT;
        if (metricsGet->version != NVML_GPM_METRICS_GET_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
        nvmlGpmSample_t s1 = metricsGet->sample1, s2 = metricsGet->sample2;
        if (metricsGet->numMetrics > NVML_GPM_METRIC_MAX || !gpm_sample_ok(s1) || !gpm_sample_ok(s2) ||
            s1->gpu != s2->gpu || s1->gi != s2->gi || s1->gpu >= FAKE_MAX_GPUS)
                return NVML_ERROR_INVALID_ARGUMENT;
        _cleanup_json_ json_t *d = NULL;
        json_t *g = NULL;
        nvmlReturn_t rc = begin_gpu("nvmlGpmMetricsGet", s1->gpu, true, &d, &g);
        if (rc != NVML_SUCCESS) return rc;
        double dt = s2->t - s1->t;
        if (!(dt > 0)) return NVML_ERROR_INVALID_ARGUMENT;
        json_t *rates = json_object_get(g, "gpm");
        if (s1->gi >= 0) {
                long slot = find_slot_with(g, s1->gpu, (unsigned)s1->gi, -1, NULL, "gpm");
                rates = slot < 0 ? NULL : json_object_get(mig_entry(g, (size_t)slot % FAKE_MAX_MIG), "gpm");
        }
        for (unsigned i = 0; i < metricsGet->numMetrics; i++) {
                nvmlGpmMetric_t *m = &metricsGet->metrics[i];
                m->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
                m->value = 0;
                m->metricInfo.shortName = m->metricInfo.longName = m->metricInfo.unit = NULL;
                for (size_t n = 0; n < FAKE_GPM_N; n++) {
                        if (gpm_keys[n].id != m->metricId || !json_is_number(json_object_get(rates, gpm_keys[n].key)))
                                continue;
                        m->nvmlReturn = NVML_SUCCESS;
                        m->value = (s2->acc[n] - s1->acc[n]) / dt;
                }
        }
        return NVML_SUCCESS;
}

/* ---- GPU topology (device plugin: GetPreferredAllocation) ----
 * Top-level description keys: "topology_levels", an N x N matrix of nvmlGpuTopologyLevel_t values
 * (0 internal, 10 single PCIe switch, 20 multiple switches, 30 host bridge, 40 NUMA node, 50 system)
 * answered by nvmlDeviceGetTopologyCommonAncestor; "nvlink_pairs", [[a, b], ...] GPU index pairs
 * whose nvmlDeviceGetP2PStatus(NVML_P2P_CAPS_INDEX_NVLINK) is NVML_P2P_STATUS_OK (any other pair,
 * or another caps index, answers NVML_P2P_STATUS_NOT_SUPPORTED, 5). Without the key the call answers
 * NVML_ERROR_NOT_SUPPORTED; a lost GPU NVML_ERROR_GPU_IS_LOST. */

EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2, int *pathInfo) {
        _cleanup_json_ json_t *d = NULL, *d2 = NULL;
        json_t *g = NULL, *g2 = NULL;
        nvmlReturn_t rc = begin_dev("nvmlDeviceGetTopologyCommonAncestor", device1, &d, &g);
        if (rc != NVML_SUCCESS) return rc;
        rc = begin_dev("nvmlDeviceGetTopologyCommonAncestor", device2, &d2, &g2);
        if (rc != NVML_SUCCESS) return rc;
        if (!pathInfo) return NVML_ERROR_INVALID_ARGUMENT;
        json_t *row = json_array_get(json_object_get(d, "topology_levels"), device1->index);
        json_t *v = json_array_get(row, device2->index);
        if (!json_is_integer(v)) return NVML_ERROR_NOT_SUPPORTED;
        *pathInfo = (int)json_integer_value(v);
        return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2, int p2pIndex, int *p2pStatus) {
        _cleanup_json_ json_t *d = NULL, *d2 = NULL;
        json_t *g = NULL, *g2 = NULL;
        nvmlReturn_t rc = begin_dev("nvmlDeviceGetP2PStatus", device1, &d, &g);
        if (rc != NVML_SUCCESS) return rc;
        rc = begin_dev("nvmlDeviceGetP2PStatus", device2, &d2, &g2);
        if (rc != NVML_SUCCESS) return rc;
        if (!p2pStatus) return NVML_ERROR_INVALID_ARGUMENT;
        json_t *pairs = json_object_get(d, "nvlink_pairs");
        if (!json_is_array(pairs)) return NVML_ERROR_NOT_SUPPORTED;
        *p2pStatus = 5; /* NVML_P2P_STATUS_NOT_SUPPORTED */
        size_t i;
        json_t *p;
        json_array_foreach(pairs, i, p) {
                unsigned a = (unsigned)json_integer_value(json_array_get(p, 0)), b = (unsigned)json_integer_value(json_array_get(p, 1));
                if (p2pIndex == 2 /* NVML_P2P_CAPS_INDEX_NVLINK */ &&
                    ((a == device1->index && b == device2->index) || (a == device2->index && b == device1->index)))
                        *p2pStatus = 0; /* NVML_P2P_STATUS_OK */
        }
        return NVML_SUCCESS;
}
/* ---- end of GPU topology ---- */
