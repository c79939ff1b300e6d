/* nvml_probe.c: a worker thread asks NVML for every fact gpunode needs; the caller waits a bounded time. */
#include "nvml/nvml_probe_internal.h"

#include <jansson.h>

#include "basic/util.h"

/* A sanity bound on nvmlDeviceGetCount: no node has more GPUs than this. */
#define NVML_PROBE_MAX_GPUS 1024

/* Probe workers that timed out and are still inside NVML. */
static unsigned abandoned_workers;

/* Frees the shared state. Returns nothing; never fails. */
static void probe_state_free(struct probe_state *st) {
        pthread_mutex_destroy(&st->lock);
        pthread_cond_destroy(&st->cond);
        free(st->pub.gpus);
        free(st->w.gpus);
        free(st);
}

/* Drops one reference under the lock. Returns nothing; the last reference frees st. */
static void probe_state_unref_locked(struct probe_state *st) {
        bool last = --st->refs == 0;
        pthread_mutex_unlock(&st->lock);
        if (last) probe_state_free(st);
}

/* Copies the worker's facts into pub. Caller holds the lock. Returns nothing; never fails. */
static void publish_locked(struct probe_state *st) {
        struct nvml_gpu_facts *gpus = st->pub.gpus;
        st->pub = st->w;
        st->pub.gpus = gpus;
        st->pub.library_path = NULL;
        if (st->w.n_gpus > 0) {
                if (!st->pub.gpus) {
                        st->pub_cap = st->w.device_count;
                        st->pub.gpus = xcalloc(st->pub_cap, sizeof *st->pub.gpus);
                }
                memcpy(st->pub.gpus, st->w.gpus, st->w.n_gpus * sizeof *st->w.gpus);
        }
}

/* Publishes progress and names the call about to be made. Returns false when the caller gave up. */
bool nvml_probe_step(struct probe_state *st, const char *call, int gpu) {
        pthread_mutex_lock(&st->lock);
        publish_locked(st);
        snprintf(st->call, sizeof st->call, "%s", call);
        st->call_gpu = gpu;
        bool go_on = !st->abandoned;
        pthread_mutex_unlock(&st->lock);
        return go_on;
}

#define STEP(name)                                  \
        do {                                        \
                if (!nvml_probe_step(st, (name), -1)) goto out; \
        } while (0)

/* The worker: gathers into st->w, then leaves. Returns NULL; frees st if the caller already left. */
static void *probe_worker(void *arg) {
        struct probe_state *st = arg;
        struct nvml_lib *lib = st->lib;
        struct nvml_facts *w = &st->w;
        bool initialized = false;

        STEP("nvmlInit");
        w->init_rc = lib->nvmlInit();
        if (w->init_rc != NVML_SUCCESS) {
                const char *e = lib->nvmlErrorString ? lib->nvmlErrorString(w->init_rc) : NULL;
                snprintf(w->init_error, sizeof w->init_error, "%s", e ? e : "");
                goto out;
        }
        initialized = true;

        STEP("nvmlSystemGetDriverVersion");
        w->driver_version_rc = lib->nvmlSystemGetDriverVersion
                                       ? lib->nvmlSystemGetDriverVersion(w->driver_version, sizeof w->driver_version) : NS;
        if (w->driver_version_rc != NVML_SUCCESS) w->driver_version[0] = 0;

        STEP("nvmlSystemGetNVMLVersion");
        w->nvml_version_rc = lib->nvmlSystemGetNVMLVersion
                                     ? lib->nvmlSystemGetNVMLVersion(w->nvml_version, sizeof w->nvml_version) : NS;
        if (w->nvml_version_rc != NVML_SUCCESS) w->nvml_version[0] = 0;

        STEP("nvmlSystemGetCudaDriverVersion");
        int cuda = 0;
        nvmlReturn_t rc = lib->nvmlSystemGetCudaDriverVersion ? lib->nvmlSystemGetCudaDriverVersion(&cuda) : NS;
        w->cuda_driver_version = nvml_fact(rc, cuda > 0 ? (uint64_t)cuda : 0);

        STEP("nvmlDeviceGetCount");
        unsigned count = 0;
        w->device_count_rc = lib->nvmlDeviceGetCount(&count);
        if (w->device_count_rc == NVML_SUCCESS) {
                w->device_count = count > NVML_PROBE_MAX_GPUS ? NVML_PROBE_MAX_GPUS : count;
                if (w->device_count > 0) w->gpus = xcalloc(w->device_count, sizeof *w->gpus);
                for (unsigned i = 0; i < w->device_count; i++) {
                        nvml_gpu_facts_init(&w->gpus[i], i);
                        w->n_gpus = i + 1;
                        if (!nvml_probe_gpu(st, &w->gpus[i])) goto out;
                        w->gpus[i].complete = true;
                }
        }

out:
        if (initialized) {
                nvml_probe_step(st, "nvmlShutdown", -1);
                lib->nvmlShutdown();
        }

        pthread_mutex_lock(&st->lock);
        publish_locked(st);
        st->done = true;
        bool was_abandoned = st->abandoned;
        pthread_cond_broadcast(&st->cond);
        st->lib = NULL;
        probe_state_unref_locked(st);
        nvml_lib_unref(lib);
        if (was_abandoned) __atomic_sub_fetch(&abandoned_workers, 1, __ATOMIC_ACQ_REL);
        return NULL;
}

