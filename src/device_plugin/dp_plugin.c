/* dp_plugin.c: the device plugin's loop: sockets, the kubelet's calls, registration threads, inotify, health. */
#include "device_plugin/dp_plugin.h"
#include "basic/hostfs.h"
#include "basic/util.h"
#include "device_plugin/dp_allocate.h"
#include "dpconfig/dp_config.h"
#include "device_plugin/dp_devices.h"
#include "device_plugin/dp_health.h"
#include "daemon/xid_watch.h"
#include "device_plugin/dp_register.h"
#include "grpc/grpc_server.h"
#include "nvml/nvml_probe.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/inotify.h>

#include "device_plugin/dp_pb.h"

#define CHECK_EVERY_MS          5000
#define ENUMERATE_AGAIN_MS      30000 /* NVML answers but its GPUs cannot be enumerated yet: the next try */
#define REGISTER_BACKOFF_MAX_MS 30000

struct plugin;

/* A resource being served: its socket's listener and the ListAndWatch streams open on it. */
struct res_state {
        struct plugin *p;
        struct dp_resource *r;
        int listener;
        struct grpc_call **watchers;
        size_t n_watchers;
        struct grpc_msg *last; /* the last ListAndWatchResponse sent (packed), shared by every watcher */
};

/* Shared with registration threads, which may outlive a round of registration (or the plugin). */
struct reg_shared {
        atomic_int refs;
        atomic_uint generation; /* bumped: threads of older generations stop */
        void (*log)(void *userdata, const char *line);
        void *userdata;
};

struct plugin {
        const struct dp_options *o;
        struct dp_config cfg;
        unsigned strategies;
        char *kubelet_dir, *kubelet_socket;
        struct nvml_lib *lib;
        struct dp_inventory *inv;
        struct dp_health *health;
        int xid_subscription;     /* in o->xid; -1: none */
        struct dp_gpu_health *gh; /* the health last seen, per inventory GPU */
        struct grpc_server *srv;
        struct res_state *rs;
        size_t n_rs;
        int inotify_fd;
        ino_t kubelet_ino;
        struct reg_shared *reg;
        bool stop, reenumerate, reregister;
        uint64_t next_check_ms;
        uint64_t enumerate_again_ms; /* still on the kubelet's last devices: when to ask NVML again (0: not due) */
};

/* ---- logging ---- */

static void log_line(void (*fn)(void *, const char *), void *userdata, const char *line) {
        if (fn)
                fn(userdata, line);
        else
                fprintf_escaped(stderr, "gpunode device-plugin: %s\n", line);
}

/* Logs one line of the plugin. */
static void plog(struct plugin *p, const char *fmt, ...) _printf_(2, 3);
static void plog(struct plugin *p, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *line = xvasprintf(fmt, ap);
        va_end(ap);
        log_line(p->o->log, p->o->userdata, line);
}

/* ---- registration ---- */

static void reg_unref(struct reg_shared *s) {
        if (s && atomic_fetch_sub(&s->refs, 1) == 1) free(s);
}

struct reg_job {
        struct reg_shared *shared;
        unsigned generation;
        char *socket, *resource, *endpoint;
        unsigned attempts, timeout_ms, backoff_ms;
};

/* A registration thread: tries Register attempts times with a doubling wait, logging each failure
 * and the outcome; stops early when a newer generation starts. Returns NULL. */
static void *reg_main(void *arg) {
        struct reg_job *j = arg;
        struct reg_shared *s = j->shared;
        unsigned wait = j->backoff_ms;
        for (unsigned a = 1; a <= j->attempts; a++) {
                if (atomic_load(&s->generation) != j->generation) break;
                _cleanup_free_ char *err = NULL;
                int r = dp_register(j->socket, j->resource, j->endpoint, j->timeout_ms, &err);
                if (atomic_load(&s->generation) != j->generation) break;
                _cleanup_free_ char *line = NULL;
                if (r == 0) {
                        line = xasprintf("registered %s (socket %s) with the kubelet", j->resource, j->endpoint);
                        log_line(s->log, s->userdata, line);
                        break;
                }
                if (a == j->attempts) {
                        line = xasprintf("cannot register %s with the kubelet: gave up after %u attempts (last: %s); "
                                         "will register again when the kubelet re-creates %s",
                                         j->resource, j->attempts, err ? err : strerror(-r), j->socket);
                        log_line(s->log, s->userdata, line);
                        break;
                }
                line = xasprintf("cannot register %s with the kubelet (attempt %u of %u): %s; retrying in %u ms",
                                 j->resource, a, j->attempts, err ? err : strerror(-r), wait);
                log_line(s->log, s->userdata, line);
                for (unsigned t = 0; t < wait && atomic_load(&s->generation) == j->generation; t += 100)
                        poll(NULL, 0, 100);
                wait = wait * 2 > REGISTER_BACKOFF_MAX_MS ? REGISTER_BACKOFF_MAX_MS : wait * 2;
        }
        reg_unref(s);
        free(j->socket);
        free(j->resource);
        free(j->endpoint);
        free(j);
        return NULL;
}

