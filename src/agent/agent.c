/* agent.c: `gpunode agent`'s loop: diagnoses in a child, writes conditions, Events and the taint, supervises labels. */
#include "agent/agent.h"
#include "basic/child.h"
#include "agent/api_child.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>

#include "agent/events.h"
#include "output/report_read.h"
#include "agent/status_page.h"
#include "agent/taint.h"
#include "basic/http_server.h"


#define REPORT_MAX ((size_t)16 << 20) /* a diagnosis's JSON larger than this is refused */
#define XID_MIN_GAP_MS 1000           /* Xid storms start at most one diagnosis a second */
#define EVENT_QUEUE_MAX 16            /* Events not yet written, kept for retry (the oldest dropped) */
#define API_MAX_BODY ((size_t)8 << 20) /* an API answer larger than this is refused (-EFBIG) */

struct agent {
        struct agent_options o;
        char *dcgm_url, *node_exporter_url, *operator_namespace;
        char *self, *root, *nvml_library, *kubeconfig, *node, *labels_output; /* owned copies */
        int xid_fd;
        int stop_fd; /* eventfd: written on stop */
        pthread_t diag_thread, labels_thread;
        bool diag_running, labels_running;
        /* Under lock: what the HTTP routes serve. */
        pthread_mutex_t lock;
        char *report;  /* the latest report, NULL before the first */
        size_t report_len;
        char *page;    /* the status page */
        size_t page_len;
        /* Diagnosis thread only: the API side (each request by a `gpunode kube-call` child). */
        char *node_uid;
        bool seeded;                                /* conditions read back from the Node once */
        struct agent_cond_state cond[AGENT_N_LAYERS]; /* as last written */
        struct agent_event_layer events[AGENT_N_LAYERS];
        struct agent_condition cur[AGENT_N_LAYERS];
        bool have_cur;
        bool dirty;            /* the last write failed: write again once the API answers */
        unsigned backoff_s;    /* 0: the API answered last time */
        int64_t next_api_try;  /* CLOCK_MONOTONIC seconds; 0: now */
        char last_error[512];  /* logged once until it changes */
        /* Events decided but not yet written (the API failed): a ring, written oldest first. */
        struct agent_event pending[EVENT_QUEUE_MAX];
        unsigned pending_head, pending_n;
        /* Under lock: Events posted by other threads (the device plugin's GPU health), not yet queued. */
        struct agent_event posted[EVENT_QUEUE_MAX];
        unsigned posted_n;
};

/* Returns the wall clock in Unix seconds. */
static int64_t wall_s(void) { return (int64_t)time(NULL); }

/* Logs one line to standard error unless it repeats the previous error line (key). Returns nothing. */
static void log_error(struct agent *a, const char *line) {
        if (streq(a->last_error, line)) return;
        snprintf(a->last_error, sizeof a->last_error, "%s", line);
        fprintf_escaped(stderr, "gpunode agent: %s\n", line);
}

/* Returns true once the agent is stopping (its stop eventfd written; not drained, so every thread sees it). */
static bool stopping(struct agent *a) {
        struct pollfd p = { .fd = a->stop_fd, .events = POLLIN };
        return poll(&p, 1, 0) > 0;
}

/* Returns true when fd is readable now (draining an eventfd). */
static bool fd_fired(int fd) {
        uint64_t v;
        return fd >= 0 && read(fd, &v, sizeof v) == (ssize_t)sizeof v;
}

/*
 * Runs `gpunode check --output json` with the agent's root, NVML library, kubeconfig, node and API
 * timeout, bounded by the check timeout and REPORT_MAX, as the exporter bounds its check child.
 * Returns 0 with the malloc'd output in *ret (*ret_len bytes); -ETIMEDOUT (killed), -EFBIG (killed),
 * -ECANCELED (stopping), -EIO (exit status other than 0, 1, 2), or -errno when it cannot start.
 */
