/* agent.c: `gpunode agent`'s sink of the daemon's diagnosis: node conditions, Events, the taint, /report and the page.
 */
#include "agent/agent.h"
#include "agent/api_child.h"
#include "daemon/diagnosis.h"

#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>

#include "agent/events.h"
#include "agent/status_page.h"
#include "agent/taint.h"
#include "basic/http_server.h"
#include "kube/kube_client.h"
#include "kube/kube_list.h"
#include "kube/kube_objects.h"

#define EVENT_QUEUE_MAX 16                /* Events not yet written, kept for retry (the oldest dropped) */
#define API_MAX_BODY    ((size_t)8 << 20) /* an API answer larger than this is refused (-EFBIG) */
#define TAINT_LIST_PAGE 100u              /* Nodes a page of the circuit breaker's list: 100 x 80 KiB fits */
/* What the agent reads of its Node (the kube-call child cuts the rest) and of the GPU nodes it counts. */
#define NODE_FIELDS      "metadata.name,metadata.uid,metadata.resourceVersion,spec.taints,status.conditions"
#define NODE_LIST_FIELDS "metadata.name,spec.taints"

struct agent {
        struct agent_options o;
        char *kubeconfig, *node; /* owned copies */
        int stop_fd;             /* eventfd: written on stop, never drained */
        int wake_fd;             /* eventfd: a new diagnosis or a posted Event for the API thread */
        pthread_t api_thread;
        bool api_running;
        /* Under lock: what the HTTP routes serve, and the latest conditions for the API thread. */
        pthread_mutex_t lock;
        char *report; /* the latest report, NULL before the first */
        size_t report_len;
        int64_t report_at; /* wall clock of the latest report */
        char *page;        /* the status page */
        size_t page_len;
        struct agent_condition latest[AGENT_N_LAYERS];
        bool have_latest;
        /* API thread only (each request by a `gpunode kube-call` child). */
        char *node_uid;
        bool seeded;                                  /* conditions read back from the Node once */
        struct agent_cond_state cond[AGENT_N_LAYERS]; /* as last written */
        struct agent_event_layer events[AGENT_N_LAYERS];
        struct agent_condition cur[AGENT_N_LAYERS];
        bool have_cur;
        bool dirty;           /* the last write failed: write again once the API answers */
        unsigned backoff_s;   /* 0: the API answered last time */
        int64_t next_api_try; /* CLOCK_MONOTONIC seconds; 0: now */
        char last_error[512]; /* logged once until it changes */
        /* Events decided but not yet written (the API failed): a ring, written oldest first. */
        struct agent_event pending[EVENT_QUEUE_MAX];
        unsigned pending_head, pending_n;
        /* Under lock: Events posted by other threads (the device plugin's GPU health), not yet queued. */
        struct agent_event posted[EVENT_QUEUE_MAX];
        unsigned posted_n;
};

/* Returns the wall clock in Unix seconds. */
static int64_t wall_s(void) {
        return (int64_t)time(NULL);
}

/* Logs one line to standard error unless it repeats the previous error line (key). Returns nothing. */
static void log_error(struct agent *a, const char *line) {
        if (streq(a->last_error, line)) return;
        snprintf(a->last_error, sizeof a->last_error, "%s", line);
        fprintf_escaped(stderr, "gpunode agent: %s\n", line);
}

/* Returns true when fd is readable now (draining an eventfd). */
static bool fd_fired(int fd) {
        uint64_t v;
        return fd >= 0 && read(fd, &v, sizeof v) == (ssize_t)sizeof v;
}

/* Publishes a report's text (report may be NULL: none yet; takes it) and the status page of its
 * parsed form for the HTTP routes. Returns nothing. */
static void publish(struct agent *a, char *report, size_t len, const struct report *parsed) {
        char *page = status_page_html(parsed, a->node);
        pthread_mutex_lock(&a->lock);
        if (report) {
                free(a->report);
                a->report = report;
                a->report_len = len;
                a->report_at = wall_s();
        }
        free(a->page);
        a->page = page;
        a->page_len = strlen(page);
        pthread_mutex_unlock(&a->lock);
}

