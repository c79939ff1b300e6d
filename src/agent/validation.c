/* validation.c: the agent's side of `gpunode validate`: the thread that runs it as a bounded child once no
 * pod holds a GPU (and when asked), and what the result becomes (condition, page section, metrics). */
#include "agent/validation.h"
#include "basic/child.h"
#include "basic/util.h"
#include "validate/validate.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/wait.h>

#define STDERR_KEPT 4096 /* bytes of the child's stderr kept for the error line */

/* Returns the first test in report (per GPU, then per pair) whose status is status, with *ret_gpu its GPU (or
 * pair) object; NULL when none. */
static const json_t *first_test(const json_t *report, const char *status, const json_t **ret_gpu) {
        static const char *const lists[] = { "gpus", "pairs" };
        for (size_t l = 0; l < ELEMENTSOF(lists); l++) {
                size_t i, j;
                const json_t *g, *t;
                json_array_foreach(json_object_get(report, lists[l]), i, g)
                        json_array_foreach(json_object_get(g, "tests"), j, t) {
                        const char *s = json_string_value(json_object_get(t, "status"));
                        if (s && streq(s, status)) {
                                *ret_gpu = g;
                                return t;
                        }
                }
        }
        return NULL;
}

/* Describes test t of g (a GPU: "GPU 1 (GPU-...) memory.pattern: summary"; a pair: "GPUs 0-1 p2p...").
 * Returns a malloc'd line. */
static char *describe_test(const json_t *g, const json_t *t) {
        const char *id = json_string_value(json_object_get(t, "id")),
                   *sum = json_string_value(json_object_get(t, "summary"));
        if (json_object_get(g, "a"))
                return xasprintf("GPUs %lld-%lld %s: %s", (long long)json_integer_value(json_object_get(g, "a")),
                                 (long long)json_integer_value(json_object_get(g, "b")), id ? id : "?", sum ? sum : "");
        const char *uuid = json_string_value(json_object_get(g, "uuid"));
        return xasprintf("GPU %lld (%s) %s: %s", (long long)json_integer_value(json_object_get(g, "index")),
                         uuid ? uuid : "no UUID", id ? id : "?", sum ? sum : "");
}

/* Fills c with status, reason and the message (bounded). Returns nothing. */
static void set_cond(struct agent_condition *c, enum agent_status status, const char *reason, const char *message) {
        c->status = status;
        snprintf(c->reason, sizeof c->reason, "%s", reason);
        agent_bound_utf8(message, c->message, sizeof c->message);
        c->check[0] = 0;
}

void agent_validation_condition(const json_t *report, int exit_code, const char *error, struct agent_condition *ret) {
        const char *schema = json_string_value(json_object_get(report, "schema"));
        const char *verdict = json_string_value(json_object_get(report, "verdict"));
        const char *level = json_string_value(json_object_get(report, "level"));
        size_t n_gpus = json_array_size(json_object_get(report, "gpus"));
        double dur = json_number_value(json_object_get(report, "duration_s"));
        if (!report || !schema || !streq(schema, "gpunode.validate/v1") || !verdict) {
                _cleanup_free_ char *m =
                        xasprintf("gpunode validate gave no gpunode.validate/v1 report (exit %d): %s", exit_code,
                                  error    ? error
                                  : report ? "no schema or verdict"
                                           : "no JSON on its output");
                set_cond(ret, AGENT_UNKNOWN, "GPUValidationCannotRun", m);
                return;
        }
        const json_t *g = NULL, *t;
        if (streq(verdict, "pass")) {
                _cleanup_free_ char *m =
                        xasprintf("%s validation passed on %zu GPU(s) in %.0f s", level ? level : "?", n_gpus, dur);
                set_cond(ret, AGENT_FALSE, "GPUValidationPassed", m);
        } else if (streq(verdict, "fail")) {
                char camel[AGENT_REASON_MAX], reason[AGENT_REASON_MAX];
                _cleanup_free_ char *d = NULL;
                if ((t = first_test(report, "fail", &g))) {
                        agent_camel_case(json_string_value(json_object_get(t, "id")), camel, sizeof camel);
                        d = describe_test(g, t);
                } else
                        camel[0] = 0;
                snprintf(reason, sizeof reason, "GPUValidation%s", camel[0] ? camel : "Failed");
                _cleanup_free_ char *m =
                        xasprintf("%s validation failed: %s", level ? level : "?", d ? d : "(no failing test named)");
                set_cond(ret, AGENT_TRUE, reason, m);
        } else if (streq(verdict, "degraded")) {
                _cleanup_free_ char *d = (t = first_test(report, "warn", &g)) ? describe_test(g, t) : NULL;
                _cleanup_free_ char *m = xasprintf("%s validation degraded: %s", level ? level : "?",
                                                   d ? d : "a GPU was refused or a figure warns");
                set_cond(ret, AGENT_FALSE, "GPUValidationDegraded", m);
        } else {
                const char *e = json_string_value(json_array_get(json_object_get(report, "errors"), 0));
                _cleanup_free_ char *m = xasprintf("gpunode validate cannot run (exit %d): %s", exit_code,
                                                   e       ? e
                                                   : error ? error
                                                           : verdict);
                set_cond(ret, AGENT_UNKNOWN, "GPUValidationCannotRun", m);
        }
}