/* Starts registering every resource (a new generation: older attempts stop). */
static void register_all(struct plugin *p) {
        unsigned gen = atomic_fetch_add(&p->reg->generation, 1) + 1;
        for (size_t i = 0; i < p->n_rs; i++) {
                struct reg_job *j = xcalloc(1, sizeof *j);
                atomic_fetch_add(&p->reg->refs, 1);
                *j = (struct reg_job){ .shared = p->reg,
                                       .generation = gen,
                                       .socket = xstrdup(p->kubelet_socket),
                                       .resource = xstrdup(p->rs[i].r->name),
                                       .endpoint = xstrdup(p->rs[i].r->endpoint),
                                       .attempts = p->o->register_attempts ? p->o->register_attempts : 5,
                                       .timeout_ms = p->o->register_timeout_ms ? p->o->register_timeout_ms : 5000,
                                       .backoff_ms = p->o->register_backoff_ms ? p->o->register_backoff_ms : 1000 };
                pthread_t t;
                pthread_attr_t attr;
                pthread_attr_init(&attr);
                pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                pthread_attr_setstacksize(&attr, 256 << 10);
                int r = pthread_create(&t, &attr, reg_main, j);
                pthread_attr_destroy(&attr);
                if (r != 0) {
                        plog(p, "cannot start a registration thread: %s", strerror(r));
                        reg_unref(p->reg);
                        free(j->socket);
                        free(j->resource);
                        free(j->endpoint);
                        free(j);
                }
        }
}

/* ---- ListAndWatch ---- */

/* Packs the ListAndWatchResponse of a resource with the health last seen into *ret (malloc'd, *ret_len bytes). */
static void pack_list(struct plugin *p, const struct dp_resource *r, uint8_t **ret, size_t *ret_len) {
        size_t n = r->n_devices;
        V1beta1__Device *d = xcalloc(n + 1, sizeof *d);
        V1beta1__Device **dp = xcalloc(n + 1, sizeof *dp);
        V1beta1__TopologyInfo *t = xcalloc(n + 1, sizeof *t);
        V1beta1__NUMANode *nn = xcalloc(n + 1, sizeof *nn);
        V1beta1__NUMANode **nnp = xcalloc(n + 1, sizeof *nnp);
        for (size_t i = 0; i < n; i++) {
                const struct dp_device *dev = &r->devices[i];
                v1beta1__device__init(&d[i]);
                d[i].id = dev->id;
                d[i].health = dp_device_healthy(&p->gh[dev->gpu], dev) ? (char *)"Healthy" : (char *)"Unhealthy";
                int numa = p->inv->gpus[dev->gpu].numa;
                if (numa >= 0) {
                        v1beta1__topology_info__init(&t[i]);
                        v1beta1__numanode__init(&nn[i]);
                        nn[i].id = numa;
                        nnp[i] = &nn[i];
                        t[i].n_nodes = 1;
                        t[i].nodes = &nnp[i];
                        d[i].topology = &t[i];
                }
                dp[i] = &d[i];
        }
        V1beta1__ListAndWatchResponse m = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
        m.n_devices = n;
        m.devices = dp;
        size_t len = protobuf_c_message_get_packed_size(&m.base);
        uint8_t *buf = xmalloc(len ? len : 1);
        protobuf_c_message_pack(&m.base, buf);
        free(d);
        free(dp);
        free(t);
        free(nn);
        free(nnp);
        *ret = buf;
        *ret_len = len;
}