static int run_check(struct agent *a, char **ret, size_t *ret_len) {
        char timeout[32];
        snprintf(timeout, sizeof timeout, "%ums", a->o.api_timeout_ms);
        const char *argv[26];
        unsigned n = 0;
        argv[n++] = "gpunode";
        argv[n++] = "check";
        argv[n++] = "--output";
        argv[n++] = "json";
        argv[n++] = "--root";
        argv[n++] = a->root;
        argv[n++] = "--node";
        argv[n++] = a->node;
        argv[n++] = "--timeout";
        argv[n++] = timeout;
        if (a->nvml_library) {
                argv[n++] = "--nvml-library";
                argv[n++] = a->nvml_library;
        }
        if (a->kubeconfig) {
                argv[n++] = "--kubeconfig";
                argv[n++] = a->kubeconfig;
        }
        if (a->dcgm_url) {
                argv[n++] = "--dcgm-url";
                argv[n++] = a->dcgm_url;
        }
        if (a->node_exporter_url) {
                argv[n++] = "--node-exporter-url";
                argv[n++] = a->node_exporter_url;
        }
        if (a->operator_namespace) {
                argv[n++] = "--operator-namespace";
                argv[n++] = a->operator_namespace;
        }
        argv[n] = NULL;
        const struct child_run_options o = { .max_output = REPORT_MAX, .timeout_ms = a->o.check_timeout_ms,
                                             .cancel_fd = a->stop_fd, .quiet = true };
        int status;
        int r = child_run(a->self, argv, &o, ret, ret_len, &status, NULL);
        if (r == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) <= 2)) {
                free(*ret);
                *ret = NULL;
                r = -EIO;
        }
        return r;
}

/* Publishes a report's text (report may be NULL) and the status page of parsed (NULL: none yet) for the HTTP
 * routes. Takes report. */
static void publish(struct agent *a, char *report, size_t len, const struct report *parsed) {
        char *page = status_page_html(parsed, a->node);
        pthread_mutex_lock(&a->lock);
        if (report) {
                free(a->report);
                a->report = report;
                a->report_len = len;
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
                                 "grant it in the ClusterRole (%s)", what, what, msg ? msg : "");
        if (r == -EBADMSG) return xasprintf("%s: the API server answered with something that is not JSON (%s)", what, msg ? msg : "");
        if (r == -EFBIG) return xasprintf("%s: the API server's answer is too large (%s)", what, msg ? msg : "");
        return xasprintf("%s failed: %s", what, msg ? msg : strerror(-r));
}

/* Percent-escapes s for a path segment or query value (as kube_client.c does). Returns it malloc'd. */
static char *api_escape(const char *s) {
        static const char hex[] = "0123456789ABCDEF";
        struct buf b = { 0 };
        for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
                if ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '-' ||
                    *p == '.' || *p == '_' || *p == '~') {
                        buf_append(&b, (const char *)p, 1);
                } else {
                        char e[3] = { '%', hex[*p >> 4], hex[*p & 15] };
                        buf_append(&b, e, 3);
                }
        }
        return b.data ? b.data : xstrdup("");
}

/* Makes one API request (method, path, patch_type as api_child_call() takes them) in a kube-call
 * child with the agent's kubeconfig, API timeout and API_MAX_BODY. Returns 0 with *ret (may be NULL
 * when not wanted), or -errno with a malloc'd line in *ret_error: the configuration's or client's
 * sentence when the call failed before the request, else api_failure() of what. */
static int api_call(struct agent *a, const char *method, const char *path, const char *patch_type, const char *body,
                    const char *what, json_t **ret, char **ret_error) {
        char *err = NULL;
        bool setup = false;
        int r = api_child_call_setup(method, path, patch_type, body, a->kubeconfig, a->o.api_timeout_ms, API_MAX_BODY, ret,
                                     &err, &setup);
        if (r < 0) {
                *ret_error = setup ? err : api_failure(r, what, err);
                if (!setup) free(err);
        }
        return r;
}

/* GETs the agent's Node (what: the failure's words). Returns as api_call(). */
static int api_get_node(struct agent *a, json_t **ret, char **ret_error) {
        _cleanup_free_ char *n = api_escape(a->node);
        _cleanup_free_ char *path = xasprintf("/api/v1/nodes/%s", n);
        return api_call(a, "GET", path, NULL, NULL, "get nodes", ret, ret_error);
}

/* Makes sure the node's uid (and, once, its conditions) are known. Returns 0, or -errno with a
 * malloc'd sentence in *ret_error. */