/* Appends s HTML-escaped to b. Returns nothing. */
static void put_html(struct buf *b, const char *s) {
        for (; s && *s; s++) switch (*s) {
                case '<': buf_puts(b, "&lt;"); break;
                case '>': buf_puts(b, "&gt;"); break;
                case '&': buf_puts(b, "&amp;"); break;
                case '"': buf_puts(b, "&quot;"); break;
                case '\'': buf_puts(b, "&#39;"); break;
                default: buf_append(b, s, 1);
                }
}

/* Appends a JSON number (or "-" when v is not one) to b. Returns nothing. */
static void put_number(struct buf *b, const json_t *v) {
        if (json_is_number(v))
                buf_printf(b, "%.4g", json_number_value(v));
        else
                buf_puts(b, "-");
}

char *agent_validation_section_html(const json_t *report, const struct agent_condition *state, int64_t at) {
        struct buf b = { 0 };
        buf_puts(&b, "<section id=\"validation\">\n<h2>Validation (gpunode validate)</h2>\n<p>");
        put_html(&b, agent_status_name(state->status));
        buf_puts(&b, " ");
        put_html(&b, state->reason);
        buf_puts(&b, ": ");
        put_html(&b, state->message);
        if (at > 0) {
                char when[32];
                buf_printf(&b, " (at %s)", agent_time_format(at, when, sizeof when));
        }
        buf_puts(&b, "</p>\n");
        if (report && json_array_size(json_object_get(report, "gpus"))) {
                buf_puts(&b, "<table>\n<tr><th>GPU</th><th>test</th><th>status</th><th>value</th><th>expected</th>"
                             "<th>ratio</th><th>summary</th></tr>\n");
                size_t i, j;
                const json_t *g, *t;
                json_array_foreach(json_object_get(report, "gpus"), i, g)
                        json_array_foreach(json_object_get(g, "tests"), j, t) {
                        buf_printf(&b, "<tr><td>%lld ", (long long)json_integer_value(json_object_get(g, "index")));
                        put_html(&b, json_string_value(json_object_get(g, "uuid")));
                        buf_puts(&b, "</td><td>");
                        put_html(&b, json_string_value(json_object_get(t, "id")));
                        buf_puts(&b, "</td><td>");
                        put_html(&b, json_string_value(json_object_get(t, "status")));
                        buf_puts(&b, "</td><td>");
                        put_number(&b, json_object_get(t, "value"));
                        buf_puts(&b, " ");
                        put_html(&b, json_string_value(json_object_get(t, "unit")));
                        buf_puts(&b, "</td><td>");
                        put_number(&b, json_object_get(t, "expected"));
                        buf_puts(&b, "</td><td>");
                        put_number(&b, json_object_get(t, "ratio"));
                        buf_puts(&b, "</td><td>");
                        put_html(&b, json_string_value(json_object_get(t, "summary")));
                        buf_puts(&b, "</td></tr>\n");
                }
                buf_puts(&b, "</table>\n");
        }
        buf_puts(&b, "</section>\n");
        return b.data;
}

