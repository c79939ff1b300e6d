/* nvml_probe_internal.h: what the NVML probe's worker (nvml_probe.c) and its per-GPU questions
 * (nvml_gpu_probe.c) share; not for use outside src/nvml/. */
#pragma once

#include <pthread.h>

#include "nvml/nvml_probe.h"

/* Short for NVML_ERROR_NOT_SUPPORTED in the tables of facts. */
#define NS NVML_ERROR_NOT_SUPPORTED

/*
 * State shared by the caller and the worker. The worker fills w (its own) without the lock and,
 * before every NVML call, copies w into pub under the lock, with the name of the call it is about
 * to make. The caller only reads pub, under the lock. The last of the two to leave frees it.
 */
struct probe_state {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        int refs;              /* under lock: 2 while both caller and worker hold it */
        bool done;             /* under lock: the worker finished */
        bool abandoned;        /* under lock: the caller gave up waiting */
        struct nvml_facts pub; /* under lock; pub.gpus has room for pub_cap records */
        unsigned pub_cap;
        char call[64]; /* under lock: the call in progress */
        int call_gpu;

        enum nvml_probe_scope scope; /* constant */
        struct nvml_lib *lib;        /* worker's reference */
        struct nvml_facts w;         /* worker only */
};

/* Publishes the worker's progress and names the NVML call about to be made (gpu: its index, -1 for
 * none). Returns false when the caller gave up waiting: the worker must stop asking. */
bool nvml_probe_step(struct probe_state *st, const char *call, int gpu);

/* Returns a fact with rc and v (v only counts when rc is NVML_SUCCESS). */
struct nvml_fact_u64 nvml_fact(nvmlReturn_t rc, uint64_t v);

/* Asks NVML every per-GPU fact, MIG devices included, into g (g->index set by the caller).
 * Returns false when the caller gave up waiting (the facts so far stay valid), else true; a
 * failing call is recorded in its fact's rc, never returned. */
bool nvml_probe_gpu(struct probe_state *st, struct nvml_gpu_facts *g);

/* Asks NVML the health facts of GPU g through its handle dev (nvml_health_probe.c). Returns false
 * when the caller gave up waiting (the facts so far stay valid), else true. */
bool nvml_probe_gpu_health(struct probe_state *st, struct nvml_gpu_facts *g, nvmlDevice_t dev);