/* Packs resource s's list into s->last (kept when the same). Returns true when it changed. */
static bool update_last(struct plugin *p, struct res_state *s) {
        _cleanup_free_ uint8_t *m = NULL;
        size_t len, old_len = 0;
        pack_list(p, s->r, &m, &len);
        const uint8_t *old = s->last ? grpc_msg_body(s->last, &old_len) : NULL;
        if (old && old_len == len && memcmp(old, m, len) == 0) return false;
        struct grpc_msg *n = grpc_msg_new(m, len);
        if (!n) return false; /* past 4 GiB: cannot be framed; the old list stays */
        grpc_msg_unref(s->last);
        s->last = n;
        return true;
}

/* Sends every resource's list to its watchers when it changed: one buffer shared by all of them,
 * replacing a list a watcher has not begun to take (only the newest matters). A watcher past the
 * server's bounds is reset and closes. */
static void send_lists(struct plugin *p) {
        for (size_t i = 0; i < p->n_rs; i++) {
                struct res_state *s = &p->rs[i];
                if (!update_last(p, s)) continue;
                for (size_t w = 0; w < s->n_watchers; w++) (void)grpc_call_send_latest(s->watchers[w], s->last);
        }
}

/* A ListAndWatch stream ended: forgets it. */
static void watcher_closed(struct grpc_call *c, void *userdata) {
        struct res_state *s = userdata;
        for (size_t w = 0; w < s->n_watchers; w++)
                if (s->watchers[w] == c) {
                        s->watchers[w] = s->watchers[--s->n_watchers];
                        break;
                }
}

static void h_list_and_watch(struct grpc_call *c, const uint8_t *req, size_t len, void *md, void *ld) {
        struct res_state *s = ld;
        s->watchers = xrealloc(s->watchers, (s->n_watchers + 1) * sizeof *s->watchers);
        s->watchers[s->n_watchers++] = c;
        grpc_call_on_close(c, watcher_closed, s);
        if (!s->last) (void)update_last(s->p, s);
        if (s->last) (void)grpc_call_send_latest(c, s->last);
}

/* ---- unary calls ---- */

static void h_options(struct grpc_call *c, const uint8_t *req, size_t len, void *md, void *ld) {
        V1beta1__DevicePluginOptions o = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
        o.get_preferred_allocation_available = true;
        uint8_t buf[16];
        size_t n = protobuf_c_message_pack(&o.base, buf);
        grpc_call_reply(c, buf, n);
}

static void h_prestart(struct grpc_call *c, const uint8_t *req, size_t len, void *md, void *ld) {
        grpc_call_reply(c, "", 0);
}

/* An Xid from the daemon's watch: the health monitor judges it. Runs in the watch's thread, while
 * subscribed (between dp_health_start and dp_health_stop). Returns nothing. */
static void on_xid(void *userdata, const struct xid_event *ev) {
        struct plugin *p = userdata;
        dp_health_xid(p->health, ev->uuid, ev->xid, ev->gpu_instance_id);
}

/* dp_health_link through the plugin's health monitor. */
static int link_cb(void *userdata, size_t a, size_t b) {
        struct plugin *p = userdata;
        return p->health ? dp_health_link(p->health, a, b) : -1;
}

/* Fills the allocation context of resource s. */
static struct dp_alloc_context alloc_context(struct res_state *s) {
        struct plugin *p = s->p;
        return (struct dp_alloc_context){
                .resource = s->r,
                .list_strategies = p->strategies,
                .cdi_annotation_prefix = p->cfg.cdi_annotation_prefix ? p->cfg.cdi_annotation_prefix : "cdi.k8s.io/",
                .fail_requests_greater_than_one = p->cfg.fail_requests_greater_than_one,
                .pass_device_specs = p->cfg.pass_device_specs,
                .dev_root = p->cfg.dev_root,
                .control_nodes = p->inv->control_nodes,
                .link = link_cb,
                .link_data = p,
                .gpus = p->inv->gpus,
                .n_gpus = p->inv->n_gpus,
        };
}

/* Answers a unary call with what fn made of it. */
static void answer(struct grpc_call *c, struct res_state *s, const char *what, int r, uint8_t *out, size_t out_len,
                   char *err) {
        if (r == 0)
                grpc_call_reply(c, out, out_len);
        else {
                plog(s->p, "%s for %s refused: %s", what, s->r->name, err ? err : strerror(r < 0 ? -r : EINVAL));
                grpc_call_fail(c, r > 0 ? r : GRPC_INTERNAL, "%s", err ? err : "internal error");
        }
        free(out);
        free(err);
}