struct agent_validation {
        struct agent_validation_options o;
        char *self, *root, *nvml_library, *cuda_library, *node; /* owned copies */
        int stop_fd;                                            /* eventfd: the child's cancel, written on stop */
        pthread_t thread;
        bool thread_running;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        /* under lock */
        bool stop, requested, ran_once;
        size_t gpu_pods; /* SIZE_MAX: unknown (no diagnosis yet) */
        struct agent_validation_state st;
        json_t *report; /* the latest gpunode.validate/v1 result, NULL before */
};

/* Returns true when a run is due (under lock). */
static bool due(const struct agent_validation *v) {
        return v->requested || (v->o.on_start && !v->ran_once && v->gpu_pods == 0);
}

/* Runs the child once. Returns its parsed report (NULL: none) with *ret_exit and *ret_error (malloc'd or
 * NULL). */
static json_t *run_child(struct agent_validation *v, int *ret_exit, char **ret_error) {
        const char *argv[16] = { "gpunode", "validate", "--level", "quick", "--output", "json", "--root", v->root };
        unsigned n = 8;
        if (v->node) {
                argv[n++] = "--node";
                argv[n++] = v->node;
        }
        if (v->nvml_library) {
                argv[n++] = "--nvml-library";
                argv[n++] = v->nvml_library;
        }
        if (v->cuda_library) {
                argv[n++] = "--cuda-library";
                argv[n++] = v->cuda_library;
        }
        argv[n] = NULL;
        const struct child_run_options co = { .max_output = AGENT_VALIDATION_MAX_OUTPUT,
                                              .timeout_ms =
                                                      v->o.timeout_ms ? v->o.timeout_ms : AGENT_VALIDATION_TIMEOUT_MS,
                                              .cancel_fd = v->stop_fd,
                                              .max_stderr = STDERR_KEPT };
        char *out = NULL, *err = NULL;
        size_t len = 0;
        int status = 0;
        *ret_exit = -1;
        *ret_error = NULL;
        int r = child_run_capture(v->self, argv, &co, &out, &len, &err, NULL, &status, NULL);
        if (r < 0) {
                *ret_error = r == -ETIMEDOUT
                                     ? xasprintf("gpunode validate ran past %u s and was killed", co.timeout_ms / 1000)
                                     : xasprintf("gpunode validate: %s", strerror(-r));
                return NULL;
        }
        *ret_exit = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        json_error_t je;
        json_t *rep = json_loadb(out, len, 0, &je);
        if (!json_is_object(rep)) {
                json_decref(rep);
                rep = NULL;
                char *e = err ? utf8_sanitize(err) : xstrdup("");
                size_t k = strlen(e);
                while (k && (e[k - 1] == '\n' || e[k - 1] == '\r')) e[--k] = 0;
                *ret_error = xasprintf("its output is not JSON (%s)%s%s", je.text, *e ? "; stderr: " : "", e);
                free(e);
        }
        free(out);
        free(err);
        return rep;
}

/* The validation thread: waits until a run is due, runs it, keeps the result. Returns NULL. */
static void *validation_main(void *arg) {
        struct agent_validation *v = arg;
        pthread_mutex_lock(&v->lock);
        for (;;) {
                while (!v->stop && !due(v)) pthread_cond_wait(&v->cond, &v->lock);
                if (v->stop) break;
                v->requested = false;
                v->ran_once = true;
                v->st.running = true;
                pthread_mutex_unlock(&v->lock);
                fprintf(stderr, "gpunode agent: validating the GPUs (gpunode validate --level quick)\n");
                int exit_code;
                char *error;
                int64_t t0 = (int64_t)monotonic_ms();
                json_t *rep = run_child(v, &exit_code, &error);
                struct agent_condition c;
                agent_validation_condition(rep, exit_code, error, &c);
                free(error);
                fprintf_escaped(stderr, "gpunode agent: validation in %.1f s: %s %s: %s\n",
                                ((int64_t)monotonic_ms() - t0) / 1000.0, agent_status_name(c.status), c.reason,
                                c.message);
                pthread_mutex_lock(&v->lock);
                v->st.running = false;
                if (v->stop) {
                        json_decref(rep);
                        break;
                }
                json_decref(v->report);
                v->report = rep;
                v->st.cond = c;
                v->st.seq++;
                v->st.at = (int64_t)time(NULL);
                if (rep && c.status == AGENT_FALSE && streq(c.reason, "GPUValidationPassed")) v->st.passed_once = true;
                pthread_mutex_unlock(&v->lock);
                if (v->o.on_result) v->o.on_result(v->o.userdata);
                pthread_mutex_lock(&v->lock);
        }
        pthread_mutex_unlock(&v->lock);
        return NULL;
}

