/* kube_exec_plugin.c: runs a kubeconfig user's exec credential plugin (client-go's protocol) and reads the
 * ExecCredential it prints. */
#include "kube/kube_exec_plugin.h"

#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

#define EXEC_STDOUT_MAX  (1u << 20) /* an ExecCredential */
#define EXEC_STDERR_KEEP 512        /* stderr kept for the error message */

/* Returns the executable for command: as is when it has a '/' (relative to dir when relative,
 * as client-go resolves it), else the first match in $PATH; NULL when not found. */
static char *find_executable(const char *command, const char *dir) {
        if (strchr(command, '/')) {
                char *p = resolve_path(dir, command);
                if (access(p, X_OK) == 0) return p;
                free(p);
                return NULL;
        }
        const char *path = getenv("PATH");
        if (!path) path = "/usr/local/bin:/usr/bin:/bin";
        while (*path) {
                size_t n = strcspn(path, ":");
                _cleanup_free_ char *p = n ? xasprintf("%.*s/%s", (int)n, path, command) : xasprintf("./%s", command);
                struct stat st;
                if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0) return TAKE_PTR(p);
                path += n;
                if (*path == ':') path++;
        }
        return NULL;
}

/* Builds the environment for the plugin: ours, with the plugin's own entries and exec_info
 * replacing same-named ones. Returns a malloc'd NULL-terminated array (strings borrowed, except
 * the last, which the caller frees as *ret_info). */
static char **exec_environment(const struct kube_exec_spec *e, const char *exec_info, char **ret_info) {
        size_t n = 0, extra = 0;
        for (char **p = environ; p && *p; p++) n++;
        for (char **p = e->env; *p; p++) extra++;
        char **envp = xcalloc(n + extra + 2, sizeof(char *));
        size_t k = 0;
        for (char **p = environ; p && *p; p++) {
                size_t nl = strcspn(*p, "=");
                bool replaced = nl == strlen("KUBERNETES_EXEC_INFO") && !strncmp(*p, "KUBERNETES_EXEC_INFO", nl);
                for (char **q = e->env; !replaced && *q; q++)
                        if (strcspn(*q, "=") == nl && !strncmp(*q, *p, nl)) replaced = true;
                if (!replaced) envp[k++] = *p;
        }
        for (char **q = e->env; *q; q++) {
                /* a later duplicate in the plugin's own list wins, as in Go */
                bool later = false;
                size_t nl = strcspn(*q, "=");
                for (char **r = q + 1; *r; r++)
                        if (strcspn(*r, "=") == nl && !strncmp(*r, *q, nl)) later = true;
                if (!later) envp[k++] = *q;
        }
        *ret_info = xasprintf("KUBERNETES_EXEC_INFO=%s", exec_info);
        envp[k++] = *ret_info;
        envp[k] = NULL;
        return envp;
}

/* Runs the plugin with argv and envp (no shell), stdin from /dev/null, in its own process group;
 * collects stdout (at most EXEC_STDOUT_MAX) and the start of stderr; kills the group after
 * timeout_ms. Returns 0 with the exit status in *ret_status, -ETIMEDOUT, -EFBIG for too much
 * output, or -errno from pipe/fork. */