/* Describes an API failure r (message msg) of what (e.g. "patch nodes/status") for the log: 403 names
 * the permission. Returns a malloc'd line. */
static char *api_failure(int r, const char *what, const char *msg) {
        if (r == -EPERM)
                return xasprintf("%s refused (403): the agent's service account lacks the permission to %s; "
                                 "grant it in the ClusterRole (%s)",
                                 what, what, msg ? msg : "");
        if (r == -EBADMSG)
                return xasprintf("%s: the API server answered with something that is not JSON (%s)", what,
                                 msg ? msg : "");
        if (r == -EFBIG) return xasprintf("%s: the API server's answer is too large (%s)", what, msg ? msg : "");
        return xasprintf("%s failed: %s", what, msg ? msg : strerror(-r));
}

/* Makes one API request (method, path, patch_type as api_child_call() takes them) in a kube-call
 * child with the agent's kubeconfig, API timeout and API_MAX_BODY. Returns 0 with *ret (may be NULL
 * when not wanted), or -errno with a malloc'd line in *ret_error: the configuration's or client's
 * sentence when the call failed before the request, else api_failure() of what. */
static int api_call(struct agent *a, const char *method, const char *path, const char *patch_type, const char *body,
                    const char *what, json_t **ret, char **ret_error) {
        char *err = NULL;
        bool setup = false;
        int r = api_child_call_setup(method, path, patch_type, body, a->kubeconfig, a->o.api_timeout_ms, API_MAX_BODY,
                                     ret, &err, &setup);
        if (r < 0) {
                *ret_error = setup ? err : api_failure(r, what, err);
                if (!setup) free(err);
        }
        return r;
}

/* GETs path in a kube-call child that cuts the answer to fields (what: the failure's words). Returns as
 * api_call(). */
static int api_get_fields(struct agent *a, const char *path, const char *fields, const char *what, json_t **ret,
                          char **ret_error) {
        char *err = NULL;
        bool setup = false;
        int r = api_child_get_fields(path, fields, a->kubeconfig, a->o.api_timeout_ms, API_MAX_BODY, ret, &err, &setup);
        if (r < 0) {
                *ret_error = setup ? err : api_failure(r, what, err);
                if (!setup) free(err);
        }
        return r;
}

/* Returns the API path of the agent's Node, then suffix (e.g. "/status"), the name escaped as every
 * name put into a path is (kube_query_escape). Malloc'd; never fails. */
static char *node_path(const struct agent *a, const char *suffix) {
        _cleanup_free_ char *n = kube_query_escape(a->node);
        return xasprintf("/api/v1/nodes/%s%s", n, suffix);
}

/* GETs the agent's Node, cut to what the agent reads (NODE_FIELDS). Returns as api_call(). */
static int api_get_node(struct agent *a, json_t **ret, char **ret_error) {
        _cleanup_free_ char *path = node_path(a, "");
        return api_get_fields(a, path, NODE_FIELDS, "get nodes", ret, ret_error);
}

/* Makes sure the node's uid (and, once, its conditions) are known. Returns 0, or -errno with a
 * malloc'd sentence in *ret_error. */
static int api_ready(struct agent *a, char **ret_error) {
        if (!a->node_uid || !a->seeded) {
                json_t *node = NULL;
                int r = api_get_node(a, &node, ret_error);
                if (r < 0) return r;
                /* a uid holding a NUL is no uid: the Events go without one rather than with a cut one */
                const char *uid = kube_json_str(json_object_get(json_object_get(node, "metadata"), "uid"));
                free(a->node_uid);
                a->node_uid = xstrdup(uid ? uid : "");
                if (!a->seeded) {
                        agent_conditions_from_node(node, a->cond);
                        a->seeded = true;
                }
                json_decref(node);
        }
        return 0;
}

/* PATCHes the Node's status with state (strategic merge: only our four types). Re-reads the node and
 * retries once on 409. Returns 0 or -errno with *ret_error. */