static void h_allocate(struct grpc_call *c, const uint8_t *req, size_t len, void *md, void *ld) {
        struct res_state *s = ld;
        struct dp_alloc_context ctx = alloc_context(s);
        uint8_t *out = NULL;
        size_t out_len = 0;
        char *err = NULL;
        int r = dp_allocate(&ctx, req, len, &out, &out_len, &err);
        answer(c, s, "Allocate", r, out, out_len, err);
}

static void h_preferred(struct grpc_call *c, const uint8_t *req, size_t len, void *md, void *ld) {
        struct res_state *s = ld;
        struct dp_alloc_context ctx = alloc_context(s);
        uint8_t *out = NULL;
        size_t out_len = 0;
        char *err = NULL;
        int r = dp_preferred(&ctx, req, len, &out, &out_len, &err);
        answer(c, s, "GetPreferredAllocation", r, out, out_len, err);
}

static const struct grpc_method methods[] = {
        { "/v1beta1.DevicePlugin/GetDevicePluginOptions", false, h_options, NULL },
        { "/v1beta1.DevicePlugin/ListAndWatch", true, h_list_and_watch, NULL },
        { "/v1beta1.DevicePlugin/GetPreferredAllocation", false, h_preferred, NULL },
        { "/v1beta1.DevicePlugin/Allocate", false, h_allocate, NULL },
        { "/v1beta1.DevicePlugin/PreStartContainer", false, h_prestart, NULL },
};

/* ---- health ---- */

/* Logs (and tells health_event of) each device of GPU gpu, the first replica of each, that a change of
 * its MIG instances' health from was to now made Unhealthy or Healthy again. Returns nothing. */
static void health_instances(struct plugin *p, size_t gpu, const struct dp_gpu_health *was,
                             const struct dp_gpu_health *now) {
        for (size_t r = 0; r < p->inv->n_resources; r++)
                for (size_t k = 0; k < p->inv->resources[r].n_devices; k++) {
                        const struct dp_device *d = &p->inv->resources[r].devices[k];
                        if (d->gpu != gpu || d->replica > 0) continue;
                        bool before = dp_device_healthy(was, d), after = dp_device_healthy(now, d);
                        if (before == after) continue;
                        if (after)
                                plog(p, "%s (on GPU %u) is Healthy again", d->uuid, p->inv->gpus[gpu].index);
                        else
                                plog(p, "%s (on GPU %u) is Unhealthy: %s", d->uuid, p->inv->gpus[gpu].index,
                                     now->instance_reason);
                        if (p->o->health_event)
                                p->o->health_event(p->o->userdata, d->uuid, after, after ? "" : now->instance_reason);
                }
}

/* Takes in the health monitor's news: logs each GPU's change and sends the new lists. */
static void on_health(int fd, void *userdata) {
        struct plugin *p = userdata;
        dp_health_drain(p->health);
        if (dp_health_take_nvml_back(p->health)) p->reenumerate = true;
        _cleanup_free_ struct dp_gpu_health *now = xcalloc(p->inv->n_gpus + 1, sizeof *now);
        dp_health_get(p->health, now);
        for (size_t i = 0; i < p->inv->n_gpus; i++) {
                const struct dp_gpu *g = &p->inv->gpus[i];
                if (now[i].healthy != p->gh[i].healthy || !streq(now[i].reason, p->gh[i].reason)) {
                        if (now[i].healthy)
                                plog(p, "%s (GPU %u) is Healthy again", g->uuid, g->index);
                        else
                                plog(p, "%s (GPU %u) is Unhealthy: %s", g->uuid, g->index, now[i].reason);
                        if (p->o->health_event)
                                p->o->health_event(p->o->userdata, g->uuid, now[i].healthy, now[i].reason);
                }
                if (now[i].unhealthy_instances != p->gh[i].unhealthy_instances && now[i].healthy && p->gh[i].healthy)
                        health_instances(p, i, &p->gh[i], &now[i]);
                p->gh[i] = now[i];
        }
        send_lists(p);
}

static void on_stop(int fd, void *userdata) {
        struct plugin *p = userdata;
        p->stop = true;
}

/* ---- kubelet restarts ---- */

/* Reads inotify events on the kubelet's folder: kubelet.sock (re)created means a kubelet that
 * started and forgot every plugin; a socket of ours removed is re-created. */
