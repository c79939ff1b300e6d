/* diagnosis.c: the one diagnosis loop of a long-running gpunode: a bounded `gpunode check --output json`
 * child, its report parsed once and handed to every sink. */
#include "daemon/diagnosis.h"
#include "basic/child.h"
#include "basic/util.h"
#include "output/report_read.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/wait.h>

/*
 * The diagnosis runs as a child (child_spawn of this program), so that what the probes load (libfyaml
 * for CDI specs, libcurl and its chain on a Kubernetes node), any probe that hangs and anything a probe
 * leaks stay out of the long-running process. One child at a time; its stdout is read up to
 * REPORT_MAX bytes within the timeout (then it is killed, with its process group); it is always
 * reaped, or, when it cannot be, no second one starts beside it.
 */
#define REPORT_MAX         ((size_t)16 << 20)
#define TRIGGER_MIN_GAP_MS 1000 /* Xid storms start at most one run a second */
#define REAP_MS            2000

struct diagnosis {
        struct diagnosis_options o;
        char *self, *root, *nvml_library, *kmsg, *kubeconfig, *node, *dcgm_url, *node_exporter_url, *operator_namespace;
        int stop_fd;    /* eventfd, written once on stop and never drained: every wait sees it */
        int trigger_fd; /* eventfd: a run now */
        pid_t unreaped; /* a killed child that could not be reaped yet */
        pthread_t thread;
        bool running;
};

/* Returns a malloc'd copy of s, or NULL for NULL. */
static char *dup_or_null(const char *s) {
        return s ? xstrdup(s) : NULL;
}

/* Fills argv (room for 32) with the child's command line. Returns nothing. */
static void child_argv(const struct diagnosis *d, const char *timeout, const char *expect_gpus, const char **argv) {
        unsigned n = 0;
        argv[n++] = "gpunode";
        argv[n++] = "check";
        argv[n++] = "--output";
        argv[n++] = "json";
        argv[n++] = "--root";
        argv[n++] = d->root;
#define OPTIONAL(flag, value)                                                                                          \
        if (value) {                                                                                                   \
                argv[n++] = flag;                                                                                      \
                argv[n++] = value;                                                                                     \
        }
        OPTIONAL("--node", d->node);
        OPTIONAL("--timeout", timeout);
        OPTIONAL("--nvml-library", d->nvml_library);
        OPTIONAL("--kmsg", d->kmsg);
        OPTIONAL("--kubeconfig", d->kubeconfig);
        OPTIONAL("--dcgm-url", d->dcgm_url);
        OPTIONAL("--node-exporter-url", d->node_exporter_url);
        OPTIONAL("--operator-namespace", d->operator_namespace);
        OPTIONAL("--expect-gpus", expect_gpus);
#undef OPTIONAL
        argv[n] = NULL;
}

/*
 * Runs one child and reads its report. Returns 0 with the malloc'd output in *ret_text (*ret_len
 * bytes); -ETIMEDOUT (killed), -EFBIG (more than REPORT_MAX, killed), -ECANCELED (stopping), -EIO (an
 * exit status other than 0, 1, 2: healthy, warnings, failures), -EBUSY (an earlier child is still
 * unreaped), or -errno when it cannot start.
 */
static int run_child(struct diagnosis *d, char **ret_text, size_t *ret_len) {
        if (d->unreaped > 0) {
                kill(-d->unreaped, SIGKILL);
                kill(d->unreaped, SIGKILL);
                pid_t w = waitpid(d->unreaped, NULL, WNOHANG);
                if (w == 0) return -EBUSY;
                d->unreaped = 0;
        }
        char timeout[32], expect[16];
        snprintf(timeout, sizeof timeout, "%ums", d->o.api_timeout_ms);
        snprintf(expect, sizeof expect, "%u", d->o.expect_gpus);
        const char *argv[32];
        child_argv(d, d->o.api_timeout_ms ? timeout : NULL, d->o.expect_gpus ? expect : NULL, argv);
        const struct child_run_options co = {
                .max_output = REPORT_MAX, .timeout_ms = d->o.timeout_ms, .cancel_fd = d->stop_fd, .quiet = true
        };
        int status;
        int r = child_run(d->self, argv, &co, ret_text, ret_len, &status, &d->unreaped);
        if (r == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) <= 2)) {
                free(*ret_text);
                *ret_text = NULL;
                r = -EIO;
        }
        return r;
}

/* Returns the sentence for a run that failed with r. */
static const char *failure_sentence(int r) {
        switch (r) {
        case -ETIMEDOUT: return "it ran past the check timeout and was killed";
        case -EFBIG: return "its report is larger than 16 MiB";
        case -EIO: return "it exited with a usage or internal error, or by a signal";
        case -EBUSY: return "an earlier diagnosis that was killed has not ended yet";
        default: return strerror(-r);
        }
}

