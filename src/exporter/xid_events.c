/* xid_events.c: the exporter's Xid thread: an NVML event set that records the last Xid error of each GPU. */
#include "exporter/exporter_internal.h"

#include <unistd.h>

#define EVENT_WAIT_MS 500

/* The Xid thread: keeps an event set registered for Xid errors on every GPU and records the last Xid
 * per GPU. Holds its own nvmlInit reference; starts over after any error. Returns NULL. */
void *exporter_xid_main(void *arg) {
        struct exporter *e = arg;
        nvmlDevice_t *handles = xcalloc(MAX_GPUS, sizeof *handles);
        pthread_mutex_lock(&e->lock);
        while (!e->stop) {
                struct nvml_lib *lib = nvml_lib_ref(e->lib);
                pthread_mutex_unlock(&e->lock);
                nvmlEventSet_t set = NULL;
                bool inited = false;
                nvmlReturn_t rc = NVML_ERROR_NOT_SUPPORTED;
                enum exp_call failed = CALL_INIT;
                unsigned count = 0;
                if (!lib || !lib->nvmlEventSetCreate || !lib->nvmlDeviceRegisterEvents || !lib->nvmlEventSetWait)
                        goto again;
                rc = lib->nvmlInit();
                if (rc != NVML_SUCCESS) goto again;
                inited = true;
                failed = CALL_DEVICE_COUNT;
                rc = lib->nvmlDeviceGetCount(&count);
                if (rc != NVML_SUCCESS) goto again;
                if (count > MAX_GPUS) count = MAX_GPUS;
                failed = CALL_EVENT_SET_CREATE;
                rc = lib->nvmlEventSetCreate(&set);
                if (rc != NVML_SUCCESS) goto again;
                for (unsigned i = 0; i < count; i++) {
                        handles[i] = NULL;
                        if (lib->nvmlDeviceGetHandleByIndex(i, &handles[i]) != NVML_SUCCESS) continue;
                        nvmlReturn_t r = lib->nvmlDeviceRegisterEvents(handles[i], nvmlEventTypeXidCriticalError, set);
                        if (r != NVML_SUCCESS && r != NVML_ERROR_NOT_SUPPORTED) {
                                pthread_mutex_lock(&e->lock);
                                e->stats.nvml_errors[CALL_REGISTER_EVENTS]++;
                                pthread_mutex_unlock(&e->lock);
                        }
                }
                failed = CALL_EVENT_SET_WAIT;
                for (;;) {
                        nvmlEventData_t d;
                        memset(&d, 0, sizeof d);
                        rc = lib->nvmlEventSetWait(set, &d, EVENT_WAIT_MS);
                        pthread_mutex_lock(&e->lock);
                        bool stop = e->stop;
                        if (rc == NVML_SUCCESS && (d.eventType & nvmlEventTypeXidCriticalError)) {
                                for (unsigned i = 0; i < count; i++)
                                        if (handles[i] && handles[i] == d.device) {
                                                e->xid_last[i] = (int64_t)d.eventData;
                                                e->stats.xid_events_total++;
                                                if (e->xid_notify_fd >= 0) {
                                                        uint64_t one = 1;
                                                        (void)!write(e->xid_notify_fd, &one, sizeof one);
                                                }
                                        }
                        }
                        pthread_mutex_unlock(&e->lock);
                        if (stop) break;
                        if (rc != NVML_SUCCESS && rc != NVML_ERROR_TIMEOUT) goto again;
                }
                rc = NVML_SUCCESS;
again:
                if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_SUPPORTED) {
                        pthread_mutex_lock(&e->lock);
                        e->stats.nvml_errors[failed]++;
                        pthread_mutex_unlock(&e->lock);
                }
                if (set && lib->nvmlEventSetFree) lib->nvmlEventSetFree(set);
                if (inited) lib->nvmlShutdown();
                nvml_lib_unref(lib);
                pthread_mutex_lock(&e->lock);
                if (!e->stop) exporter_wait_locked(e, lib ? 5000 : 1000);
        }
        pthread_mutex_unlock(&e->lock);
        free(handles);
        exporter_unref(e);
        return NULL;
}