static int api_ready(struct agent *a, char **ret_error) {
        if (!a->node_uid || !a->seeded) {
                json_t *node = NULL;
                int r = api_get_node(a, &node, ret_error);
                if (r < 0) return r;
                const char *uid = json_string_value(json_object_get(json_object_get(node, "metadata"), "uid"));
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
        _cleanup_free_ char *path = xasprintf("/api/v1/nodes/%s/status", a->node);
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
                _cleanup_free_ char *path = xasprintf("/api/v1/namespaces/default/events/%s", ev->name);
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
        } else fprintf_escaped(stderr, "gpunode agent: event %s %s: %s\n", ev->type, ev->reason, ev->message);
        free(err);
        return r;
}

/* Queues ev to be written (by flush_events), dropping the oldest pending Event with a log line when
 * EVENT_QUEUE_MAX are already waiting. Returns nothing; never fails. */
static void enqueue_event(struct agent *a, const struct agent_event *ev) {
        if (a->pending_n == EVENT_QUEUE_MAX) {
                const struct agent_event *old = &a->pending[a->pending_head];
                fprintf_escaped(stderr, "gpunode agent: %u Events wait for the API server: dropping the oldest (%s %s: %s)\n",
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
        snprintf(ev.name, sizeof ev.name, "%.200s.gpunode-taint.%llx", a->node, (unsigned long long)(int64_t)monotonic_ms());
        enqueue_event(a, &ev);
}

void agent_post_event(struct agent *a, bool warning, const char *reason, const char *message) {
        struct agent_event ev = { .type = warning ? "Warning" : "Normal", .count = 1 };
        snprintf(ev.reason, sizeof ev.reason, "%s", reason);
        agent_bound_utf8(message, ev.message, sizeof ev.message);
        ev.first_time = ev.last_time = wall_s();
        snprintf(ev.name, sizeof ev.name, "%.200s.gpunode-gpu.%llx", a->node, (unsigned long long)(int64_t)monotonic_ms());
        pthread_mutex_lock(&a->lock);
        if (a->posted_n < EVENT_QUEUE_MAX) a->posted[a->posted_n++] = ev;
        pthread_mutex_unlock(&a->lock);
        /* a diagnosis at once (it sees the same GPU) and the API sync that writes the Event */
        if (a->xid_fd >= 0) {
                uint64_t one = 1;
                (void)!write(a->xid_fd, &one, sizeof one);
        }
}

/* Moves the posted Events into the write queue. Returns nothing. */
static void take_posted(struct agent *a) {
        pthread_mutex_lock(&a->lock);
        for (unsigned i = 0; i < a->posted_n; i++) enqueue_event(a, &a->posted[i]);
        a->posted_n = 0;
        pthread_mutex_unlock(&a->lock);
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
                if (want && !has) {
                        static const char *const selectors[] = AGENT_GPU_NODE_SELECTORS;
                        json_t *lists[2] = { NULL, NULL };
                        for (unsigned i = 0; i < 2; i++) {
                                _cleanup_free_ char *ls = selectors[i] && *selectors[i] ? api_escape(selectors[i]) : NULL;
                                _cleanup_free_ char *lpath = ls ? xasprintf("/api/v1/nodes?labelSelector=%s", ls)
                                                                : xstrdup("/api/v1/nodes");
                                r = api_call(a, "GET", lpath, NULL, NULL, "list nodes", &lists[i], ret_error);
                                if (r < 0) {
                                        json_decref(lists[0]);
                                        json_decref(node);
                                        return r;
                                }
                        }
                        agent_taint_count((const json_t **)lists, 2, a->node, &gpu_nodes, &tainted);
                        json_decref(lists[0]);
                        json_decref(lists[1]);
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
                _cleanup_free_ char *path = xasprintf("/api/v1/nodes/%s", a->node);
                r = api_call(a, "PATCH", path, "merge", text, "patch nodes", NULL, &err);
                if (r == -EBUSY && attempt == 0) {
                        free(err);
                        continue;
                }
                if (r < 0) {
                        *ret_error = err;
                        return r;
                }
                fprintf(stderr, "gpunode agent: taint %s%s%s\n", act == AGENT_TAINT_REMOVE ? "removed: " : "set: ",
                        AGENT_TAINT_KEY, act == AGENT_TAINT_REMOVE ? "" : want);
                return 0;
        }
        return 0;
}

/* Writes what the latest conditions ask for: the conditions (when due), the Events, the taint. On
 * failure schedules a retry with exponential backoff. Returns nothing. */
static void api_sync(struct agent *a) {
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
                if (!strncmp(a->last_error, "refused ", 8)) {} else a->last_error[0] = 0;
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

/* Runs one diagnosis and publishes it. Returns nothing; failures are logged and the last report stays. */
static void diagnose_round(struct agent *a) {
        char *text = NULL;
        size_t len = 0;
        int64_t t0 = (int64_t)monotonic_ms();
        int r = run_check(a, &text, &len);
        if (r == -ECANCELED) return;
        if (r < 0) {
                fprintf(stderr, "gpunode agent: the diagnosis failed: %s\n",
                        r == -ETIMEDOUT ? "it ran past --check-timeout and was killed"
                        : r == -EFBIG   ? "its report is larger than 16 MiB"
                        : r == -EIO     ? "it exited with an internal error"
                                        : strerror(-r));
                return;
        }
        /* parsed once: the conditions and the status page read the same struct */
        struct report report;
        _cleanup_free_ char *err = NULL;
        struct agent_condition cur[AGENT_N_LAYERS];
        if (report_from_text(text, len, &report, &err) < 0 || agent_conditions_from_report(&report, cur) < 0) {
                fprintf_escaped(stderr,
                                "gpunode agent: the diagnosis's output is not a gpunode.report/v1 object (%s)\n",
                                err ? err : "no checks");
                report_read_free(&report);
                free(text);
                return;
        }
        memcpy(a->cur, cur, sizeof cur);
        a->have_cur = true;
        publish(a, text, len, &report);
        report_read_free(&report);
        if (getenv("GPUNODE_AGENT_DEBUG"))
                fprintf(stderr, "gpunode agent: diagnosis in %lld ms\n", (long long)((int64_t)monotonic_ms() - t0));
}

/* The diagnosis thread: a round every check interval, or at once on an Xid; API retries between.
 * Returns NULL. */
static void *diag_main(void *arg) {
        struct agent *a = arg;
        int64_t next_round = 0, last_round = -XID_MIN_GAP_MS;
        for (;;) {
                int64_t now = (int64_t)monotonic_ms();
                if (now >= next_round) {
                        last_round = now;
                        diagnose_round(a);
                        if (stopping(a)) break;
                        next_round = (int64_t)monotonic_ms() + a->o.check_interval_ms;
                        api_sync(a);
                } else if (a->have_cur && a->next_api_try) {
                        api_sync(a);
                }
                now = (int64_t)monotonic_ms();
                int64_t wait = next_round - now;
                if (a->next_api_try) {
                        int64_t retry = a->next_api_try * 1000 - now;
                        if (retry < wait) wait = retry < 0 ? 0 : retry;
                }
                struct pollfd p[2] = { { .fd = a->stop_fd, .events = POLLIN }, { .fd = a->xid_fd, .events = POLLIN } };
                int k = poll(p, a->xid_fd >= 0 ? 2 : 1, (int)(wait > 60000 ? 60000 : wait < 0 ? 0 : wait));
                if (k > 0 && p[0].revents) break;
                if (k > 0 && a->xid_fd >= 0 && p[1].revents) {
                        fd_fired(a->xid_fd);
                        int64_t since = (int64_t)monotonic_ms() - last_round;
                        next_round = since >= XID_MIN_GAP_MS ? 0 : last_round + XID_MIN_GAP_MS;
                        fprintf(stderr, "gpunode agent: Xid event: diagnosing now\n");
                }
        }
        return NULL;
}

/* The labels supervisor: keeps a `gpunode labels` child running, restarting it with backoff (1 s
 * doubling to 60 s; reset once it ran a minute). Returns NULL. */
static void *labels_main(void *arg) {
        struct agent *a = arg;
        unsigned backoff_ms = 1000;
        for (;;) {
                const char *argv[12];
                unsigned n = 0;
                argv[n++] = "gpunode";
                argv[n++] = "labels";
                argv[n++] = "--root";
                argv[n++] = a->root;
                if (a->nvml_library) {
                        argv[n++] = "--nvml-library";
                        argv[n++] = a->nvml_library;
                }
                if (a->labels_output) {
                        argv[n++] = "--output";
                        argv[n++] = a->labels_output;
                }
                argv[n] = NULL;
                int64_t started = (int64_t)monotonic_ms();
                pid_t pid = child_spawn(a->self, argv, -1, -1, false);
                bool stop = false;
                if (pid > 0) {
                        int status;
                        for (;;) {
                                struct pollfd p = { .fd = a->stop_fd, .events = POLLIN };
                                if (poll(&p, 1, 200) > 0) {
                                        stop = true;
                                        kill(-pid, SIGTERM);
                                        kill(pid, SIGTERM);
                                        for (int i = 0; i < 100 && waitpid(pid, &status, WNOHANG) == 0; i++) {
                                                struct timespec t = { 0, 20 * 1000000L };
                                                nanosleep(&t, NULL);
                                        }
                                        child_kill(pid);
                                        break;
                                }
                                if (waitpid(pid, &status, WNOHANG) == pid) break;
                        }
                        if (!stop) fprintf(stderr, "gpunode agent: the labels child exited (status %d); restarting in %u ms\n",
                                           WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), backoff_ms);
                } else {
                        fprintf(stderr, "gpunode agent: cannot start the labels child: %s\n", strerror((int)-pid));
                }
                if (stop) break;
                if ((int64_t)monotonic_ms() - started > 60000) backoff_ms = 1000;
                struct pollfd p = { .fd = a->stop_fd, .events = POLLIN };
                if (poll(&p, 1, (int)backoff_ms) > 0) break;
                backoff_ms = backoff_ms * 2 > 60000 ? 60000 : backoff_ms * 2;
        }
        return NULL;
}

int agent_start(const struct agent_options *o, int xid_fd, struct agent **ret) {
        struct agent *a = xcalloc(1, sizeof *a);
        a->o = *o;
        a->self = xstrdup(o->self);
        a->root = xstrdup(o->root ? o->root : "/");
        a->nvml_library = o->nvml_library ? xstrdup(o->nvml_library) : NULL;
        a->kubeconfig = o->kubeconfig ? xstrdup(o->kubeconfig) : NULL;
        a->node = xstrdup(o->node);
        a->labels_output = o->labels_output ? xstrdup(o->labels_output) : NULL;
        a->dcgm_url = o->dcgm_url ? xstrdup(o->dcgm_url) : NULL;
        a->node_exporter_url = o->node_exporter_url ? xstrdup(o->node_exporter_url) : NULL;
        a->operator_namespace = o->operator_namespace ? xstrdup(o->operator_namespace) : NULL;
        a->xid_fd = xid_fd;
        pthread_mutex_init(&a->lock, NULL);
        /* a semaphore-less eventfd that stays readable once written: every thread sees the stop */
        a->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (a->stop_fd < 0) {
                int r = -errno;
                agent_stop(a);
                return r;
        }
        publish(a, NULL, 0, NULL);
        int r = -pthread_create(&a->diag_thread, NULL, diag_main, a);
        if (r < 0) {
                agent_stop(a);
                return r;
        }
        a->diag_running = true;
        if (o->labels) {
                r = -pthread_create(&a->labels_thread, NULL, labels_main, a);
                if (r < 0) {
                        agent_stop(a);
                        return r;
                }
                a->labels_running = true;
        }
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
        bool report = path_is(req, "/report");
        if (!report && !path_is(req, "/")) return false;
        pthread_mutex_lock(&a->lock);
        if (report && !a->report) {
                static const char busy[] = "no diagnosis yet\n";
                reply_copy(r, 503, "text/plain; charset=utf-8", busy, sizeof busy - 1);
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
        if (a->diag_running) pthread_join(a->diag_thread, NULL);
        if (a->labels_running) pthread_join(a->labels_thread, NULL);
        if (a->stop_fd >= 0) close(a->stop_fd);
        pthread_mutex_destroy(&a->lock);
        free(a->report);
        free(a->page);
        free(a->node_uid);
        free(a->self);
        free(a->root);
        free(a->nvml_library);
        free(a->kubeconfig);
        free(a->node);
        free(a->labels_output);
        free(a->dcgm_url);
        free(a->node_exporter_url);
        free(a->operator_namespace);
        free(a);
        return NULL;
}
