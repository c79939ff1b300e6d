/* nvml_probe.c: a worker thread asks NVML for every fact gpunode needs; the caller waits a bounded time. */
#include "nvml/nvml_probe_internal.h"

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

#define STEP(name)                                                                                                     \
        do {                                                                                                           \
                if (!nvml_probe_step(st, (name), -1)) goto out;                                                        \
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
                                       ? lib->nvmlSystemGetDriverVersion(w->driver_version, sizeof w->driver_version)
                                       : NS;
        if (w->driver_version_rc != NVML_SUCCESS) w->driver_version[0] = 0;

        STEP("nvmlSystemGetNVMLVersion");
        w->nvml_version_rc = lib->nvmlSystemGetNVMLVersion
                                     ? lib->nvmlSystemGetNVMLVersion(w->nvml_version, sizeof w->nvml_version)
                                     : NS;
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
        return nvml_probe_run_scope(lib, timeout_ms, NVML_PROBE_ALL, ret);
}

int nvml_probe_run_scope(struct nvml_lib *lib, unsigned timeout_ms, enum nvml_probe_scope scope,
                         struct nvml_facts **ret) {
        struct probe_state *st = xcalloc(1, sizeof *st);
        st->scope = scope;
        pthread_condattr_t ca;
        int r;

        pthread_mutex_init(&st->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&st->cond, &ca);
        pthread_condattr_destroy(&ca);
        st->refs = 2;
        st->call_gpu = -1;
        st->w.init_rc = st->w.driver_version_rc = st->w.nvml_version_rc = st->w.device_count_rc = NVML_FACT_NOT_QUERIED;
        st->w.cuda_driver_version.rc = NVML_FACT_NOT_QUERIED;
        st->w.blocked_gpu = -1;
        st->w.caller_pid_namespace = -1;
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
                        snprintf(f->timeout_message, sizeof f->timeout_message, "%s did not return within %u ms",
                                 st->call, timeout_ms);
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
