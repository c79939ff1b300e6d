/* check_child.c: the exporter's check thread: runs `gpunode check` in a child process and splices its series into the page. */
#include "exporter/exporter_internal.h"
#include "basic/child.h"

#include <sys/wait.h>

#include "basic/promtext.h"

/*
 * `gpunode check --output prometheus` runs as a child (posix_spawn of /proc/self/exe), so that what
 * the probes load (libfyaml for CDI specs, libcurl and its chain on a Kubernetes node), any probe
 * that hangs and anything a probe leaks stay out of this long-running process. One child at a time;
 * its stdout is read through a pipe up to CHECK_OUTPUT_MAX bytes, within the check timeout (then it
 * is killed, with its process group); it is always reaped. Its output is validated (the Prometheus
 * text parser, only the diagnosis's own families) before it is spliced into the page.
 */
#define CHECK_OUTPUT_MAX (256u * 1024u)
#define CHECK_REAP_MS 2000u

/* Returns true when name is one of the families `gpunode check --output prometheus` writes. */
static bool check_family(const char *name) {
        return streq(name, "gpunode_check") || streq(name, "gpunode_layer_healthy") || streq(name, "gpunode_verdict") ||
               streq(name, "gpunode_root_cause_layer");
}

/* promtext callback: refuses a sample of another family; counts verdict samples. Returns 0 or -EBADMSG. */
static int check_sample_cb(const struct promtext_sample *sm, void *userdata) {
        if (!check_family(sm->name)) return -EBADMSG;
        if (streq(sm->name, "gpunode_verdict")) (*(unsigned *)userdata)++;
        return 0;
}

/* promtext callback: refuses HELP of another family. Returns 0 or -EBADMSG. */
static int check_help_cb(const char *name, const char *text, unsigned long line, void *userdata) {
        return check_family(name) ? 0 : -EBADMSG;
}

/* promtext callback: refuses TYPE of another family. Returns 0 or -EBADMSG. */
static int check_type_cb(const char *name, enum promtext_type type, unsigned long line, void *userdata) {
        return check_family(name) ? 0 : -EBADMSG;
}

/* Returns 0 when text[0..len) is the diagnosis as `gpunode check --output prometheus` writes it:
 * valid exposition text, only its four families, a verdict. Else -EBADMSG (or the parser's error). */
static int check_output_validate(const char *text, size_t len) {
        static const struct promtext_callbacks cb = { .sample = check_sample_cb, .help = check_help_cb, .type = check_type_cb };
        unsigned verdicts = 0;
        int r = promtext_parse(text, len, &cb, &verdicts, NULL);
        if (r < 0) return r;
        return verdicts > 0 ? 0 : -EBADMSG;
}

/* Kills the child's process group and the child. Returns nothing. */
static void check_child_kill(pid_t pid) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
}

/* Waits up to ms for child pid to end, reaping it. Returns true when reaped (*ret_status set, may be NULL). */
static bool check_child_reap(pid_t pid, unsigned ms, int *ret_status) {
        for (unsigned waited = 0;; waited += 10) {
                int st;
                pid_t r = waitpid(pid, &st, WNOHANG);
                if (r == pid || (r < 0 && errno == ECHILD)) {
                        if (ret_status) *ret_status = r == pid ? st : -1;
                        return true;
                }
                if (waited >= ms) return false;
                struct timespec t = { 0, 10 * 1000000L };
                nanosleep(&t, NULL);
        }
}

/*
 * Runs one `gpunode check --output prometheus` child and reads its output. Returns 0 with the malloc'd,
 * NUL-terminated output in *ret_text (*ret_len bytes); -ETIMEDOUT when it ran past the check timeout
 * (killed); -EFBIG when it wrote more than CHECK_OUTPUT_MAX (killed); -ECANCELED when the exporter is
 * stopping (killed); -EIO when it exited other than 0, 1 or 2 (healthy, warnings, failures) or by a
 * signal; -errno when it cannot be started. A child that could not be reaped is left in e->check_pid.
 */