static int patch_conditions(struct agent *a, const struct agent_cond_state state[AGENT_N_LAYERS], char **ret_error) {
        json_t *body = agent_conditions_patch(state);
        _cleanup_free_ char *text = json_dumps(body, JSON_COMPACT);
        json_decref(body);
        _cleanup_free_ char *path = node_path(a, "/status");
        int r = -EIO;
        for (int attempt = 0; attempt < 2; attempt++) {
                char *err = NULL;
                r = api_call(a, "PATCH", path, "strategic", text, "patch nodes/status", NULL, &err);
                if (r == -EBUSY && attempt == 0) {
                        free(err);
                        a->seeded = true; /* keep our state; only refresh the node */
                        free(a->node_uid);
                        a->node_uid = NULL;
                        char *e2 = NULL;
                        if (api_ready(a, &e2) < 0) free(e2);
                        continue;
                }
                if (r < 0) *ret_error = err;
                break;
        }
        if (r == 0) fprintf(stderr, "gpunode agent: conditions written (%zu bytes)\n", strlen(text));
        return r;
}

/* Writes one Event (POST, or PATCH of the one it aggregates into; a PATCH of an expired one falls
 * back to POST). Returns 0 or -errno with *ret_error. */
static int write_event(struct agent *a, const struct agent_event *ev, char **ret_error) {
        char *err = NULL;
        int r;
        r = -ENOENT;
        if (ev->patch) {
                json_t *p = agent_event_patch(ev);
                _cleanup_free_ char *text = json_dumps(p, JSON_COMPACT);
                json_decref(p);
                _cleanup_free_ char *en = kube_query_escape(ev->name);
                _cleanup_free_ char *path = xasprintf("/api/v1/namespaces/default/events/%s", en);
                r = api_call(a, "PATCH", path, "merge", text, "patch events", NULL, &err);
                if (r == -ENOENT) {
                        free(err);
                        err = NULL;
                }
        }
        if (r == -ENOENT) {
                json_t *o = agent_event_object(ev, a->node, a->node_uid);
                _cleanup_free_ char *text = json_dumps(o, JSON_COMPACT);
                json_decref(o);
                r = api_call(a, "POST", "/api/v1/namespaces/default/events", NULL, text, "create events", NULL, &err);
        }
        if (r < 0) {
                *ret_error = err;
                err = NULL;
        } else
                fprintf_escaped(stderr, "gpunode agent: event %s %s: %s\n", ev->type, ev->reason, ev->message);
        free(err);
        return r;
}

/* Queues ev to be written (by flush_events), dropping the oldest pending Event with a log line when
 * EVENT_QUEUE_MAX are already waiting. Returns nothing; never fails. */
static void enqueue_event(struct agent *a, const struct agent_event *ev) {
        if (a->pending_n == EVENT_QUEUE_MAX) {
                const struct agent_event *old = &a->pending[a->pending_head];
                fprintf_escaped(stderr,
                                "gpunode agent: %u Events wait for the API server: dropping the oldest (%s %s: %s)\n",
                                EVENT_QUEUE_MAX, old->type, old->reason, old->message);
                a->pending_head = (a->pending_head + 1) % EVENT_QUEUE_MAX;
                a->pending_n--;
        }
        a->pending[(a->pending_head + a->pending_n) % EVENT_QUEUE_MAX] = *ev;
        a->pending_n++;
}

/* Writes the pending Events, oldest first, removing each once the API took it (a POST answered 409
 * AlreadyExists counts: an earlier try arrived). Returns 0 when none is left, or the first failure's
 * -errno with *ret_error (that Event and the later ones stay pending for the next try). */
static int flush_events(struct agent *a, char **ret_error) {
        while (a->pending_n) {
                char *err = NULL;
                int r = write_event(a, &a->pending[a->pending_head], &err);
                if (r < 0 && r != -EEXIST) {
                        *ret_error = err;
                        return r;
                }
                free(err);
                a->pending_head = (a->pending_head + 1) % EVENT_QUEUE_MAX;
                a->pending_n--;
        }
        return 0;
}