static void on_inotify(int fd, void *userdata) {
        struct plugin *p = userdata;
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        for (;;) {
                ssize_t n = read(fd, buf, sizeof buf);
                if (n <= 0) break;
                for (char *q = buf; q < buf + n;) {
                        struct inotify_event *e = (struct inotify_event *)q;
                        q += sizeof *e + e->len;
                        if (!e->len) continue;
                        if (streq(e->name, "kubelet.sock") && (e->mask & (IN_CREATE | IN_MOVED_TO))) {
                                plog(p, "the kubelet's socket was created: the kubelet (re)started; registering again");
                                p->reregister = true;
                        }
                        for (size_t i = 0; i < p->n_rs; i++)
                                if (streq(e->name, p->rs[i].r->endpoint) && (e->mask & (IN_DELETE | IN_MOVED_FROM)))
                                        p->next_check_ms = 0; /* see to the listener at once */
                }
        }
}

/* Starts watching the kubelet's folder. Returns nothing; without inotify the periodic check does it. */
static void watch_folder(struct plugin *p) {
        if (p->inotify_fd >= 0) close(p->inotify_fd);
        p->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (p->inotify_fd < 0) return;
        _cleanup_close_ int dfd = hostfs_open(p->kubelet_dir, O_PATH | O_DIRECTORY);
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", dfd);
        if (dfd < 0 || inotify_add_watch(p->inotify_fd, path,
                                         IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE_SELF) < 0)
                plog(p, "cannot watch %s with inotify (%s): checking it every %d s instead", p->kubelet_dir,
                     strerror(dfd < 0 ? -dfd : errno), CHECK_EVERY_MS / 1000);
}

/* Returns the inode of kubelet.sock, 0 when there is none. */
static ino_t kubelet_ino(struct plugin *p) {
        struct stat st;
        return hostfs_stat(p->kubelet_socket, &st) == 0 && S_ISSOCK(st.st_mode) ? st.st_ino : 0;
}

/* Sees that every socket is there (re-creating a removed one) and that the kubelet is the one
 * registered with; registers again when either changed. */
static void check_sockets(struct plugin *p) {
        bool again = p->reregister;
        p->reregister = false;
        for (size_t i = 0; i < p->n_rs; i++) {
                struct res_state *s = &p->rs[i];
                if (grpc_server_listener_present(p->srv, s->listener)) continue;
                grpc_server_unlisten(p->srv, s->listener);
                _cleanup_free_ char *err = NULL;
                s->listener = grpc_server_listen(p->srv, s->r->socket, s, &err);
                if (s->listener < 0) {
                        plog(p, "cannot re-create my socket: %s", err);
                        continue;
                }
                plog(p, "my socket %s was removed (a kubelet restart?): listening again", s->r->socket);
                again = true;
        }
        ino_t ino = kubelet_ino(p);
        if (ino && ino != p->kubelet_ino) again = true;
        p->kubelet_ino = ino;
        if (again && ino) register_all(p);
        if (p->inotify_fd < 0) watch_folder(p);
}

/* ---- setup ---- */

/* Frees the server (closing streams), the listeners and the inventory's state. */
static void teardown(struct plugin *p) {
        grpc_server_free(p->srv);
        p->srv = NULL;
        for (size_t i = 0; i < p->n_rs; i++) {
                free(p->rs[i].watchers);
                grpc_msg_unref(p->rs[i].last);
        }
        free(p->rs);
        p->rs = NULL;
        p->n_rs = 0;
        if (p->xid_subscription >= 0) xid_watch_unsubscribe(p->o->xid, p->xid_subscription);
        p->xid_subscription = -1;
        dp_health_stop(p->health);
        p->health = NULL;
        free(p->gh);
        p->gh = NULL;
        dp_inventory_free(p->inv);
        p->inv = NULL;
}

/* Enumerates the devices: NVML's, else the kubelet's last ones (checkpoint). Returns 0 with *ret,
 * or -EINVAL with a sentence (the config cannot serve the GPUs found). */