#undef STEP

unsigned nvml_probe_abandoned_workers(void) {
        return __atomic_load_n(&abandoned_workers, __ATOMIC_ACQUIRE);
}

/* Returns a malloc'd copy of the published facts. Caller holds the lock. */
static struct nvml_facts *copy_published_locked(struct probe_state *st) {
        struct nvml_facts *f = xmalloc(sizeof *f);
        *f = st->pub;
        f->library_path = NULL;
        f->gpus = NULL;
        if (f->n_gpus > 0) {
                f->gpus = xcalloc(f->n_gpus, sizeof *f->gpus);
                memcpy(f->gpus, st->pub.gpus, f->n_gpus * sizeof *f->gpus);
        }
        return f;
}

int nvml_probe_run(struct nvml_lib *lib, unsigned timeout_ms, struct nvml_facts **ret) {
        struct probe_state *st = xcalloc(1, sizeof *st);
        pthread_condattr_t ca;
        int r;

        pthread_mutex_init(&st->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&st->cond, &ca);
        pthread_condattr_destroy(&ca);
        st->refs = 2;
        st->call_gpu = -1;
        st->w.init_rc = st->w.driver_version_rc = st->w.nvml_version_rc = st->w.device_count_rc =
                NVML_FACT_NOT_QUERIED;
        st->w.cuda_driver_version.rc = NVML_FACT_NOT_QUERIED;
        st->w.blocked_gpu = -1;
        st->pub = st->w;
        st->lib = nvml_lib_ref(lib);

        pthread_t thread;
        r = pthread_create(&thread, NULL, probe_worker, st);
        if (r != 0) {
                nvml_lib_unref(st->lib);
                probe_state_free(st);
                return -r;
        }

        struct timespec deadline = timespec_after_ms(CLOCK_MONOTONIC, timeout_ms);

        pthread_mutex_lock(&st->lock);
        while (!st->done) {
                r = pthread_cond_timedwait(&st->cond, &st->lock, &deadline);
                if (r == ETIMEDOUT) break;
        }
        struct nvml_facts *f = copy_published_locked(st);
        f->timeout_ms = timeout_ms;
        if (!st->done) {
                f->timed_out = true;
                snprintf(f->blocked_call, sizeof f->blocked_call, "%s", st->call);
                f->blocked_gpu = st->call_gpu;
                if (st->call_gpu >= 0)
                        snprintf(f->timeout_message, sizeof f->timeout_message,
                                 "%s on GPU %d did not return within %u ms", st->call, st->call_gpu, timeout_ms);
                else
                        snprintf(f->timeout_message, sizeof f->timeout_message,
                                 "%s did not return within %u ms", st->call, timeout_ms);
                st->abandoned = true;
                __atomic_add_fetch(&abandoned_workers, 1, __ATOMIC_ACQ_REL);
        }
        bool done = st->done;
        probe_state_unref_locked(st);
        /* A finished worker is joined (it is only returning); a stuck one is left to end on its own. */
        if (done)
                pthread_join(thread, NULL);
        else
                pthread_detach(thread);

        f->library_path = xstrdup(lib->path);
        *ret = f;
        return 0;
}