/* Queues a one-off Event (the circuit breaker's refusal); api_sync writes it. Returns nothing. */
static void note_event(struct agent *a, const char *reason, const char *message) {
        struct agent_event ev = { .type = "Warning", .count = 1 };
        snprintf(ev.reason, sizeof ev.reason, "%s", reason);
        agent_bound_utf8(message, ev.message, sizeof ev.message);
        int64_t now = wall_s();
        ev.first_time = ev.last_time = now;
        snprintf(ev.name, sizeof ev.name, "%.200s.gpunode-taint.%llx", a->node,
                 (unsigned long long)(int64_t)monotonic_ms());
        enqueue_event(a, &ev);
}

void agent_post_event(struct agent *a, bool warning, const char *reason, const char *message) {
        struct agent_event ev = { .type = warning ? "Warning" : "Normal", .count = 1 };
        snprintf(ev.reason, sizeof ev.reason, "%s", reason);
        agent_bound_utf8(message, ev.message, sizeof ev.message);
        ev.first_time = ev.last_time = wall_s();
        snprintf(ev.name, sizeof ev.name, "%.200s.gpunode-gpu.%llx", a->node,
                 (unsigned long long)(int64_t)monotonic_ms());
        pthread_mutex_lock(&a->lock);
        if (a->posted_n < EVENT_QUEUE_MAX) a->posted[a->posted_n++] = ev;
        pthread_mutex_unlock(&a->lock);
        /* the API sync that writes the Event, and a diagnosis at once (it sees the same GPU) */
        uint64_t one = 1;
        (void)!write(a->wake_fd, &one, sizeof one);
        if (a->o.diagnose_now) a->o.diagnose_now(a->o.diagnose_now_userdata);
}

/* Moves the posted Events into the write queue. Returns nothing. */
static void take_posted(struct agent *a) {
        pthread_mutex_lock(&a->lock);
        for (unsigned i = 0; i < a->posted_n; i++) enqueue_event(a, &a->posted[i]);
        a->posted_n = 0;
        pthread_mutex_unlock(&a->lock);
}

struct list_get_ctx {
        struct agent *a;
};

/* kube_list_all_with's page getter: a kube-call child that cuts each Node to NODE_LIST_FIELDS.
 * Returns as api_get_fields(). */
static int taint_list_get(void *userdata, const char *path, json_t **ret, char **ret_error) {
        struct list_get_ctx *g = userdata;
        return api_get_fields(g->a, path, NODE_LIST_FIELDS, "list nodes", ret, ret_error);
}

/* kube_list_all_with's callback: counts one GPU node. Returns 0. */
static int taint_count_item(const json_t *item, void *userdata) {
        agent_taint_counter_add(userdata, item);
        return 0;
}

/* Counts the GPU nodes (those with either label of AGENT_GPU_NODE_SELECTORS, the agent's own node
 * always) and the others that carry the taint: each selector's list paged (TAINT_LIST_PAGE Nodes a
 * page, continue tokens followed as kube_list_all() does), each page cut to names and taints in its
 * kube-call child. Returns 0 with the counts, or -errno with a malloc'd sentence in *ret_error. */
static int count_gpu_nodes(struct agent *a, unsigned *ret_gpu_nodes, unsigned *ret_tainted, char **ret_error) {
        static const char *const selectors[] = AGENT_GPU_NODE_SELECTORS;
        struct agent_taint_counter c;
        agent_taint_counter_init(&c, a->node);
        struct list_get_ctx g = { a };
        for (size_t i = 0; i < ELEMENTSOF(selectors); i++) {
                const struct kube_list_request req = { .path = "/api/v1/nodes",
                                                       .label_selector = selectors[i],
                                                       .limit = TAINT_LIST_PAGE };
                char *err = NULL;
                struct kube_list_stats st = { 0 };
                int r = kube_list_all_with(taint_list_get, &g, &req, taint_count_item, &c, &st, &err);
                if (r == -ESTALE) {
                        /* the continue token expired (410): start the list again, once, as client-go's pager
                         * does; a node counted twice is counted once (by name) */
                        free(err);
                        err = NULL;
                        r = kube_list_all_with(taint_list_get, &g, &req, taint_count_item, &c, &st, &err);
                }
                if (r < 0) {
                        unsigned n, t;
                        agent_taint_counter_done(&c, &n, &t);
                        *ret_error = xasprintf("the circuit breaker cannot count the GPU nodes (%s): %s", selectors[i],
                                               err ? err : strerror(-r));
                        free(err);
                        return r;
                }
                if (getenv("GPUNODE_AGENT_DEBUG"))
                        fprintf(stderr, "gpunode agent: GPU nodes by %s: %zu in %zu page(s)\n", selectors[i], st.items,
                                st.pages);
        }
        agent_taint_counter_done(&c, ret_gpu_nodes, ret_tainted);
        return 0;
}