static int enumerate(struct plugin *p, struct dp_inventory **ret, char **ret_error) {
        _cleanup_free_ char *err = NULL;
        struct nvml_facts *f = NULL;
        int r = -ENOENT;
        if (p->lib) {
                r = nvml_probe_run(p->lib, p->o->nvml_timeout_ms ? p->o->nvml_timeout_ms : 10000, &f);
                if (r == 0) r = dp_inventory_build(f, &p->cfg, ret, &err);
        }
        nvml_facts_free(f);
        if (r == -EINVAL) return errorf(ret_error, r, "%s", err);
        if (r < 0) {
                if (p->cfg.fail_on_init_error && !p->lib)
                        plog(p,
                             "NVML cannot be loaded; failOnInitError is set, but a plugin that crash-loops tells the "
                             "kubelet less than one whose devices are Unhealthy: serving the kubelet's last devices");
                dp_inventory_from_checkpoint(ret);
                size_t n = 0;
                for (size_t i = 0; i < (*ret)->n_resources; i++) n += (*ret)->resources[i].n_devices;
                plog(p,
                     "NVML found no GPU (%s): advertising the %zu device(s) the kubelet last knew as Unhealthy until "
                     "it does",
                     err ? err : strerror(-r), n);
        }
        return 0;
}

/* Takes inv, starts health, the server and its listeners. Returns 0 or -errno with a sentence. */
static int setup(struct plugin *p, struct dp_inventory *inv, char **ret_error) {
        int r;
        p->inv = inv;
        struct dp_xid_policy pol;
        _cleanup_free_ char *perr = NULL;
        if (dp_xid_policy_parse(getenv("DP_DISABLE_HEALTHCHECKS"), getenv("DP_ENABLE_HEALTHCHECKS"), &pol, &perr) < 0)
                return errorf(ret_error, -EINVAL, "%s", perr);
        /* Enumerated just now: Healthy until the health thread says otherwise; the kubelet's
         * last devices, NVML not answering: Unhealthy from the first list on. */
        p->gh = xcalloc(p->inv->n_gpus + 1, sizeof *p->gh);
        for (size_t i = 0; i < p->inv->n_gpus; i++) {
                p->gh[i].healthy = !p->inv->from_checkpoint;
                if (p->inv->from_checkpoint) snprintf(p->gh[i].reason, sizeof p->gh[i].reason, "NVML does not answer");
        }
        r = dp_health_start(p->lib, p->inv->gpus, p->inv->n_gpus, p->o->health_interval_ms, &pol,
                            p->inv->from_checkpoint, &p->health);
        if (r < 0) return errorf(ret_error, r, "cannot start the health thread: %s", strerror(-r));
        if (p->o->xid)
                p->xid_subscription =
                        xid_watch_subscribe(p->o->xid, &(struct xid_subscriber){ .on_xid = on_xid, .userdata = p });
        if (!p->inv->from_checkpoint) dp_health_get(p->health, p->gh);
        r = grpc_server_new(NULL, methods, ELEMENTSOF(methods), &p->srv, ret_error);
        if (r < 0) return r;
        p->rs = xcalloc(p->inv->n_resources + 1, sizeof *p->rs);
        for (size_t i = 0; i < p->inv->n_resources; i++) {
                struct res_state *s = &p->rs[p->n_rs];
                *s = (struct res_state){ .p = p, .r = &p->inv->resources[i], .listener = -1 };
                /* the socket lives where the kubelet is told to dial it: beside kubelet.sock */
                free(s->r->socket);
                s->r->socket = xasprintf("%s/%s", p->kubelet_dir, s->r->endpoint);
                s->listener = grpc_server_listen(p->srv, s->r->socket, s, ret_error);
                if (s->listener < 0) return s->listener;
                p->n_rs++;
                plog(p, "serving %s: %zu device(s) on %s", s->r->name, s->r->n_devices, s->r->socket);
        }
        grpc_server_watch_fd(p->srv, dp_health_fd(p->health), on_health, p);
        if (p->o->stop_fd >= 0) grpc_server_watch_fd(p->srv, p->o->stop_fd, on_stop, p);
        if (p->inotify_fd >= 0) grpc_server_watch_fd(p->srv, p->inotify_fd, on_inotify, p);
        return 0;
}

/* Returns true when some nvidia CDI spec lies in /etc/cdi or /var/run/cdi (the runtime has CDI). */
static bool cdi_present(void) {
        static const char *const dirs[] = { "/etc/cdi", "/var/run/cdi" };
        for (size_t d = 0; d < ELEMENTSOF(dirs); d++) {
                _cleanup_strv_free_ char **names = NULL;
                if (hostfs_list(dirs[d], false, &names) <= 0) continue;
                for (char **n = names; *n; n++)
                        if (strstr(*n, "nvidia") && (strstr(*n, ".yaml") || strstr(*n, ".json") || strstr(*n, ".yml")))
                                return true;
        }
        return false;
}