struct nvml_facts *nvml_facts_free(struct nvml_facts *f) {
        if (!f) return NULL;
        free(f->library_path);
        free(f->gpus);
        free(f);
        return NULL;
}

/* Records rc under errors[call] when it is an error the fake must replay (not success, not
 * "not supported", which the fake answers for a missing key, not "never asked"). Returns nothing. */
static void put_error(json_t *errors, const char *call, int rc) {
        if (rc == NVML_SUCCESS || rc == NS || rc == NVML_FACT_NOT_QUERIED) return;
        json_object_set_new(errors, call, json_integer(rc));
}

/* Returns the first error rc among facts that put_error would record, or NVML_SUCCESS. */
static int first_error(const struct nvml_fact_u64 *const *v, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (v[i]->rc != NVML_SUCCESS && v[i]->rc != NS && v[i]->rc != NVML_FACT_NOT_QUERIED) return v[i]->rc;
        return NVML_SUCCESS;
}

/* Sets obj[key] to the fact's value when it succeeded. Returns nothing. */
static void put_u64(json_t *obj, const char *key, const struct nvml_fact_u64 *v) {
        if (v->rc == NVML_SUCCESS) json_object_set_new(obj, key, json_integer((json_int_t)v->value));
}

/* Returns the JSON description of one MIG device (a new reference). */
static json_t *mig_to_json(const struct nvml_gpu_facts *g, const struct nvml_mig_facts *m) {
        json_t *o = json_object(), *errors = json_object();
        if (m->uuid_rc == NVML_SUCCESS) json_object_set_new(o, "uuid", json_string(m->uuid));
        put_error(errors, "nvmlDeviceGetUUID", m->uuid_rc);
        if (m->gi_rc == NVML_SUCCESS) json_object_set_new(o, "gi", json_integer(m->gi_id));
        put_error(errors, "nvmlDeviceGetGpuInstanceId", m->gi_rc);
        if (m->ci_rc == NVML_SUCCESS) json_object_set_new(o, "ci", json_integer(m->ci_id));
        put_error(errors, "nvmlDeviceGetComputeInstanceId", m->ci_rc);
        if (m->attributes_rc == NVML_SUCCESS) {
                const struct nvml_mig_attributes *a = &m->attributes;
                json_object_set_new(o, "attributes",
                                    json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "multiprocessor_count",
                                              (json_int_t)a->multiprocessors, "shared_copy_engine_count",
                                              (json_int_t)a->copy_engines, "shared_decoder_count", (json_int_t)a->decoders,
                                              "shared_encoder_count", (json_int_t)a->encoders, "shared_jpeg_count",
                                              (json_int_t)a->jpegs, "shared_ofa_count", (json_int_t)a->ofas,
                                              "gpu_instance_slice_count", (json_int_t)a->gi_slices,
                                              "compute_instance_slice_count", (json_int_t)a->ci_slices, "memory_size_mb",
                                              (json_int_t)a->memory_mb));
        }
        put_error(errors, "nvmlDeviceGetAttributes", m->attributes_rc);
        if (m->memory_rc == NVML_SUCCESS)
                json_object_set_new(o, "memory",
                                    json_pack("{s:I,s:I,s:I}", "total", (json_int_t)m->memory_total, "used",
                                              (json_int_t)m->memory_used, "free", (json_int_t)m->memory_free));
        put_error(errors, "nvmlDeviceGetMemoryInfo", m->memory_rc);
        if (m->profile_rc == NVML_SUCCESS) {
                json_object_set_new(o, "gi_profile", json_integer(m->gi_profile));
                json_object_set_new(o, "ci_profile", json_integer(m->ci_profile));
        } else {
                /* The reader derives the failure from earlier facts first (the GPU's memory, the
                 * attributes, the instance ids), as the probe does; otherwise it replays through an
                 * error of the lookup's first call, which is this MIG device's own (the GPU and compute
                 * instance calls are shared with the other MIG devices of the instance). */
                int derived = g->memory_rc != NVML_SUCCESS ? g->memory_rc
                              : m->attributes_rc != NVML_SUCCESS ? m->attributes_rc
                              : m->gi_rc != NVML_SUCCESS ? m->gi_rc
                              : m->ci_rc;
                if ((derived == NVML_SUCCESS || derived != m->profile_rc) && m->profile_rc != NVML_FACT_NOT_QUERIED)
                        json_object_set_new(errors, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
                                            json_integer(m->profile_rc));
        }
        if (json_object_size(errors) > 0)
                json_object_set_new(o, "errors", errors);
        else
                json_decref(errors);
        return o;
}

