/* test_nvml.c: unit tests of the NVML loader and probe against the fake libnvidia-ml.so.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#include <time.h>

#include "basic/hostfs.h"
#include "basic/ld_cache.h"
#include "nvml/nvml_facts_json.h"
#include "nvml/nvml_lib.h"
#include "nvml/nvml_probe.h"
#include "basic/util.h"

#ifndef FAKE_NVML_LIBRARY
#define FAKE_NVML_LIBRARY "./libnvidia-ml.so.1"
#endif
#ifndef NVML_TESTDATA
#define NVML_TESTDATA "tests/fake-nvml/testdata"
#endif

/* Returns the fake library's path: $GPUNODE_TEST_FAKE_NVML_LIBRARY or the build-time default. */
static const char *fake_library(void) {
        const char *p = getenv("GPUNODE_TEST_FAKE_NVML_LIBRARY");
        return p ? p : FAKE_NVML_LIBRARY;
}

/* Points the fake at testdata/name. Returns nothing. */
static void use_description(const char *name) {
        _cleanup_free_ char *p = xasprintf("%s/%s", getenv("GPUNODE_TEST_NVML_TESTDATA") ?: NVML_TESTDATA, name);
        setenv("GPUNODE_FAKE_NVML", p, 1);
}

/* Returns the loaded fake; fails the test when it cannot be loaded. */
static struct nvml_lib *open_fake(void) {
        struct nvml_lib *lib = NULL;
        _cleanup_free_ char *err = NULL;
        int r = nvml_lib_open(fake_library(), &lib, &err);
        if (r < 0) fail_msg("cannot load %s: %s", fake_library(), err);
        return lib;
}

/* Returns the probe's facts for testdata/name with a generous timeout. */
static struct nvml_facts *probe(struct nvml_lib *lib, const char *name) {
        struct nvml_facts *f = NULL;
        use_description(name);
        assert_int_equal(nvml_probe_run(lib, 5000, &f), 0);
        assert_non_null(f);
        assert_false(f->timed_out);
        return f;
}

/* Returns monotonic milliseconds. */
static long long now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_return_names(void **state) {
        (void)state;
        assert_string_equal(nvml_return_name(9), "NVML_ERROR_DRIVER_NOT_LOADED");
        assert_string_equal(nvml_return_name(18), "NVML_ERROR_LIB_RM_VERSION_MISMATCH");
        assert_string_equal(nvml_return_name(0), "NVML_SUCCESS");
        assert_string_equal(nvml_return_name(999), "NVML_ERROR_UNKNOWN");
        assert_string_equal(nvml_return_name(12345), "NVML_ERROR_UNRECOGNIZED");
        assert_string_equal(nvml_return_message(18), "the NVML library and the kernel module have different versions "
                                                     "(driver/library version mismatch)");
        for (int rc = 0; rc <= 30; rc++) {
                assert_string_not_equal(nvml_return_name(rc), "NVML_ERROR_UNRECOGNIZED");
                assert_non_null(strstr(nvml_return_name(rc), "NVML_"));
                assert_true(strlen(nvml_return_message(rc)) > 5);
        }
}

static void test_missing_library(void **state) {
        (void)state;
        struct nvml_lib *lib = NULL;
        _cleanup_free_ char *err = NULL;
        assert_int_equal(nvml_lib_open("/nonexistent/libnvidia-ml.so.1", &lib, &err), -ENOENT);
        assert_null(lib);
        assert_non_null(err);
        assert_non_null(strstr(err, "/nonexistent/libnvidia-ml.so.1"));
}

static void test_not_nvml(void **state) {
        (void)state;
        struct nvml_lib *lib = NULL;
        _cleanup_free_ char *err = NULL;
        assert_int_equal(nvml_lib_open("libc.so.6", &lib, &err), -ELIBBAD);
        assert_null(lib);
        assert_non_null(strstr(err, "nvmlInit_v2"));
}