/* Parses a Go-style boolean. Returns 0 with *ret or -EINVAL. */
static int parse_bool(const char *s, bool *ret) {
        static const char *const t[] = { "1", "t", "T", "TRUE", "true", "True" }, *const f[] = { "0",     "f",
                                                                                                 "F",     "FALSE",
                                                                                                 "false", "False" };
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                if (streq(s, t[i])) return *ret = true, 0;
                if (streq(s, f[i])) return *ret = false, 0;
        }
        return -EINVAL;
}

int dp_apply_overrides(const struct dp_options *o, struct dp_config *cfg, char **ret_error) {
        if (o->mig_strategy && dp_mig_strategy_parse(o->mig_strategy, &cfg->mig_strategy) < 0)
                return errorf(ret_error, -EINVAL, "MIG strategy '%s' is not none, single or mixed", o->mig_strategy);
        if (o->list_strategy) {
                int k = dp_list_strategy_parse(o->list_strategy);
                if (k < 0)
                        return errorf(
                                ret_error, -EINVAL,
                                "device list strategy '%s' is not envvar, volume-mounts, cdi-annotations or cdi-cri",
                                o->list_strategy);
                cfg->list_strategies = (unsigned)k;
        }
        if (o->id_strategy) {
                if (!streq(o->id_strategy, "uuid") && !streq(o->id_strategy, "index"))
                        return errorf(ret_error, -EINVAL, "device ID strategy '%s' is not uuid or index",
                                      o->id_strategy);
                cfg->id_index = streq(o->id_strategy, "index");
        }
        if (o->fail_on_init_error && parse_bool(o->fail_on_init_error, &cfg->fail_on_init_error) < 0)
                return errorf(ret_error, -EINVAL, "fail-on-init-error '%s' is not true or false",
                              o->fail_on_init_error);
        if (o->pass_device_specs && parse_bool(o->pass_device_specs, &cfg->pass_device_specs) < 0)
                return errorf(ret_error, -EINVAL, "pass-device-specs '%s' is not true or false", o->pass_device_specs);
        return 0;
}

/* Reads and parses the config file. Returns 0 or -errno with a sentence naming the file. */
static int read_config(const char *file, struct dp_config *cfg, char **ret_error) {
        _cleanup_fclose_ FILE *f = fopen(file, "re");
        if (!f) return errorf(ret_error, -errno, "cannot read the config file %s: %m", file);
        _cleanup_free_ char *text = xmalloc(DP_CONFIG_MAX_BYTES + 1);
        size_t len = fread(text, 1, DP_CONFIG_MAX_BYTES + 1, f);
        if (ferror(f)) return errorf(ret_error, -EIO, "cannot read the config file %s", file);
        if (len > DP_CONFIG_MAX_BYTES)
                return errorf(ret_error, -EFBIG, "the config file %s is larger than 1 MiB", file);
        _cleanup_free_ char *err = NULL;
        int r = dp_config_parse(text, len, 0, cfg, &err);
        if (r < 0) return errorf(ret_error, r, "the config file %s: %s", file, err);
        return 0;
}