/* Returns the JSON description of one GPU (a new reference). */
static json_t *gpu_to_json(const struct nvml_gpu_facts *g) {
        json_t *o = json_object(), *errors = json_object();

        put_error(errors, "nvmlDeviceGetHandleByIndex", g->handle_rc);
        if (g->name_rc == NVML_SUCCESS) json_object_set_new(o, "name", json_string(g->name));
        put_error(errors, "nvmlDeviceGetName", g->name_rc);
        if (g->uuid_rc == NVML_SUCCESS) json_object_set_new(o, "uuid", json_string(g->uuid));
        put_error(errors, "nvmlDeviceGetUUID", g->uuid_rc);
        put_u64(o, "minor_number", &g->minor_number);
        put_error(errors, "nvmlDeviceGetMinorNumber", g->minor_number.rc);

        if (g->pci_rc == NVML_SUCCESS) {
                json_object_set_new(o, "pci_bus_id", json_string(g->pci_bus_id));
                json_object_set_new(o, "pci_device_id", json_sprintf("0x%08X", g->pci_device_id));
                json_object_set_new(o, "pci_subsystem_id", json_sprintf("0x%08X", g->pci_subsystem_id));
        }
        put_error(errors, "nvmlDeviceGetPciInfo", g->pci_rc);

        if (g->memory_rc == NVML_SUCCESS) {
                json_t *m = json_pack("{s:I,s:I,s:I}", "total", (json_int_t)g->memory_total, "used",
                                      (json_int_t)g->memory_used, "free", (json_int_t)g->memory_free);
                if (g->memory_version == 2)
                        json_object_set_new(m, "reserved", json_integer((json_int_t)g->memory_reserved));
                json_object_set_new(o, "memory", m);
        }
        put_error(errors, "nvmlDeviceGetMemoryInfo", g->memory_rc);

        if (g->cc_rc == NVML_SUCCESS)
                json_object_set_new(o, "compute_capability", json_pack("[i,i]", g->cc_major, g->cc_minor));
        put_error(errors, "nvmlDeviceGetCudaComputeCapability", g->cc_rc);

        if (g->mig_rc == NVML_SUCCESS)
                json_object_set_new(o, "mig_mode",
                                    json_pack("{s:i,s:i}", "current", (int)g->mig_current, "pending", (int)g->mig_pending));
        else if (g->mig_rc == NS)
                json_object_set_new(o, "mig_mode", json_null());
        put_error(errors, "nvmlDeviceGetMigMode", g->mig_rc);
        if (g->mig_max_rc == NVML_SUCCESS) json_object_set_new(o, "mig_max_devices", json_integer(g->mig_max));
        /* The fake answers these two without a key of their own: "not supported" is an injected error here. */
        put_error(errors, "nvmlDeviceGetMaxMigDeviceCount", g->mig_max_rc);
        if (g->mig_max_rc == NS) json_object_set_new(errors, "nvmlDeviceGetMaxMigDeviceCount", json_integer(NS));
        put_error(errors, "nvmlDeviceGetMigDeviceHandleByIndex", g->mig_devices_rc);
        if (g->mig_devices_rc == NS) json_object_set_new(errors, "nvmlDeviceGetMigDeviceHandleByIndex", json_integer(NS));
        if (g->n_mig > 0) {
                /* One entry per index up to the last device found; null answers NVML_ERROR_NOT_FOUND. */
                json_t *migs = json_array();
                for (unsigned i = 0, k = 0; k < g->n_mig; i++) {
                        if (g->mig[k].index == i)
                                json_array_append_new(migs, mig_to_json(g, &g->mig[k++]));
                        else
                                json_array_append_new(migs, json_null());
                }
                json_object_set_new(o, "mig_devices", migs);
        }

        put_u64(o, "persistence_mode", &g->persistence_mode);
        put_error(errors, "nvmlDeviceGetPersistenceMode", g->persistence_mode.rc);

        if (g->fabric_rc == NVML_SUCCESS)
                json_object_set_new(o, "fabric",
                                    json_pack("{s:i,s:i,s:s,s:I,s:I}", "state", (int)g->fabric_state, "status",
                                              g->fabric_status, "cluster_uuid", g->fabric_cluster_uuid, "clique_id",
                                              (json_int_t)g->fabric_clique_id, "health_mask",
                                              (json_int_t)g->fabric_health_mask));
        else if (g->fabric_rc == NS)
                json_object_set_new(o, "fabric", json_null());
        put_error(errors, "nvmlDeviceGetGpuFabricInfo", g->fabric_rc);

        json_t *ecc = json_object();
        if (g->ecc_mode_rc == NVML_SUCCESS) {
                json_object_set_new(ecc, "mode_current", json_integer(g->ecc_mode_current));
                json_object_set_new(ecc, "mode_pending", json_integer(g->ecc_mode_pending));
        }
        put_error(errors, "nvmlDeviceGetEccMode", g->ecc_mode_rc);
        put_u64(ecc, "volatile_corrected", &g->ecc_volatile_corrected);
        put_u64(ecc, "volatile_uncorrected", &g->ecc_volatile_uncorrected);
        put_u64(ecc, "aggregate_corrected", &g->ecc_aggregate_corrected);
        put_u64(ecc, "aggregate_uncorrected", &g->ecc_aggregate_uncorrected);
        const struct nvml_fact_u64 *eccv[] = { &g->ecc_volatile_corrected, &g->ecc_volatile_uncorrected,
                                               &g->ecc_aggregate_corrected, &g->ecc_aggregate_uncorrected };
        put_error(errors, "nvmlDeviceGetTotalEccErrors", first_error(eccv, ELEMENTSOF(eccv)));
        if (json_object_size(ecc) > 0)
                json_object_set_new(o, "ecc", ecc);
        else
                json_decref(ecc);

        if (g->remapped_rows_rc == NVML_SUCCESS)
                json_object_set_new(o, "remapped_rows",
                                    json_pack("{s:I,s:I,s:b,s:b}", "correctable", (json_int_t)g->remapped_correctable,
                                              "uncorrectable", (json_int_t)g->remapped_uncorrectable, "pending",
                                              g->remapped_pending, "failure", g->remapped_failure));
        put_error(errors, "nvmlDeviceGetRemappedRows", g->remapped_rows_rc);

        put_error(errors, "nvmlDeviceGetFieldValues", g->field_values_rc);
        if (g->field_values_rc == NVML_SUCCESS) {
                put_u64(o, "recovery_action", &g->recovery_action);
                put_u64(o, "memory_temperature", &g->memory_temperature);
        }

        put_u64(o, "temperature", &g->temperature);
        put_error(errors, "nvmlDeviceGetTemperature", g->temperature.rc);
        put_u64(o, "power_mw", &g->power_mw);
        put_error(errors, "nvmlDeviceGetPowerUsage", g->power_mw.rc);
        put_u64(o, "energy_mj", &g->energy_mj);
        put_error(errors, "nvmlDeviceGetTotalEnergyConsumption", g->energy_mj.rc);

        if (g->utilization_rc == NVML_SUCCESS)
                json_object_set_new(o, "utilization",
                                    json_pack("{s:i,s:i}", "gpu", (int)g->utilization_gpu, "memory",
                                              (int)g->utilization_memory));
        put_error(errors, "nvmlDeviceGetUtilizationRates", g->utilization_rc);

        json_t *clocks = json_object();
        put_u64(clocks, "sm", &g->clock_sm_mhz);
        put_u64(clocks, "mem", &g->clock_mem_mhz);
        const struct nvml_fact_u64 *clkv[] = { &g->clock_sm_mhz, &g->clock_mem_mhz };
        put_error(errors, "nvmlDeviceGetClockInfo", first_error(clkv, ELEMENTSOF(clkv)));
        if (json_object_size(clocks) > 0)
                json_object_set_new(o, "clocks", clocks);
        else
                json_decref(clocks);

        put_u64(o, "pcie_replay", &g->pcie_replay);
        put_error(errors, "nvmlDeviceGetPcieReplayCounter", g->pcie_replay.rc);
        put_u64(o, "clocks_event_reasons", &g->clocks_event_reasons);
        put_error(errors, "nvmlDeviceGetCurrentClocksEventReasons", g->clocks_event_reasons.rc);

        if (json_object_size(errors) > 0)
                json_object_set_new(o, "errors", errors);
        else
                json_decref(errors);
        return o;
}