static void test_symbols(void **state) {
        (void)state;
        _cleanup_nvml_lib_ struct nvml_lib *lib = open_fake();
        assert_non_null(lib->nvmlInit);
        assert_non_null(lib->nvmlDeviceGetPciInfo);
        assert_non_null(lib->nvmlDeviceGetMemoryInfo_v2);
        assert_non_null(lib->nvmlDeviceGetGpuFabricInfoV);
        assert_non_null(lib->nvmlEventSetWait);
        assert_non_null(strstr(lib->path, "libnvidia-ml.so.1"));
        /* The fake exports the real names: versioned and unversioned. */
        assert_ptr_equal(lib->nvmlInit, dlsym(lib->handle, "nvmlInit_v2"));
        assert_non_null(dlsym(lib->handle, "nvmlInit"));
        assert_non_null(dlsym(lib->handle, "nvmlDeviceGetPciInfo_v3"));
        assert_non_null(dlsym(lib->handle, "nvmlDeviceGetCurrentClocksThrottleReasons"));
        /* Calls before init. */
        unsigned n;
        assert_int_equal(lib->nvmlDeviceGetCount(&n), NVML_ERROR_UNINITIALIZED);
        assert_int_equal(lib->nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
        assert_string_equal(lib->nvmlErrorString(NVML_ERROR_LIB_RM_VERSION_MISMATCH),
                            "Driver/library version mismatch");
}

static void test_two_gpus(void **state) {
        (void)state;
        _cleanup_nvml_lib_ struct nvml_lib *lib = open_fake();
        _cleanup_nvml_facts_ struct nvml_facts *f = probe(lib, "two-gpus.json");

        assert_non_null(strstr(f->library_path, "libnvidia-ml.so.1"));
        assert_int_equal(f->init_rc, NVML_SUCCESS);
        assert_int_equal(f->driver_version_rc, 0);
        assert_string_equal(f->driver_version, "550.54.15");
        assert_int_equal(f->nvml_version_rc, 0);
        assert_string_equal(f->nvml_version, "12.550.54.15");
        assert_int_equal(f->cuda_driver_version.rc, 0);
        assert_int_equal(f->cuda_driver_version.value, 12040);
        assert_int_equal(f->device_count_rc, 0);
        assert_int_equal(f->device_count, 2);
        assert_int_equal(f->n_gpus, 2);

        const struct nvml_gpu_facts *g = &f->gpus[0];
        assert_true(g->complete);
        assert_int_equal(g->index, 0);
        assert_int_equal(g->handle_rc, 0);
        assert_int_equal(g->name_rc, 0);
        assert_string_equal(g->name, "NVIDIA H100 80GB HBM3");
        assert_int_equal(g->uuid_rc, 0);
        assert_string_equal(g->uuid, "GPU-d0f25a6f-9a3f-61b9-c128-3d14759651d7");
        assert_int_equal(g->minor_number.rc, 0);
        assert_int_equal(g->minor_number.value, 0);
        assert_int_equal(g->pci_rc, 0);
        assert_string_equal(g->pci_bus_id, "00000000:18:00.0");
        assert_string_equal(g->pci_bus_id_legacy, "0000:18:00.0");
        assert_int_equal(g->pci_domain, 0);
        assert_int_equal(g->pci_bus, 0x18);
        assert_int_equal(g->pci_device, 0);
        assert_int_equal(g->pci_device_id, 0x233010DE);
        assert_int_equal(g->pci_subsystem_id, 0x16C110DE);
        assert_int_equal(g->memory_rc, 0);
        assert_int_equal(g->memory_version, 2);
        assert_int_equal(g->memory_total, 85520809984ULL);
        assert_int_equal(g->memory_used, 633602048ULL);
        assert_int_equal(g->memory_free, 84887207936ULL);
        assert_int_equal(g->memory_reserved, 562036736ULL);
        assert_int_equal(g->cc_rc, 0);
        assert_int_equal(g->cc_major, 9);
        assert_int_equal(g->cc_minor, 0);
        assert_int_equal(g->mig_rc, 0);
        assert_int_equal(g->mig_current, 0);
        assert_int_equal(g->mig_pending, 0);
        assert_int_equal(g->persistence_mode.rc, 0);
        assert_int_equal(g->persistence_mode.value, 1);
        assert_int_equal(g->fabric_rc, 0);
        assert_int_equal(g->fabric_version, 3);
        assert_int_equal(g->fabric_state, NVML_GPU_FABRIC_STATE_COMPLETED);
        assert_int_equal(g->fabric_status, 0);
        assert_string_equal(g->fabric_cluster_uuid, "6b1bd5c2-7f45-4b2e-9b66-0c1a3e2f4d5e");
        assert_int_equal(g->fabric_clique_id, 32766);
        assert_int_equal(g->ecc_mode_rc, 0);
        assert_int_equal(g->ecc_mode_current, 1);
        assert_int_equal(g->ecc_mode_pending, 1);
        assert_int_equal(g->ecc_volatile_corrected.value, 2);
        assert_int_equal(g->ecc_volatile_uncorrected.value, 0);
        assert_int_equal(g->ecc_aggregate_corrected.value, 17);
        assert_int_equal(g->ecc_aggregate_uncorrected.rc, 0);
        assert_int_equal(g->ecc_aggregate_uncorrected.value, 1);
        assert_int_equal(g->remapped_rows_rc, 0);
        assert_int_equal(g->remapped_correctable, 0);
        assert_int_equal(g->remapped_uncorrectable, 1);
        assert_false(g->remapped_pending);
        assert_false(g->remapped_failure);
        assert_int_equal(g->field_values_rc, 0);
        assert_int_equal(g->recovery_action.rc, 0);
        assert_int_equal(g->recovery_action.value, NVML_GPU_RECOVERY_ACTION_NONE);
        assert_int_equal(g->memory_temperature.rc, 0);
        assert_int_equal(g->memory_temperature.value, 41);
        assert_int_equal(g->temperature.rc, 0);
        assert_int_equal(g->temperature.value, 33);
        assert_int_equal(g->power_mw.value, 71000);
        assert_int_equal(g->energy_mj.rc, 0);
        assert_int_equal(g->energy_mj.value, 123456789012ULL);
        assert_int_equal(g->utilization_rc, 0);
        assert_int_equal(g->utilization_gpu, 0);
        assert_int_equal(g->clock_sm_mhz.value, 1980);
        assert_int_equal(g->clock_mem_mhz.value, 2619);
        assert_int_equal(g->pcie_replay.rc, 0);
        assert_int_equal(g->pcie_replay.value, 0);
        assert_int_equal(g->clocks_event_reasons.value, nvmlClocksEventReasonGpuIdle);

        g = &f->gpus[1];
        assert_true(g->complete);
        assert_int_equal(g->index, 1);
        assert_string_equal(g->pci_bus_id, "00000000:2A:00.0");
        assert_string_equal(g->pci_bus_id_legacy, "0000:2A:00.0");
        assert_int_equal(g->minor_number.value, 1);
        assert_int_equal(g->mig_rc, 0);
        assert_int_equal(g->mig_current, 1);
        assert_int_equal(g->mig_pending, 0);
        assert_int_equal(g->persistence_mode.value, 0);
        assert_int_equal(g->fabric_rc, NVML_ERROR_NOT_SUPPORTED);
        assert_int_equal(g->remapped_correctable, 3);
        assert_true(g->remapped_pending);
        assert_true(g->remapped_failure);
        assert_int_equal(g->recovery_action.value, NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET);
        assert_int_equal(g->memory_temperature.rc, NVML_ERROR_NOT_SUPPORTED);
        assert_int_equal(g->temperature.value, 71);
        assert_int_equal(g->power_mw.value, 512000);
        assert_int_equal(g->energy_mj.rc, NVML_ERROR_NOT_SUPPORTED);
        assert_int_equal(g->utilization_rc, NVML_ERROR_NO_PERMISSION);
        assert_int_equal(g->pcie_replay.rc, NVML_ERROR_UNKNOWN);
        assert_int_equal(g->clocks_event_reasons.value, nvmlClocksEventReasonSwPowerCap);
}

static void test_not_mig_capable_and_fabric_v2(void **state) {
        (void)state;
        /* Derive a description: GPU 0 not MIG capable, a driver that knows only fabric info v2. */
        _cleanup_free_ char *src = xasprintf("%s/two-gpus.json", getenv("GPUNODE_TEST_NVML_TESTDATA") ?: NVML_TESTDATA);
        json_t *d = json_load_file(src, 0, NULL);
        assert_non_null(d);
        json_object_set_new(json_array_get(json_object_get(d, "gpus"), 0), "mig_mode", json_null());
        json_object_set_new(d, "fabric_info_max_version", json_integer(2));
        char tmp[] = "/tmp/test-nvml-XXXXXX";
        int fd = mkstemp(tmp);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(json_dump_file(d, tmp, 0), 0);
        json_decref(d);
        setenv("GPUNODE_FAKE_NVML", tmp, 1);

        _cleanup_nvml_lib_ struct nvml_lib *lib = open_fake();
        struct nvml_facts *f = NULL;
        assert_int_equal(nvml_probe_run(lib, 5000, &f), 0);
        unlink(tmp);
        assert_int_equal(f->gpus[0].mig_rc, NVML_ERROR_NOT_SUPPORTED);
        assert_int_equal(f->gpus[0].fabric_rc, 0);
        assert_int_equal(f->gpus[0].fabric_version, 2);
        assert_int_equal(f->gpus[0].fabric_state, NVML_GPU_FABRIC_STATE_COMPLETED);
        assert_int_equal(f->gpus[0].fabric_clique_id, 32766);
        nvml_facts_free(f);
}

/* Checks a description whose nvmlInit fails with code rc. */
static void check_init_error(const char *name, int rc, const char *text) {
        _cleanup_nvml_lib_ struct nvml_lib *lib = open_fake();
        _cleanup_nvml_facts_ struct nvml_facts *f = probe(lib, name);
        assert_int_equal(f->init_rc, rc);
        assert_string_equal(f->init_error, text);
        assert_int_equal(f->driver_version_rc, NVML_FACT_NOT_QUERIED);
        assert_int_equal(f->device_count_rc, NVML_FACT_NOT_QUERIED);
        assert_int_equal(f->n_gpus, 0);
        assert_null(f->gpus);
        /* A failed init takes no reference. */
        unsigned n;
        assert_int_equal(lib->nvmlDeviceGetCount(&n), NVML_ERROR_UNINITIALIZED);
}

static void test_init_error_9(void **state) {
        (void)state;
        check_init_error("init-error-9.json", NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded");
}

static void test_init_error_18(void **state) {
        (void)state;
        check_init_error("init-error-18.json", NVML_ERROR_LIB_RM_VERSION_MISMATCH, "Driver/library version mismatch");
}

static void test_no_description(void **state) {
        (void)state;
        check_init_error("does-not-exist.json", NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded");
}

static void test_lost_gpu(void **state) {
        (void)state;
        _cleanup_nvml_lib_ struct nvml_lib *lib = open_fake();
        _cleanup_nvml_facts_ struct nvml_facts *f = probe(lib, "lost-gpu.json");
        assert_int_equal(f->n_gpus, 2);
        assert_int_equal(f->gpus[0].name_rc, 0);
        assert_int_equal(f->gpus[0].temperature.value, 30);
        assert_int_equal(f->gpus[0].mig_rc, NVML_ERROR_NOT_SUPPORTED);
        const struct nvml_gpu_facts *g = &f->gpus[1];
        assert_true(g->complete);
        assert_int_equal(g->handle_rc, 0);
        assert_int_equal(g->name_rc, NVML_ERROR_GPU_IS_LOST);
        assert_int_equal(g->uuid_rc, NVML_ERROR_GPU_IS_LOST);
        assert_int_equal(g->pci_rc, NVML_ERROR_GPU_IS_LOST);
        assert_int_equal(g->memory_rc, NVML_ERROR_GPU_IS_LOST);
        assert_int_equal(g->temperature.rc, NVML_ERROR_GPU_IS_LOST);
        assert_int_equal(g->power_mw.rc, NVML_ERROR_GPU_IS_LOST);
        assert_int_equal(g->field_values_rc, NVML_ERROR_GPU_IS_LOST);
        assert_int_equal(g->recovery_action.rc, NVML_ERROR_GPU_IS_LOST);
        assert_int_equal(g->clocks_event_reasons.rc, NVML_ERROR_GPU_IS_LOST);
}

static void test_events(void **state) {
        (void)state;
        _cleanup_nvml_lib_ struct nvml_lib *lib = open_fake();
        use_description("two-gpus.json");
        assert_int_equal(lib->nvmlInit(), 0);
        assert_int_equal(lib->nvmlInit(), 0); /* reference counted */
        nvmlDevice_t dev;
        nvmlEventSet_t set;
        unsigned long long types = 0;
        assert_int_equal(lib->nvmlDeviceGetHandleByIndex(0, &dev), 0);
        assert_int_equal(lib->nvmlDeviceGetSupportedEventTypes(dev, &types), 0);
        assert_true(types & nvmlEventTypeXidCriticalError);
        assert_int_equal(lib->nvmlEventSetCreate(&set), 0);
        assert_int_equal(lib->nvmlDeviceRegisterEvents(dev, nvmlEventTypeXidCriticalError, set), 0);
        nvmlEventData_t e;
        assert_int_equal(lib->nvmlEventSetWait(set, &e, 10), 0);
        assert_ptr_equal(e.device, dev);
        assert_int_equal(e.eventType, nvmlEventTypeXidCriticalError);
        assert_int_equal(e.eventData, 48);
        assert_int_equal(lib->nvmlEventSetWait(set, &e, 10), 0);
        assert_int_equal(e.eventData, 64);
        long long t0 = now_ms();
        assert_int_equal(lib->nvmlEventSetWait(set, &e, 50), NVML_ERROR_TIMEOUT);
        assert_true(now_ms() - t0 >= 45);
        assert_int_equal(lib->nvmlEventSetFree(set), 0);
        assert_int_equal(lib->nvmlShutdown(), 0);
        unsigned n;
        assert_int_equal(lib->nvmlDeviceGetCount(&n), 0); /* one reference left */
        assert_int_equal(n, 2);
        assert_int_equal(lib->nvmlShutdown(), 0);
        assert_int_equal(lib->nvmlDeviceGetCount(&n), NVML_ERROR_UNINITIALIZED);
}

/* Checks facts -> JSON -> fake -> the same facts, for testdata/name. */
static void check_round_trip(const char *name) {
        _cleanup_nvml_lib_ struct nvml_lib *lib = open_fake();
        _cleanup_nvml_facts_ struct nvml_facts *f1 = probe(lib, name);
        _cleanup_free_ char *j1 = NULL, *j2 = NULL;
        assert_int_equal(nvml_facts_to_json(f1, &j1), 0);

        char tmp[] = "/tmp/test-nvml-XXXXXX";
        int fd = mkstemp(tmp);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, j1, strlen(j1)), (ssize_t)strlen(j1));
        close(fd);
        setenv("GPUNODE_FAKE_NVML", tmp, 1);
        struct nvml_facts *f2 = NULL;
        assert_int_equal(nvml_probe_run(lib, 5000, &f2), 0);
        unlink(tmp);
        assert_int_equal(nvml_facts_to_json(f2, &j2), 0);

        assert_string_equal(j1, j2);
        assert_int_equal(f2->n_gpus, f1->n_gpus);
        assert_string_equal(f2->driver_version, f1->driver_version);
        assert_int_equal(f2->cuda_driver_version.value, f1->cuda_driver_version.value);
        for (unsigned i = 0; i < f1->n_gpus; i++) assert_memory_equal(&f1->gpus[i], &f2->gpus[i], sizeof f1->gpus[i]);
        nvml_facts_free(f2);
}

static void test_json_round_trip(void **state) {
        (void)state;
        check_round_trip("two-gpus.json");
        /* A snapshot of a real H200 node (driver 580.159.04) replays as well. */
        check_round_trip("h200-real.json");

        _cleanup_nvml_lib_ struct nvml_lib *lib = open_fake();
        _cleanup_nvml_facts_ struct nvml_facts *f1 = probe(lib, "two-gpus.json");
        _cleanup_free_ char *j1 = NULL;
        assert_int_equal(nvml_facts_to_json(f1, &j1), 0);
        /* The description names injected errors per call. */
        json_t *d = json_loads(j1, 0, NULL);
        json_t *errs = json_object_get(json_array_get(json_object_get(d, "gpus"), 1), "errors");
        assert_int_equal(json_integer_value(json_object_get(errs, "nvmlDeviceGetPcieReplayCounter")), 999);
        assert_true(json_is_null(json_object_get(json_array_get(json_object_get(d, "gpus"), 1), "fabric")));
        json_decref(d);
}

static void test_blocked_call(void **state) {
        (void)state;
        _cleanup_nvml_lib_ struct nvml_lib *lib = open_fake();
        _cleanup_nvml_facts_ struct nvml_facts *f = NULL;
        use_description("blocked.json");
        long long t0 = now_ms();
        assert_int_equal(nvml_probe_run(lib, 300, &f), 0);
        long long dt = now_ms() - t0;
        assert_true(dt >= 290);
        assert_true(dt < 900);
        assert_true(f->timed_out);
        assert_int_equal(f->timeout_ms, 300);
        assert_string_equal(f->blocked_call, "nvmlDeviceGetPowerUsage");
        assert_int_equal(f->blocked_gpu, 1);
        assert_string_equal(f->timeout_message, "nvmlDeviceGetPowerUsage on GPU 1 did not return within 300 ms");
        assert_int_equal(f->init_rc, 0);
        assert_string_equal(f->driver_version, "550.54.15");
        assert_int_equal(f->device_count, 3);
        assert_int_equal(f->n_gpus, 2); /* GPU 2 was never reached */
        assert_true(f->gpus[0].complete);
        assert_int_equal(f->gpus[0].power_mw.value, 90000);
        assert_false(f->gpus[1].complete);
        assert_string_equal(f->gpus[1].name, "NVIDIA L40S");
        assert_int_equal(f->gpus[1].temperature.value, 41);
        assert_int_equal(f->gpus[1].power_mw.rc, NVML_FACT_NOT_QUERIED);
        assert_int_equal(f->gpus[1].clocks_event_reasons.rc, NVML_FACT_NOT_QUERIED);
        assert_int_equal(nvml_probe_abandoned_workers(), 1);
        /* The JSON of partial facts still describes what finished. */
        _cleanup_free_ char *j = NULL;
        assert_int_equal(nvml_facts_to_json(f, &j), 0);
        assert_non_null(strstr(j, "GPU-dddddddd"));
}

static void test_abandoned_worker_cleans_up(void **state) {
        (void)state;
        /* The worker of test_blocked_call wakes after 1 s, sees it was abandoned, and frees its state. */
        long long t0 = now_ms();
        while (nvml_probe_abandoned_workers() > 0 && now_ms() - t0 < 5000) usleep(10000);
        assert_int_equal(nvml_probe_abandoned_workers(), 0);
        /* It also shut NVML down: a fresh probe works. */
        _cleanup_nvml_lib_ struct nvml_lib *lib = open_fake();
        _cleanup_nvml_facts_ struct nvml_facts *f = probe(lib, "lost-gpu.json");
        assert_int_equal(f->n_gpus, 2);
}

/* The health queries through the fake: violation times, thresholds, NVLink walk and counters, PCIe
 * link, retired pages, processes, drain state, and the second clock-reasons reading. */
static void test_health(void **state) {
        (void)state;
        _cleanup_nvml_lib_ struct nvml_lib *lib = open_fake();
        _cleanup_nvml_facts_ struct nvml_facts *f = probe(lib, "health.json");
        assert_int_equal(f->n_gpus, 3);
        const struct nvml_health_facts *h = &f->gpus[0].health;
        assert_int_equal(h->violation_power_ns.rc, NVML_SUCCESS);
        assert_int_equal(h->violation_power_ns.value, 123456789);
        assert_int_equal(h->violation_thermal_ns.value, 0);
        assert_int_equal(h->temp_slowdown.value, 89);
        assert_int_equal(h->temp_mem_max.value, 95);
        assert_int_equal(h->nvlink_rc, NVML_ERROR_INVALID_ARGUMENT); /* past link 17 */
        assert_int_equal(h->n_links, 18);
        assert_int_equal(h->links[3].active, 0);
        assert_int_equal(h->links[3].errors[0].rc, NVML_FACT_NOT_QUERIED);
        assert_int_equal(h->links[5].errors[NVML_NVLINK_ERROR_DL_CRC_FLIT].value, 12);
        assert_int_equal(h->links[5].errors[NVML_NVLINK_ERROR_DL_REPLAY].value, 3);
        assert_int_equal(h->pcie_width.value, 16);
        assert_int_equal(h->pcie_gen_gpu_max.value, 5);
        assert_int_equal(h->retired_sbe.rc, NVML_ERROR_NOT_SUPPORTED);
        assert_int_equal(h->processes_rc, NVML_SUCCESS);
        assert_int_equal(h->n_processes, 2);
        assert_int_equal(h->processes[0].pid, 4242);
        assert_int_equal(h->processes[0].used_memory, 1073741824);
        assert_int_equal(h->processes[0].gi, 0xFFFFFFFFu);
        assert_true(h->processes[1].used_memory == UINT64_MAX); /* NVML_VALUE_NOT_AVAILABLE */
        assert_int_equal(h->graphics_processes.value, 0);
        assert_int_equal(h->drain_state.value, 0);
        assert_int_equal(f->gpus[0].clocks_event_reasons.value, 1);
        assert_int_equal(h->clocks_event_reasons_again.value, 72);

        h = &f->gpus[1].health; /* a V100: retired pages, a link that fails, too many processes */
        assert_int_equal(h->retired_sbe.value, 2);
        assert_int_equal(h->retired_dbe.value, 1);
        assert_int_equal(h->retired_pending.value, 1);
        assert_int_equal(h->nvlink_rc, NVML_ERROR_UNKNOWN);
        assert_int_equal(h->n_links, 2);
        assert_int_equal(h->links[1].errors[NVML_NVLINK_ERROR_DL_RECOVERY].rc, NVML_ERROR_UNKNOWN);
        assert_int_equal(h->processes_rc, NVML_ERROR_INSUFFICIENT_SIZE);
        assert_int_equal(h->n_processes, 70);
        assert_int_equal(h->graphics_processes.value, 2);
        assert_int_equal(h->temp_mem_max.rc, NVML_ERROR_NOT_SUPPORTED);

        h = &f->gpus[2].health; /* an L4: no NVLink, a narrow link, draining */
        assert_int_equal(h->nvlink_rc, NVML_ERROR_NOT_SUPPORTED);
        assert_int_equal(h->n_links, 0);
        assert_int_equal(h->pcie_width.value, 8);
        assert_int_equal(h->pcie_width_max.value, 16);
        assert_int_equal(h->drain_state.value, 1);
        assert_int_equal(h->violation_power_ns.rc, NVML_ERROR_UNKNOWN);
        assert_int_equal(h->temp_shutdown.rc, NVML_ERROR_NOT_SUPPORTED);
        assert_int_equal(h->processes_rc, NVML_SUCCESS);
        assert_int_equal(h->n_processes, 0);
}

/* The labels scope asks nothing GFD does not need: a GPU hanging in nvmlDeviceGetPowerUsage does
 * not hold it up, and what it skipped stays "not queried". */
static void test_labels_scope(void **state) {
        (void)state;
        _cleanup_nvml_lib_ struct nvml_lib *lib = open_fake();
        _cleanup_nvml_facts_ struct nvml_facts *f = NULL;
        use_description("blocked.json");
        long long t0 = now_ms();
        assert_int_equal(nvml_probe_run_scope(lib, 5000, NVML_PROBE_LABELS, &f), 0);
        assert_true(now_ms() - t0 < 900); /* the blocked call sleeps 1 s */
        assert_false(f->timed_out);
        assert_int_equal(f->n_gpus, 3);
        for (unsigned i = 0; i < 3; i++) {
                assert_true(f->gpus[i].complete);
                assert_string_equal(f->gpus[i].name, "NVIDIA L40S");
                assert_int_equal(f->gpus[i].power_mw.rc, NVML_FACT_NOT_QUERIED);
                assert_int_equal(f->gpus[i].temperature.rc, NVML_FACT_NOT_QUERIED);
                assert_int_equal(f->gpus[i].persistence_mode.rc, NVML_FACT_NOT_QUERIED);
                assert_int_equal(f->gpus[i].health.nvlink_rc, NVML_FACT_NOT_QUERIED);
                assert_int_equal(f->gpus[i].pci_rc, NVML_SUCCESS);
        }
}

/* Returns testdata/name's bytes (malloc'd, exactly *ret_len long: ASan sees any read past the end). */
static char *read_testdata(const char *name, size_t *ret_len) {
        _cleanup_free_ char *p = xasprintf("%s/%s", getenv("GPUNODE_TEST_NVML_TESTDATA") ?: NVML_TESTDATA, name);
        FILE *f = fopen(p, "rb");
        if (!f) fail_msg("cannot open %s", p);
        char *data = xmalloc(1 << 20);
        size_t n = fread(data, 1, 1 << 20, f);
        fclose(f);
        char *exact = xmalloc(n ? n : 1);
        memcpy(exact, data, n);
        free(data);
        *ret_len = n;
        return exact;
}

struct cache_count {
        size_t entries, native;
};

/* Counts entries and those of this machine's ABI. */
static int count_entry(const char *key, const char *value, uint32_t flags, void *userdata) {
        struct cache_count *c = userdata;
        assert_true(*key);
        assert_true(value[0] == '/');
        c->entries++;
        c->native += flags == ld_cache_native_flags();
        return 0;
}

/* ldconfig's own output (Debian GLIBC 2.36, `ldconfig -r`, `-c compat` and `-c old`): every layout. */
static void test_ld_cache_ldconfig(void **state) {
        (void)state;
        static const char *const files[] = { "ld.so.cache-new", "ld.so.cache-compat", "ld.so.cache-old" };
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                size_t len;
                _cleanup_free_ char *data = read_testdata(files[i], &len);
                _cleanup_free_ char *path = NULL, *err = NULL;
                assert_int_equal(ld_cache_find(data, len, "libnvidia-ml.so.1", 0, &path, &err), 0);
                assert_string_equal(path, "/opt/nvidia/lib/libnvidia-ml.so.1");
                free(path);
                path = NULL;
                assert_int_equal(ld_cache_find(data, len, "libcuda.so.1",
                                               LD_CACHE_FLAG_ELF_LIBC6 | LD_CACHE_FLAG_X8664_LIB64, &path, &err),
                                 0);
                assert_string_equal(path, "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
                assert_int_equal(ld_cache_find(data, len, "libnvidia-ml.so.1",
                                               LD_CACHE_FLAG_ELF_LIBC6 | LD_CACHE_FLAG_AARCH64_LIB64, &path, &err),
                                 -ENOENT);
                assert_int_equal(ld_cache_find(data, len, "libc.so.6", 0, &path, &err), -ENOENT);
                struct cache_count c = { 0 };
                assert_int_equal(ld_cache_parse(data, len, count_entry, &c, &err), 0);
                assert_int_equal(c.entries, 2);
        }
}

/* A whole distribution's cache: this build machine's /etc/ld.so.cache (Debian 12, 693 entries). */
static void test_ld_cache_host(void **state) {
        (void)state;
        size_t len;
        _cleanup_free_ char *data = read_testdata("../../../fuzz/seeds/ld_cache/host", &len);
        _cleanup_free_ char *path = NULL, *err = NULL;
        struct cache_count c = { 0 };
        assert_int_equal(ld_cache_parse(data, len, count_entry, &c, &err), 0);
        assert_int_equal(c.entries, 693);
        assert_int_equal(
                ld_cache_find(data, len, "libc.so.6", LD_CACHE_FLAG_ELF_LIBC6 | LD_CACHE_FLAG_X8664_LIB64, &path, &err),
                0);
        assert_string_equal(path, "/lib/x86_64-linux-gnu/libc.so.6");
}

/* Every truncation, a bad offset, a huge count, a foreign byte order, no magic: -EBADMSG with a reason, never a
 * read past the end. */
static void test_ld_cache_bad(void **state) {
        (void)state;
        static const char *const files[] = { "ld.so.cache-new", "ld.so.cache-compat", "ld.so.cache-old" };
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                size_t len;
                _cleanup_free_ char *data = read_testdata(files[i], &len);
                for (size_t cut = 0; cut < len; cut++) {
                        char *prefix = xmalloc(cut ? cut : 1);
                        memcpy(prefix, data, cut);
                        char *path = NULL, *err = NULL;
                        int r = ld_cache_find(prefix, cut, "libnvidia-ml.so.1", 0, &path, &err);
                        /* The strings are last: a cut inside ldconfig's trailing version text still finds it. */
                        if (r == 0)
                                assert_string_equal(path, "/opt/nvidia/lib/libnvidia-ml.so.1");
                        else {
                                assert_int_equal(r, -EBADMSG);
                                assert_non_null(err);
                        }
                        free(path);
                        free(err);
                        free(prefix);
                }
        }
        size_t len;
        _cleanup_free_ char *data = read_testdata("ld.so.cache-new", &len);
        char *path = NULL, *err = NULL;
        /* entry 0's key offset (at 48 + 4) past the end */
        uint32_t off = (uint32_t)len + 10;
        memcpy(data + 52, &off, 4);
        assert_int_equal(ld_cache_find(data, len, "libnvidia-ml.so.1", 0, &path, &err), -EBADMSG);
        assert_non_null(strstr(err, "entry 0"));
        free(err);
        /* a count of entries the file cannot hold */
        _cleanup_free_ char *d2 = read_testdata("ld.so.cache-new", &len);
        uint32_t many = 0x10000000;
        memcpy(d2 + 20, &many, 4);
        assert_int_equal(ld_cache_find(d2, len, "libnvidia-ml.so.1", 0, &path, &err), -EBADMSG);
        assert_non_null(strstr(err, "entries"));
        free(err);
        /* big-endian */
        _cleanup_free_ char *d3 = read_testdata("ld.so.cache-new", &len);
        d3[28] = 3;
        assert_int_equal(ld_cache_find(d3, len, "libnvidia-ml.so.1", 0, &path, &err), -EBADMSG);
        assert_non_null(strstr(err, "big-endian"));
        free(err);
        assert_int_equal(ld_cache_find("hello, world", 12, "libnvidia-ml.so.1", 0, &path, &err), -EBADMSG);
        assert_non_null(strstr(err, "not an ld.so.cache"));
        free(err);
        assert_null(path);
}