static int spawn_collect(const char *exe, char **argv, char **envp, unsigned timeout_ms, struct buf *out,
                         struct buf *err, int *ret_status) {
        int po[2], pe[2];
        _cleanup_close_ int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (devnull < 0) return -errno;
        if (pipe2(po, O_CLOEXEC) < 0) return -errno;
        if (pipe2(pe, O_CLOEXEC) < 0) {
                int r = -errno;
                close(po[0]);
                close(po[1]);
                return r;
        }
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(po[0]);
                close(po[1]);
                close(pe[0]);
                close(pe[1]);
                return r;
        }
        if (pid == 0) {
                /* child: only async-signal-safe calls from here on */
                sigset_t none;
                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                signal(SIGPIPE, SIG_DFL);
                setpgid(0, 0);
                if (dup2(devnull, 0) < 0 || dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0) _exit(126);
                execve(exe, argv, envp);
                _exit(127);
        }
        setpgid(pid, pid); /* also here: whichever runs first */
        close(po[1]);
        close(pe[1]);

        int64_t deadline = (int64_t)(monotonic_ms() + timeout_ms);
        int r = 0;
        struct pollfd fds[2] = { { .fd = po[0], .events = POLLIN }, { .fd = pe[0], .events = POLLIN } };
        while (fds[0].fd >= 0 || fds[1].fd >= 0) {
                int64_t left = deadline - (int64_t)monotonic_ms();
                if (left <= 0) {
                        r = -ETIMEDOUT;
                        break;
                }
                int k = poll(fds, 2, (int)left);
                if (k < 0) {
                        if (errno == EINTR) continue;
                        r = -errno;
                        break;
                }
                for (int i = 0; i < 2; i++) {
                        if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
                        char chunk[8192];
                        ssize_t got = read(fds[i].fd, chunk, sizeof chunk);
                        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
                        if (got <= 0) {
                                close(fds[i].fd);
                                fds[i].fd = -1;
                                continue;
                        }
                        if (i == 0) {
                                if (out->len + (size_t)got > EXEC_STDOUT_MAX) {
                                        r = -EFBIG;
                                        break;
                                }
                                buf_append(out, chunk, (size_t)got);
                        } else if (err->len < EXEC_STDERR_KEEP) {
                                size_t keep = EXEC_STDERR_KEEP - err->len;
                                buf_append(err, chunk, (size_t)got < keep ? (size_t)got : keep);
                        }
                }
                if (r < 0) break;
        }
        for (int i = 0; i < 2; i++)
                if (fds[i].fd >= 0) close(fds[i].fd);

        /* the output is complete: give the process the rest of the time to exit */
        int status = 0;
        for (;;) {
                if (r < 0) break;
                pid_t w = waitpid(pid, &status, WNOHANG);
                if (w == pid) {
                        *ret_status = status;
                        return 0;
                }
                if (w < 0 && errno != EINTR) {
                        /* SIGCHLD ignored by the program: the status is lost, judge by the output */
                        *ret_status = 0;
                        return 0;
                }
                if ((int64_t)monotonic_ms() >= deadline) {
                        r = -ETIMEDOUT;
                        break;
                }
                struct timespec ts = { 0, 5 * 1000 * 1000 };
                nanosleep(&ts, NULL);
        }
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        return r;
}

/* Runs the exec credential plugin e for user (of file source) and stores the token or client
 * certificate it prints in c. Returns 0, or a negative errno with *ret_error (-ENOENT of a
 * missing executable becomes -EINVAL). */