int nvml_facts_to_json(const struct nvml_facts *f, char **ret) {
        json_t *root = json_object(), *errors = json_object(), *gpus = json_array();

        if (f->init_rc != NVML_SUCCESS && f->init_rc != NVML_FACT_NOT_QUERIED)
                json_object_set_new(root, "init_error", json_integer(f->init_rc));
        if (f->driver_version_rc == NVML_SUCCESS)
                json_object_set_new(root, "driver_version", json_string(f->driver_version));
        put_error(errors, "nvmlSystemGetDriverVersion", f->driver_version_rc);
        if (f->nvml_version_rc == NVML_SUCCESS)
                json_object_set_new(root, "nvml_version", json_string(f->nvml_version));
        put_error(errors, "nvmlSystemGetNVMLVersion", f->nvml_version_rc);
        put_u64(root, "cuda_driver_version", &f->cuda_driver_version);
        put_error(errors, "nvmlSystemGetCudaDriverVersion", f->cuda_driver_version.rc);
        put_error(errors, "nvmlDeviceGetCount", f->device_count_rc);
        if (json_object_size(errors) > 0)
                json_object_set_new(root, "errors", errors);
        else
                json_decref(errors);

        for (unsigned i = 0; i < f->n_gpus; i++)
                json_array_append_new(gpus, gpu_to_json(&f->gpus[i]));
        json_object_set_new(root, "gpus", gpus);

        char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        json_decref(root);
        if (!s) return -ENOMEM;
        /* jansson's allocator is malloc unless the program changed it; hand out a plain malloc'd copy. */
        *ret = xstrdup(s);
        free(s);
        return 0;
}