/* Writes a file of text at dir/rel, making its folders. */
static void write_at(const char *dir, const char *rel, const char *text) {
        _cleanup_free_ char *p = xasprintf("%s/%s", dir, rel);
        for (char *s = strchr(p + strlen(dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = 0;
                mkdir(p, 0755);
                *s = '/';
        }
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

/* Copies the fake NVML to dir/rel. */
static void plant_fake(const char *dir, const char *rel) {
        size_t len;
        char *lib;
        {
                FILE *f = fopen(fake_library(), "rb");
                assert_non_null(f);
                lib = xmalloc(8 << 20);
                len = fread(lib, 1, 8 << 20, f);
                fclose(f);
        }
        write_at(dir, rel, "");
        _cleanup_free_ char *mode_path = xasprintf("%s/%s", dir, rel);
        assert_int_equal(chmod(mode_path, 0755), 0);
        _cleanup_free_ char *p = xasprintf("%s/%s", dir, rel);
        FILE *f = fopen(p, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(lib, 1, len, f), len);
        fclose(f);
        free(lib);
}

/* No path given: NVML is looked for under --root (the agent without the nvidia runtime). An absolute symlink is
 * resolved inside the root, not on this machine; a file that is not NVML is passed over with its reason. */
static void test_lookup_under_root(void **state) {
        (void)state;
        char dir[] = "/tmp/gpunode-nvml-root-XXXXXX";
        assert_non_null(mkdtemp(dir));
        plant_fake(dir, "opt/driver/libnvidia-ml.so.550.54.15");
        write_at(dir, "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "not an ELF file\n");
        _cleanup_free_ char *link = xasprintf("%s/usr/lib64/libnvidia-ml.so.1", dir);
        _cleanup_free_ char *lib64 = xasprintf("%s/usr/lib64", dir);
        assert_int_equal(mkdir(lib64, 0755), 0);
        assert_int_equal(symlink("/opt/driver/libnvidia-ml.so.550.54.15", link), 0);
        assert_int_equal(hostfs_init(dir), 0);
        struct nvml_lib *lib = NULL;
        _cleanup_free_ char *err = NULL;
        assert_int_equal(nvml_lib_open(NULL, &lib, &err), 0);
        _cleanup_free_ char *want = xasprintf("%s/opt/driver/libnvidia-ml.so.550.54.15", dir);
        assert_string_equal(lib->path, want);
        use_description("two-gpus.json");
        assert_int_equal(lib->nvmlInit(), NVML_SUCCESS);
        lib->nvmlShutdown();
        nvml_lib_unref(lib);
        lib = NULL;
        /* A library others may write is never loaded (it runs code): passed over with the reason. */
        _cleanup_free_ char *real = xasprintf("%s/opt/driver/libnvidia-ml.so.550.54.15", dir);
        assert_int_equal(chmod(real, 0666), 0);
        free(err);
        err = NULL;
        if (nvml_lib_open(NULL, &lib, &err) == 0) {
                assert_string_not_equal(lib->path, want); /* the test's LD_LIBRARY_PATH one, not the root's */
                nvml_lib_unref(lib);
                lib = NULL;
        } else
                assert_non_null(strstr(err, "not loaded: owned by uid"));
        assert_int_equal(chmod(real, 0755), 0);
        /* Nothing loadable under the root: the error names the root and what it tried. */
        assert_int_equal(unlink(link), 0);
        free(err);
        err = NULL;
        if (nvml_lib_open(NULL, &lib, &err) == 0) {
                /* the test's own LD_LIBRARY_PATH holds the fake: fine, it was tried after the root */
                nvml_lib_unref(lib);
        } else {
                assert_non_null(strstr(err, dir));
                assert_non_null(strstr(err, "/run/nvidia/driver"));
        }
        hostfs_done();
        _cleanup_free_ char *cmd = xasprintf("rm -rf %s", dir);
        assert_int_equal(system(cmd), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_return_names),
                cmocka_unit_test(test_missing_library),
                cmocka_unit_test(test_not_nvml),
                cmocka_unit_test(test_symbols),
                cmocka_unit_test(test_two_gpus),
                cmocka_unit_test(test_not_mig_capable_and_fabric_v2),
                cmocka_unit_test(test_init_error_9),
                cmocka_unit_test(test_init_error_18),
                cmocka_unit_test(test_no_description),
                cmocka_unit_test(test_lost_gpu),
                cmocka_unit_test(test_events),
                cmocka_unit_test(test_json_round_trip),
                cmocka_unit_test(test_blocked_call),
                cmocka_unit_test(test_abandoned_worker_cleans_up),
                cmocka_unit_test(test_health),
                cmocka_unit_test(test_labels_scope),
                cmocka_unit_test(test_ld_cache_ldconfig),
                cmocka_unit_test(test_ld_cache_host),
                cmocka_unit_test(test_ld_cache_bad),
                cmocka_unit_test(test_lookup_under_root),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