/* Adds, changes or removes the taint as the conditions ask, with the circuit breaker. Returns 0 or
 * -errno with *ret_error. */
static int sync_taint(struct agent *a, char **ret_error) {
        const char *want = agent_taint_wanted(a->cur);
        for (int attempt = 0; attempt < 2; attempt++) {
                json_t *node = NULL;
                char *err = NULL;
                int r = api_get_node(a, &node, ret_error);
                if (r < 0) return r;
                const char *has = agent_taint_current(node);
                unsigned gpu_nodes = 1, tainted = 0;
                if (want && !has && (r = count_gpu_nodes(a, &gpu_nodes, &tainted, ret_error)) < 0) {
                        json_decref(node);
                        return r;
                }
                enum agent_taint_action act = agent_taint_decide(want, has, gpu_nodes, tainted, a->o.taint_max_share);
                if (act == AGENT_TAINT_NONE) {
                        json_decref(node);
                        return 0;
                }
                if (act == AGENT_TAINT_REFUSE) {
                        json_decref(node);
                        _cleanup_free_ char *msg = xasprintf(
                                "not tainting %s with %s=%s:NoSchedule: %u of %u GPU nodes already carry it, the most "
                                "--taint-max-share %.0f%% allows is %u",
                                a->node, AGENT_TAINT_KEY, want, tainted, gpu_nodes, a->o.taint_max_share * 100,
                                agent_taint_allowed(gpu_nodes, a->o.taint_max_share));
                        char key[64];
                        snprintf(key, sizeof key, "refused %u/%u", tainted, gpu_nodes);
                        if (!streq(a->last_error, key)) {
                                snprintf(a->last_error, sizeof a->last_error, "%s", key);
                                fprintf_escaped(stderr, "gpunode agent: %s\n", msg);
                                note_event(a, "TaintRefusedCircuitBreaker", msg);
                        }
                        return 0;
                }
                json_t *p = agent_taint_patch(node, act == AGENT_TAINT_REMOVE ? NULL : want);
                json_decref(node);
                _cleanup_free_ char *text = json_dumps(p, JSON_COMPACT);
                json_decref(p);
                _cleanup_free_ char *path = node_path(a, "");
                r = api_call(a, "PATCH", path, "merge", text, "patch nodes", NULL, &err);
                if (r == -EBUSY && attempt == 0) {
                        free(err);
                        continue;
                }
                if (r < 0) {
                        *ret_error = err;
                        return r;
                }
                /* as kubectl writes a taint: key=value:effect */
                if (act == AGENT_TAINT_REMOVE)
                        fprintf(stderr, "gpunode agent: taint removed: %s:NoSchedule\n", AGENT_TAINT_KEY);
                else
                        fprintf_escaped(stderr, "gpunode agent: taint set: %s=%s:NoSchedule\n", AGENT_TAINT_KEY, want);
                return 0;
        }
        return 0;
}

/* Writes what the latest conditions ask for: the conditions (when due), the Events, the taint. On
 * failure schedules a retry with exponential backoff. Returns nothing. */