int kube_exec_plugin_run(const struct kube_exec_spec *e, const char *source, const char *dir, const char *user,
                         unsigned timeout_ms, struct kube_config *c, char **ret_error) {
        _cleanup_free_ char *exe = find_executable(e->command, dir);
        if (!exe)
                return errorf(ret_error, -EINVAL, "%s: user \"%s\": exec plugin: executable %s not found%s%s", source,
                              user, e->command, e->install_hint ? "\n\n" : "", e->install_hint ? e->install_hint : "");

        /* KUBERNETES_EXEC_INFO: the ExecCredential spec, as client-go sets it */
        json_t *spec = json_pack("{s:b}", "interactive", 0);
        if (e->provide_cluster_info) {
                json_t *cluster = json_pack("{s:s}", "server", c->server);
                if (c->ca_pem) {
                        char *b64 = NULL;
                        /* certificate-authority-data is base64 in the spec; encode by hand (see kube_base64_decode) */
                        static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
                        const unsigned char *p = c->ca_pem;
                        size_t n = c->ca_pem_len, o = 0;
                        b64 = xmalloc((n + 2) / 3 * 4 + 1);
                        for (size_t i = 0; i < n; i += 3) {
                                uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                                             (i + 2 < n ? p[i + 2] : 0);
                                b64[o++] = tbl[v >> 18 & 63];
                                b64[o++] = tbl[v >> 12 & 63];
                                b64[o++] = i + 1 < n ? tbl[v >> 6 & 63] : '=';
                                b64[o++] = i + 2 < n ? tbl[v & 63] : '=';
                        }
                        b64[o] = 0;
                        json_object_set_new(cluster, "certificate-authority-data", json_string(b64));
                        free(b64);
                }
                if (c->insecure) json_object_set_new(cluster, "insecure-skip-tls-verify", json_true());
                if (c->tls_server_name)
                        json_object_set_new(cluster, "tls-server-name", json_string(c->tls_server_name));
                if (c->proxy_url) json_object_set_new(cluster, "proxy-url", json_string(c->proxy_url));
                json_object_set_new(spec, "cluster", cluster);
        }
        json_t *info = json_pack("{s:s,s:s,s:o}", "apiVersion", e->api_version, "kind", "ExecCredential", "spec", spec);
        char *info_text = json_dumps(info, JSON_COMPACT);
        json_decref(info);
        if (!info_text) return errorf(ret_error, -ENOMEM, "out of memory");

        size_t nargs = 0;
        for (char **a = e->args; *a; a++) nargs++;
        _cleanup_free_ char **argv = xcalloc(nargs + 2, sizeof(char *));
        argv[0] = e->command;
        for (size_t i = 0; i < nargs; i++) argv[i + 1] = e->args[i];
        _cleanup_free_ char *info_env = NULL;
        _cleanup_free_ char **envp = exec_environment(e, info_text, &info_env);
        free(info_text);

        struct buf out = { 0 }, err = { 0 };
        buf_puts(&out, "");
        buf_puts(&err, "");
        int status = 0;
        int r = spawn_collect(exe, argv, envp, timeout_ms, &out, &err, &status);

        /* the first line of stderr, for the message; it never holds the credential */
        char *nl = strchr(err.data, '\n');
        if (nl) *nl = 0;
        strstrip_right(err.data);
        _cleanup_free_ char *errline = err.data[0] ? xasprintf(": %s", err.data) : xstrdup("");
        buf_free(&err);

        if (r == -ETIMEDOUT)
                r = errorf(ret_error, r, "%s: user \"%s\": exec plugin %s did not finish within %u ms", source, user,
                           e->command, timeout_ms);
        else if (r == -EFBIG)
                r = errorf(ret_error, r, "%s: user \"%s\": exec plugin %s printed more than %u bytes", source, user,
                           e->command, EXEC_STDOUT_MAX);
        else if (r < 0)
                r = errorf(ret_error, r, "%s: user \"%s\": cannot run exec plugin %s: %s", source, user, e->command,
                           strerror(-r));
        else if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && out.len == 0)
                r = errorf(ret_error, -EINVAL, "%s: user \"%s\": cannot execute exec plugin %s%s", source, user, exe,
                           errline);
        else if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
                r = errorf(ret_error, -EIO, "%s: user \"%s\": exec plugin %s failed with exit code %d%s", source, user,
                           e->command, WEXITSTATUS(status), errline);
        else if (WIFSIGNALED(status))
                r = errorf(ret_error, -EIO, "%s: user \"%s\": exec plugin %s was killed by signal %d%s", source, user,
                           e->command, WTERMSIG(status), errline);
        if (r < 0) {
                free_secret(out.data, out.len);
                return r;
        }

        json_error_t jerr;
        json_t *cred = json_loadb(out.data, out.len, 0, &jerr);
        free_secret(out.data, out.len);
        if (!cred || !json_is_object(cred)) {
                json_decref(cred);
                return errorf(ret_error, -EBADMSG, "%s: user \"%s\": exec plugin %s printed no ExecCredential JSON",
                              source, user, e->command);
        }
        const char *kind = json_string_value(json_object_get(cred, "kind"));
        const char *api = json_string_value(json_object_get(cred, "apiVersion"));
        json_t *st = json_object_get(cred, "status");
        const char *token = json_string_value(json_object_get(st, "token"));
        const char *cert = json_string_value(json_object_get(st, "clientCertificateData"));
        const char *key = json_string_value(json_object_get(st, "clientKeyData"));
        if (!kind || !streq(kind, "ExecCredential"))
                r = errorf(ret_error, -EBADMSG,
                           "%s: user \"%s\": exec plugin %s printed kind \"%s\", not ExecCredential", source, user,
                           e->command, kind ? kind : "");
        else if (!api || !streq(api, e->api_version))
                r = errorf(ret_error, -EBADMSG,
                           "%s: user \"%s\": exec plugin %s answered apiVersion \"%s\", not \"%s\"", source, user,
                           e->command, api ? api : "", e->api_version);
        else if (!json_is_object(st))
                r = errorf(ret_error, -EBADMSG, "%s: user \"%s\": exec plugin %s printed no status", source, user,
                           e->command);
        else if ((cert && *cert) != (key && *key))
                r = errorf(
                        ret_error, -EBADMSG,
                        "%s: user \"%s\": exec plugin %s printed only one of clientCertificateData and clientKeyData",
                        source, user, e->command);
        else if (!(token && *token) && !(cert && *cert))
                r = errorf(ret_error, -EBADMSG,
                           "%s: user \"%s\": exec plugin %s printed neither a token nor a client certificate", source,
                           user, e->command);
        for (const char *q = token; r == 0 && q && *q; q++)
                if ((unsigned char)*q < ' ' || *q == 0x7f)
                        r = errorf(ret_error, -EBADMSG,
                                   "%s: user \"%s\": exec plugin %s printed a token with a control character", source,
                                   user, e->command);
        if (r == 0) {
                if (token && *token) {
                        free_secret(c->token, 0);
                        c->token = xstrdup(token);
                }
                if (cert && *cert) {
                        free(c->cert_pem);
                        free_secret(c->key_pem, c->key_pem_len);
                        c->cert_pem = xstrdup(cert);
                        c->cert_pem_len = strlen(cert);
                        c->key_pem = xstrdup(key);
                        c->key_pem_len = strlen(key);
                }
        }
        /* wipe the credential inside jansson's copy before freeing it */
        if (json_is_string(json_object_get(st, "token"))) json_string_set(json_object_get(st, "token"), "");
        if (json_is_string(json_object_get(st, "clientKeyData")))
                json_string_set(json_object_get(st, "clientKeyData"), "");
        json_decref(cred);
        return r;
}
