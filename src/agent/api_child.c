/* api_child.c: the agent's Kubernetes API requests, each run by a bounded `gpunode kube-call` child (posix_spawn of
 * /proc/self/exe). */
#include "agent/api_child.h"
#include "basic/child.h"

#include "basic/util.h"

#include <sys/wait.h>

#define API_CHILD_GRACE_MS     2000u              /* beyond the request's timeout: start-up, configuration, exit */
#define API_CHILD_OUTPUT_SLACK ((size_t)64 << 10) /* the outcome's envelope and error sentence beyond the body */

/* Parses the child's outcome (text, NUL-terminated). Returns its rc with *ret and *ret_error as
 * api_child_call() gives them, or -EIO with a sentence when text is not an outcome. */
static int api_child_parse(const char *text, size_t len, const char *what, json_t **ret, char **ret_error,
                           bool *ret_setup) {
        json_error_t jerr;
        /* the answer's strings may hold U+0000 (the child wrote them as \u0000): kept, with their length */
        json_t *o = json_loadb(text, len, JSON_ALLOW_NUL, &jerr);
        json_t *rc = json_object_get(o, "rc"), *error = json_object_get(o, "error"), *body = json_object_get(o, "body");
        const char *stage = json_string_value(json_object_get(o, "stage"));
        if (!json_is_object(o) || !json_is_integer(rc) || json_integer_value(rc) > 0 ||
            json_integer_value(rc) < -4095 || !(json_is_string(error) || json_is_null(error)) || !body) {
                json_decref(o);
                *ret_error = xasprintf("%s: the kube-call child printed something that is not its outcome", what);
                return -EIO;
        }
        int r = (int)json_integer_value(rc);
        if (ret_setup) *ret_setup = r < 0 && stage && (streq(stage, "config") || streq(stage, "client"));
        if (r < 0) {
                const char *e = json_string_value(error);
                *ret_error = xstrdup(e ? e : strerror(-r));
        } else if (ret && !json_is_null(body)) {
                *ret = json_incref(body);
        }
        json_decref(o);
        return r;
}

/* Runs the kube-call child for one request (fields: its --fields, NULL for the whole answer). Returns
 * as api_child_call_setup(). */
static int call(const char *method, const char *path, const char *patch_type, const char *body, const char *fields,
                const char *kubeconfig, unsigned timeout_ms, size_t max_body, json_t **ret, char **ret_error,
                bool *ret_setup) {
        if (ret) *ret = NULL;
        if (ret_setup) *ret_setup = false;
        _cleanup_free_ char *what = xasprintf("%s %s", method, path);
        char timeout[32], maxb[32];
        snprintf(timeout, sizeof timeout, "%ums", timeout_ms ? timeout_ms : 1);
        snprintf(maxb, sizeof maxb, "%zu", max_body);
        const char *argv[20];
        unsigned n = 0;
        argv[n++] = "gpunode";
        argv[n++] = "kube-call";
        argv[n++] = "--timeout";
        argv[n++] = timeout;
        argv[n++] = "--max-body";
        argv[n++] = maxb;
        if (fields) {
                argv[n++] = "--fields";
                argv[n++] = fields;
        }
        if (kubeconfig) {
                argv[n++] = "--kubeconfig";
                argv[n++] = kubeconfig;
        }
        argv[n++] = "--";
        argv[n++] = method;
        argv[n++] = path;
        if (patch_type) argv[n++] = patch_type;
        argv[n] = NULL;
        char self[4096];
        child_self_path(self, sizeof self);
        size_t out_max = max_body + API_CHILD_OUTPUT_SLACK;
        /* stderr inherited: the child's few lines (an exec plugin's too) go to the agent's log */
        const struct child_run_options o = { .input = body,
                                             .input_len = body ? strlen(body) : 0,
                                             .max_output = out_max,
                                             .timeout_ms = timeout_ms + API_CHILD_GRACE_MS,
                                             .cancel_fd = -1 };
        char *out = NULL;
        size_t out_len = 0;
        int status;
        int r = child_run(self, argv, &o, &out, &out_len, &status, NULL);
        if (r == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
                if (WIFSIGNALED(status))
                        *ret_error =
                                xasprintf("%s: the kube-call child was killed by signal %d", what, WTERMSIG(status));
                else
                        *ret_error = xasprintf("%s: the kube-call child failed (exit status %d)", what,
                                               WIFEXITED(status) ? WEXITSTATUS(status) : -1);
                free(out);
                return -EIO;
        }
        if (r < 0) {
                if (r == -ETIMEDOUT)
                        *ret_error = xasprintf("%s: no answer within %u ms (the kube-call child was killed)", what,
                                               timeout_ms + API_CHILD_GRACE_MS);
                else if (r == -EFBIG)
                        *ret_error =
                                xasprintf("%s: the kube-call child wrote more than %zu bytes (killed)", what, out_max);
                else if (r == -EIO)
                        *ret_error = xasprintf("%s: the kube-call child could not be waited for", what);
                else
                        *ret_error = xasprintf("%s: cannot run the kube-call child: %s", what, strerror(-r));
                return r;
        }
        r = api_child_parse(out, out_len, what, ret, ret_error, ret_setup);
        free(out);
        return r;
}

int api_child_call_setup(const char *method, const char *path, const char *patch_type, const char *body,
                         const char *kubeconfig, unsigned timeout_ms, size_t max_body, json_t **ret, char **ret_error,
                         bool *ret_setup) {
        return call(method, path, patch_type, body, NULL, kubeconfig, timeout_ms, max_body, ret, ret_error, ret_setup);
}

int api_child_get_fields(const char *path, const char *fields, const char *kubeconfig, unsigned timeout_ms,
                         size_t max_body, json_t **ret, char **ret_error, bool *ret_setup) {
        return call("GET", path, NULL, NULL, fields, kubeconfig, timeout_ms, max_body, ret, ret_error, ret_setup);
}

int api_child_call(const char *method, const char *path, const char *patch_type, const char *body,
                   const char *kubeconfig, unsigned timeout_ms, size_t max_body, json_t **ret, char **ret_error) {
        return api_child_call_setup(method, path, patch_type, body, kubeconfig, timeout_ms, max_body, ret, ret_error,
                                    NULL);
}