static void api_sync(struct agent *a) {
        pthread_mutex_lock(&a->lock);
        if (a->have_latest) {
                memcpy(a->cur, a->latest, sizeof a->cur);
                a->have_cur = true;
        }
        pthread_mutex_unlock(&a->lock);
        if (!a->have_cur || !a->o.conditions) return;
        take_posted(a);
        int64_t now_mono = (int64_t)monotonic_ms() / 1000;
        if (a->next_api_try && now_mono < a->next_api_try) return;
        char *err = NULL;
        int r = api_ready(a, &err);
        if (r == 0) {
                int64_t now = wall_s();
                struct agent_cond_state next[AGENT_N_LAYERS];
                bool transition[AGENT_N_LAYERS];
                enum agent_patch d = agent_conditions_decide(a->cond, a->cur, now, a->o.heartbeat_s, next, transition);
                if (d != AGENT_PATCH_NONE) r = patch_conditions(a, next, &err);
                if (r == 0) {
                        memcpy(a->cond, next, sizeof next);
                        /* decided Events are queued first, so that a failed write is retried, not lost */
                        for (unsigned l = 0; l < AGENT_N_LAYERS; l++) {
                                struct agent_event ev;
                                if (agent_event_decide(&a->events[l], l + 1, &a->cur[l], now, a->o.event_hold_down_s,
                                                       a->node, &ev))
                                        enqueue_event(a, &ev);
                                else if (a->events[l].held_until > 0) {
                                        char until[32];
                                        agent_time_format(a->events[l].held_until, until, sizeof until);
                                        fprintf(stderr,
                                                "gpunode agent: %s is %s: its Event is held back by the hold-down "
                                                "until %s\n",
                                                agent_condition_type(l + 1), agent_status_name(a->cur[l].status),
                                                until);
                                }
                        }
                        r = flush_events(a, &err);
                }
                if (r == 0 && a->o.taint) r = sync_taint(a, &err);
                if (r == 0) r = flush_events(a, &err); /* the taint's refusal, if any */
        }
        if (r == 0) {
                if (a->backoff_s) fprintf(stderr, "gpunode agent: the API server answers again\n");
                a->backoff_s = 0;
                a->next_api_try = 0;
                if (!strncmp(a->last_error, "refused ", 8)) {
                } else
                        a->last_error[0] = 0;
                free(err);
                return;
        }
        a->backoff_s = a->backoff_s ? a->backoff_s * 2 : 1;
        if (a->backoff_s > a->o.backoff_max_s) a->backoff_s = a->o.backoff_max_s;
        a->next_api_try = now_mono + a->backoff_s;
        if (err) log_error(a, err);
        free(err);
        /* every request runs in a fresh kube-call child: the configuration is read again on each try
         * (credentials may have rotated) */
}

/* One run of the daemon's diagnosis: a good report becomes the conditions to write, /report and the
 * page; a failed run is logged and the last report stays. Returns nothing. */
static void on_round(void *userdata, const struct diagnosis_round *round) {
        struct agent *a = userdata;
        uint64_t one = 1;
        struct agent_condition cur[AGENT_N_LAYERS];
        bool good = round->result == DIAGNOSIS_OK;
        if (!good) {
                fprintf_escaped(stderr, "gpunode agent: the diagnosis failed: %s\n", round->error);
        } else if (agent_conditions_from_report(round->report, cur) < 0) {
                fprintf(stderr,
                        "gpunode agent: the diagnosis's output is not a gpunode.report/v1 object (no checks)\n");
                good = false;
        }
        if (!good) {
                /* the heartbeat and the retries go on with the last conditions */
                (void)!write(a->wake_fd, &one, sizeof one);
                return;
        }
        char *copy = xmalloc(round->json_len + 1);
        memcpy(copy, round->json, round->json_len);
        copy[round->json_len] = 0;
        pthread_mutex_lock(&a->lock);
        memcpy(a->latest, cur, sizeof cur);
        a->have_latest = true;
        pthread_mutex_unlock(&a->lock);
        publish(a, copy, round->json_len, round->report);
        (void)!write(a->wake_fd, &one, sizeof one);
        if (getenv("GPUNODE_AGENT_DEBUG"))
                fprintf(stderr, "gpunode agent: diagnosis in %.0f ms\n", round->duration_seconds * 1000);
}

void agent_diagnosis_sink(struct agent *a, struct diagnosis_sink *ret) {
        *ret = (struct diagnosis_sink){ .on_round = on_round, .userdata = a };
}