static int check_child_run(struct exporter *e, char **ret_text, size_t *ret_len) {
        const char *argv[16];
        unsigned n = 0;
        argv[n++] = "gpunode";
        argv[n++] = "check";
        argv[n++] = "--output";
        argv[n++] = "prometheus";
        argv[n++] = "--root";
        argv[n++] = e->root;
        if (e->nvml_library) {
                argv[n++] = "--nvml-library";
                argv[n++] = e->nvml_library;
        }
        if (e->kubeconfig) {
                argv[n++] = "--kubeconfig";
                argv[n++] = e->kubeconfig;
        }
        argv[n] = NULL;

        char self[4096];
        child_self_path(self, sizeof self);
        const struct child_run_options o = { .max_output = CHECK_OUTPUT_MAX, .timeout_ms = e->o.check_timeout_ms,
                                             .cancel_fd = e->check_wake_fd, .quiet = true };
        int status;
        int r = child_run(self, argv, &o, ret_text, ret_len, &status, &e->check_pid);
        if (r == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) <= 2)) {
                free(*ret_text);
                *ret_text = NULL;
                r = -EIO;
        }
        return r;
}

/* Runs one round of the layer diagnosis and publishes its series with the outcome. Returns nothing. */
static void check_round(struct exporter *e, struct exp_check_status *cs, char **last_output) {
        /* A child from an earlier round that could not be reaped: never a second one beside it. */
        if (e->check_pid > 0) {
                check_child_kill(e->check_pid);
                if (!check_child_reap(e->check_pid, 0, NULL)) {
                        cs->runs_total[EXP_CHECK_BUSY]++;
                        cs->last = EXP_CHECK_BUSY;
                        goto publish;
                }
                e->check_pid = 0;
        }
        struct timespec t0 = now_mono();
        char *text = NULL;
        size_t len = 0;
        int r = check_child_run(e, &text, &len);
        if (r == -ECANCELED) return;
        if (r == 0) {
                r = check_output_validate(text, len);
                if (r < 0) {
                        free(text);
                        r = -EBADMSG;
                } else if (len > 0 && text[len - 1] != '\n') {
                        text = xrealloc(text, len + 2);
                        text[len++] = '\n';
                        text[len] = 0;
                }
        }
        struct timespec t1 = now_mono();
        cs->duration_seconds = exp_seconds_between(&t0, &t1);
        cs->last = r == 0 ? EXP_CHECK_OK : r == -ETIMEDOUT ? EXP_CHECK_TIMEOUT : r == -EBADMSG || r == -EFBIG ? EXP_CHECK_INVALID
                                                                                                          : EXP_CHECK_FAILED;
        cs->runs_total[cs->last]++;
        if (r == 0) {
                free(*last_output);
                *last_output = text;
                pthread_mutex_lock(&e->lock);
                e->have_check = true;
                e->check_time = t1;
                pthread_mutex_unlock(&e->lock);
        }
publish:;
        /* The last good diagnosis (its age says how old) and how the latest run went. */
        struct buf b = { 0 };
        if (*last_output) buf_puts(&b, *last_output);
        exp_render_check_status(&b, cs);
        pthread_mutex_lock(&e->publish_lock);
        free(e->check_text);
        e->check_text = b.data;
        pthread_mutex_unlock(&e->publish_lock);
        exporter_publish(e);
}

/* The check thread: runs the layer diagnosis in a child every check interval. Returns NULL. */
void *exporter_check_main(void *arg) {
        struct exporter *e = arg;
        struct exp_check_status cs = { .last = EXP_CHECK_NONE };
        char *last_output = NULL;
        pthread_mutex_lock(&e->lock);
        while (!e->stop) {
                pthread_mutex_unlock(&e->lock);
                check_round(e, &cs, &last_output);
                pthread_mutex_lock(&e->lock);
                exporter_wait_locked(e, e->o.check_interval_ms);
        }
        pthread_mutex_unlock(&e->lock);
        if (e->check_pid > 0) {
                check_child_kill(e->check_pid);
                check_child_reap(e->check_pid, CHECK_REAP_MS, NULL);
        }
        free(last_output);
        exporter_unref(e);
        return NULL;
}