/* Runs the diagnosis once and hands the round to every sink. Returns false when cut short by the stop. */
static bool run_round(struct diagnosis *d) {
        uint64_t t0 = monotonic_ms();
        char *text = NULL;
        size_t len = 0;
        int r = run_child(d, &text, &len);
        if (r == -ECANCELED) return false;
        struct diagnosis_round round = { .duration_seconds = (double)(monotonic_ms() - t0) / 1000.0 };
        json_t *doc = NULL;
        struct report report = { 0 };
        _cleanup_free_ char *error = NULL;
        if (r == 0) {
                json_error_t jerr;
                doc = json_loadb(text, len, 0, &jerr);
                if (!doc)
                        error = xasprintf("its output is not JSON: %s (line %d)", jerr.text, jerr.line);
                else if (report_from_json(doc, &report, &error) < 0)
                        r = -EBADMSG;
                if (!doc) r = -EBADMSG;
        }
        round.result = r == 0                         ? DIAGNOSIS_OK
                       : r == -ETIMEDOUT              ? DIAGNOSIS_TIMEOUT
                       : r == -EBUSY                  ? DIAGNOSIS_BUSY
                       : r == -EBADMSG || r == -EFBIG ? DIAGNOSIS_INVALID
                                                      : DIAGNOSIS_FAILED;
        if (r == 0) {
                round.doc = doc;
                round.report = &report;
                round.json = text;
                round.json_len = len;
        } else {
                round.error = error ? error : failure_sentence(r);
        }
        for (unsigned i = 0; i < d->o.n_sinks; i++)
                if (d->o.sinks[i].on_round) d->o.sinks[i].on_round(d->o.sinks[i].userdata, &round);
        if (r == 0) report_read_free(&report);
        json_decref(doc);
        free(text);
        return true;
}

/* Returns true when fd is readable now, draining it when it is an eventfd counter. */
static bool fired(int fd) {
        uint64_t v;
        return read(fd, &v, sizeof v) == (ssize_t)sizeof v;
}

/* The loop's thread: a run at once, then every interval or on a trigger (at most one a second).
 * Returns NULL. */
static void *diagnosis_main(void *arg) {
        struct diagnosis *d = arg;
        uint64_t next = 0, last = 0;
        bool ran = false;
        for (;;) {
                uint64_t now = monotonic_ms();
                if (now >= next) {
                        last = now;
                        ran = true;
                        if (!run_round(d)) break;
                        next = monotonic_ms() + d->o.interval_ms;
                }
                now = monotonic_ms();
                uint64_t wait = next > now ? next - now : 0;
                struct pollfd p[2] = { { .fd = d->stop_fd, .events = POLLIN },
                                       { .fd = d->trigger_fd, .events = POLLIN } };
                int k = poll(p, 2, (int)(wait > 60000 ? 60000 : wait));
                if (k > 0 && p[0].revents) break;
                if (k > 0 && p[1].revents && fired(d->trigger_fd)) {
                        uint64_t since = monotonic_ms() - last;
                        uint64_t soonest = ran && since < TRIGGER_MIN_GAP_MS ? last + TRIGGER_MIN_GAP_MS : 0;
                        if (soonest < next) next = soonest;
                }
        }
        if (d->unreaped > 0) {
                kill(-d->unreaped, SIGKILL);
                kill(d->unreaped, SIGKILL);
                for (unsigned waited = 0; waited < REAP_MS && waitpid(d->unreaped, NULL, WNOHANG) == 0; waited += 10) {
                        struct timespec t = { 0, 10 * 1000000L };
                        nanosleep(&t, NULL);
                }
        }
        return NULL;
}

int diagnosis_start(const struct diagnosis_options *o, struct diagnosis **ret) {
        struct diagnosis *d = xcalloc(1, sizeof *d);
        d->o = *o;
        if (!d->o.timeout_ms) d->o.timeout_ms = 60000;
        if (!d->o.interval_ms) d->o.interval_ms = 60000;
        d->self = xstrdup(o->self);
        d->root = xstrdup(o->root ? o->root : "/");
        d->nvml_library = dup_or_null(o->nvml_library);
        d->kmsg = dup_or_null(o->kmsg);
        d->kubeconfig = dup_or_null(o->kubeconfig);
        d->node = dup_or_null(o->node);
        d->dcgm_url = dup_or_null(o->dcgm_url);
        d->node_exporter_url = dup_or_null(o->node_exporter_url);
        d->operator_namespace = dup_or_null(o->operator_namespace);
        d->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        d->trigger_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        int r = d->stop_fd < 0 || d->trigger_fd < 0 ? -errno : -pthread_create(&d->thread, NULL, diagnosis_main, d);
        if (r < 0) {
                diagnosis_stop(d);
                return r;
        }
        d->running = true;
        *ret = d;
        return 0;
}

void diagnosis_trigger(struct diagnosis *d) {
        if (!d || d->trigger_fd < 0) return;
        uint64_t one = 1;
        (void)!write(d->trigger_fd, &one, sizeof one);
}

struct diagnosis *diagnosis_stop(struct diagnosis *d) {
        if (!d) return NULL;
        if (d->stop_fd >= 0) {
                uint64_t one = 1;
                (void)!write(d->stop_fd, &one, sizeof one);
        }
        if (d->running) pthread_join(d->thread, NULL);
        if (d->stop_fd >= 0) close(d->stop_fd);
        if (d->trigger_fd >= 0) close(d->trigger_fd);
        free(d->self);
        free(d->root);
        free(d->nvml_library);
        free(d->kmsg);
        free(d->kubeconfig);
        free(d->node);
        free(d->dcgm_url);
        free(d->node_exporter_url);
        free(d->operator_namespace);
        free(d);
        return NULL;
}