/* The API thread: writes what each diagnosis and posted Event ask for, and retries with backoff
 * between. Returns NULL. */
static void *api_main(void *arg) {
        struct agent *a = arg;
        for (;;) {
                int64_t wait = 60000;
                if (a->next_api_try) {
                        int64_t retry = a->next_api_try * 1000 - (int64_t)monotonic_ms();
                        wait = retry < 0 ? 0 : retry < wait ? retry : wait;
                }
                struct pollfd p[2] = { { .fd = a->stop_fd, .events = POLLIN }, { .fd = a->wake_fd, .events = POLLIN } };
                int k = poll(p, 2, (int)wait);
                if (k > 0 && p[0].revents) break;
                bool woken = k > 0 && p[1].revents && fd_fired(a->wake_fd);
                if (woken || a->next_api_try) api_sync(a);
        }
        return NULL;
}

int agent_start(const struct agent_options *o, struct agent **ret) {
        struct agent *a = xcalloc(1, sizeof *a);
        a->o = *o;
        a->kubeconfig = o->kubeconfig ? xstrdup(o->kubeconfig) : NULL;
        a->node = xstrdup(o->node);
        pthread_mutex_init(&a->lock, NULL);
        /* a semaphore-less eventfd that stays readable once written: every wait sees the stop */
        a->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        a->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (a->stop_fd < 0 || a->wake_fd < 0) {
                int r = -errno;
                agent_stop(a);
                return r;
        }
        publish(a, NULL, 0, NULL);
        int r = -pthread_create(&a->api_thread, NULL, api_main, a);
        if (r < 0) {
                agent_stop(a);
                return r;
        }
        a->api_running = true;
        *ret = a;
        return 0;
}

/* Fills r with a malloc'd copy of body[0..n) (freed once sent). Returns nothing. */
static void reply_copy(struct http_response *r, unsigned status, const char *type, const char *body, size_t n) {
        char *copy = xmalloc(n ? n : 1);
        memcpy(copy, body, n);
        r->status = status;
        r->content_type = type;
        r->body[0] = (struct iovec){ copy, n };
        r->n_body = 1;
        r->release = free;
        r->release_arg = copy;
}

/* Returns true when the request path is p. */
static bool path_is(const struct http_request *req, const char *p) {
        return req->path_len == strlen(p) && memcmp(req->path, p, req->path_len) == 0;
}

bool agent_http_route(void *userdata, const struct http_request *req, struct http_response *r) {
        struct agent *a = userdata;
        bool report = path_is(req, "/report"), ready = path_is(req, "/ready");
        if (!report && !ready && !path_is(req, "/")) return false;
        pthread_mutex_lock(&a->lock);
        if ((report || ready) && !a->report) {
                static const char busy[] = "no diagnosis yet\n";
                reply_copy(r, 503, "text/plain; charset=utf-8", busy, sizeof busy - 1);
        } else if (ready) {
                /* Ready: it serves and a diagnosis finished, whatever that diagnosis found. */
                char body[128];
                int n = snprintf(body, sizeof body, "ready: the last diagnosis finished %" PRId64 " s ago\n",
                                 wall_s() - a->report_at);
                reply_copy(r, 200, "text/plain; charset=utf-8", body, (size_t)n);
        } else if (report) {
                reply_copy(r, 200, "application/json", a->report, a->report_len);
        } else {
                reply_copy(r, 200, "text/html; charset=utf-8", a->page, a->page_len);
        }
        pthread_mutex_unlock(&a->lock);
        return true;
}

struct agent *agent_stop(struct agent *a) {
        if (!a) return NULL;
        if (a->stop_fd >= 0) {
                uint64_t one = 1;
                (void)!write(a->stop_fd, &one, sizeof one);
        }
        if (a->api_running) pthread_join(a->api_thread, NULL);
        if (a->stop_fd >= 0) close(a->stop_fd);
        if (a->wake_fd >= 0) close(a->wake_fd);
        pthread_mutex_destroy(&a->lock);
        free(a->report);
        free(a->page);
        free(a->node_uid);
        free(a->kubeconfig);
        free(a->node);
        free(a);
        return NULL;
}