int dp_run(const struct dp_options *o, char **ret_error) {
        struct plugin pl = { .o = o, .inotify_fd = -1, .xid_subscription = -1 };
        struct plugin *p = &pl;
        dp_config_init(&p->cfg);
        int r = 0;
        if (o->config_file) r = read_config(o->config_file, &p->cfg, ret_error);
        if (r == 0) r = dp_apply_overrides(o, &p->cfg, ret_error);
        if (r == 0) r = dl_protobuf_c_open(ret_error);
        if (r < 0) {
                dp_config_done(&p->cfg);
                return r;
        }
        p->strategies = p->cfg.list_strategies;
        const char *why = ", ";
        if (!p->strategies) {
                bool cdi = cdi_present();
                p->strategies = cdi ? DP_LIST_CDI_CRI : DP_LIST_ENVVAR;
                why = cdi ? " (auto: nvidia CDI specs found), "
                          : " (auto: no nvidia CDI spec in /etc/cdi, /var/run/cdi), ";
        }
        p->kubelet_dir = xstrdup(o->kubelet_dir ? o->kubelet_dir : DP_KUBELET_DIR);
        p->kubelet_socket = xasprintf("%s/kubelet.sock", p->kubelet_dir);
        p->reg = xcalloc(1, sizeof *p->reg);
        atomic_init(&p->reg->refs, 1);
        p->reg->log = o->log;
        p->reg->userdata = o->userdata;
        _cleanup_free_ char *lerr = NULL;
        if (nvml_lib_open(o->nvml_library, &p->lib, &lerr) < 0) {
                plog(p, "cannot load NVML: %s", lerr);
                p->lib = NULL;
        }
        {
                static const char *const names[] = { "envvar", "volume-mounts", "cdi-annotations", "cdi-cri" };
                struct buf b = { 0 };
                for (unsigned i = 0; i < ELEMENTSOF(names); i++)
                        if (p->strategies & (1u << i)) buf_printf(&b, "%s%s", b.len ? "," : "", names[i]);
                plog(p, "device list strategy %s%sMIG strategy %s", b.data, why,
                     p->cfg.mig_strategy == DP_MIG_NONE     ? "none"
                     : p->cfg.mig_strategy == DP_MIG_SINGLE ? "single"
                                                            : "mixed");
                buf_free(&b);
        }
        if (!hostfs_exists(p->kubelet_dir)) {
                r = errorf(ret_error, -ENOENT,
                           "the kubelet's device plugin folder %s does not exist (not a Kubernetes node, or "
                           "the DaemonSet lacks its hostPath)",
                           p->kubelet_dir);
                goto out;
        }
        watch_folder(p);
        struct dp_inventory *inv = NULL;
        r = enumerate(p, &inv, ret_error);
        if (r == 0) r = setup(p, inv, ret_error);
        if (r < 0) goto out;
        p->kubelet_ino = kubelet_ino(p);
        if (p->kubelet_ino)
                register_all(p);
        else
                plog(p, "no kubelet socket %s yet: will register when it appears", p->kubelet_socket);
        p->next_check_ms = monotonic_ms() + CHECK_EVERY_MS;
        while (!p->stop) {
                r = grpc_server_run(p->srv, 1000);
                if (r < 0) {
                        errorf(ret_error, r, "the server's poll failed: %s", strerror(-r));
                        break;
                }
                if (p->reenumerate && !p->stop) {
                        p->reenumerate = false;
                        _cleanup_free_ char *err = NULL;
                        struct dp_inventory *next = NULL;
                        r = enumerate(p, &next, &err);
                        if (r == 0 && p->inv->from_checkpoint && next->from_checkpoint) {
                                /* NVML answers the health thread but the enumeration still fails (a slow probe): keep
                                 * serving, ask again in a while rather than rebuilding the server every round. */
                                dp_inventory_free(next);
                                p->enumerate_again_ms = monotonic_ms() + ENUMERATE_AGAIN_MS;
                                continue;
                        }
                        if (r == 0 && !p->inv->from_checkpoint && dp_inventory_same(p->inv, next)) {
                                plog(p, "NVML answers again, with the same GPUs");
                                dp_inventory_free(next);
                                continue;
                        }
                        if (r == 0) {
                                plog(p, "NVML answers again: serving the GPUs it found anew");
                                teardown(p);
                                r = setup(p, next, &err);
                        }
                        if (r < 0) {
                                errorf(ret_error, r, "%s", err);
                                break;
                        }
                        p->kubelet_ino = 0;
                        p->next_check_ms = 0;
                }
                if (p->enumerate_again_ms && monotonic_ms() >= p->enumerate_again_ms) {
                        p->enumerate_again_ms = 0;
                        p->reenumerate = true;
                }
                if (p->reregister || monotonic_ms() >= p->next_check_ms) {
                        check_sockets(p);
                        p->next_check_ms = monotonic_ms() + CHECK_EVERY_MS;
                }
        }
        if (p->stop) {
                plog(p, "stopping: removing my sockets");
                r = 0;
        }
out:
        atomic_fetch_add(&p->reg->generation, 1);
        reg_unref(p->reg);
        teardown(p);
        if (p->inotify_fd >= 0) close(p->inotify_fd);
        nvml_lib_unref(p->lib);
        free(p->kubelet_dir);
        free(p->kubelet_socket);
        dp_config_done(&p->cfg);
        return r;
}