int agent_validation_start(const struct agent_validation_options *o, struct agent_validation **ret) {
        struct agent_validation *v = xcalloc(1, sizeof *v);
        v->o = *o;
        v->self = xstrdup(o->self);
        v->root = xstrdup(o->root ? o->root : "/");
        v->nvml_library = o->nvml_library ? xstrdup(o->nvml_library) : NULL;
        v->cuda_library = o->cuda_library ? xstrdup(o->cuda_library) : NULL;
        v->node = o->node ? xstrdup(o->node) : NULL;
        v->gpu_pods = SIZE_MAX;
        set_cond(&v->st.cond, AGENT_UNKNOWN, "GPUValidationNotRun",
                 o->on_start ? "not validated yet: waiting for a diagnosis that finds no pod holding a GPU"
                             : "not validated yet");
        pthread_mutex_init(&v->lock, NULL);
        pthread_cond_init(&v->cond, NULL);
        v->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        int r = v->stop_fd < 0 ? -errno : -pthread_create(&v->thread, NULL, validation_main, v);
        if (r < 0) {
                agent_validation_stop(v);
                return r;
        }
        v->thread_running = true;
        *ret = v;
        return 0;
}

void agent_validation_note_gpu_pods(struct agent_validation *v, size_t gpu_pods) {
        pthread_mutex_lock(&v->lock);
        v->gpu_pods = gpu_pods;
        if (!v->ran_once && v->o.on_start && gpu_pods != 0 && gpu_pods != SIZE_MAX) {
                char m[128];
                snprintf(m, sizeof m, "not validated yet: %zu pod(s) hold GPUs; validation runs once none does",
                         gpu_pods);
                set_cond(&v->st.cond, AGENT_UNKNOWN, "GPUValidationWaitingForGPUPods", m);
        }
        pthread_cond_signal(&v->cond);
        pthread_mutex_unlock(&v->lock);
}

unsigned agent_validation_request(struct agent_validation *v) {
        pthread_mutex_lock(&v->lock);
        /* a run in progress started before this request: the one after it answers */
        unsigned target = v->st.seq + (v->st.running ? 2 : 1);
        v->requested = true;
        pthread_cond_signal(&v->cond);
        pthread_mutex_unlock(&v->lock);
        return target;
}

void agent_validation_get(struct agent_validation *v, struct agent_validation_state *ret) {
        pthread_mutex_lock(&v->lock);
        *ret = v->st;
        pthread_mutex_unlock(&v->lock);
}

char *agent_validation_json(struct agent_validation *v) {
        pthread_mutex_lock(&v->lock);
        char *s = v->report ? json_dumps(v->report, JSON_COMPACT) : NULL;
        pthread_mutex_unlock(&v->lock);
        return s;
}

char *agent_validation_metrics(struct agent_validation *v) {
        pthread_mutex_lock(&v->lock);
        char *s = v->report ? validate_render_prometheus(v->report) : NULL;
        pthread_mutex_unlock(&v->lock);
        return s;
}

char *agent_validation_html(struct agent_validation *v) {
        pthread_mutex_lock(&v->lock);
        char *s = agent_validation_section_html(v->report, &v->st.cond, v->st.at);
        pthread_mutex_unlock(&v->lock);
        return s;
}

struct agent_validation *agent_validation_stop(struct agent_validation *v) {
        if (!v) return NULL;
        pthread_mutex_lock(&v->lock);
        v->stop = true;
        pthread_cond_signal(&v->cond);
        pthread_mutex_unlock(&v->lock);
        if (v->stop_fd >= 0) {
                uint64_t one = 1;
                (void)!write(v->stop_fd, &one, sizeof one);
        }
        if (v->thread_running) pthread_join(v->thread, NULL);
        if (v->stop_fd >= 0) close(v->stop_fd);
        pthread_cond_destroy(&v->cond);
        pthread_mutex_destroy(&v->lock);
        json_decref(v->report);
        free(v->self);
        free(v->root);
        free(v->nvml_library);
        free(v->cuda_library);
        free(v->node);
        free(v);
        return NULL;
}
