/* kubeconfig.c: resolves Kubernetes API credentials from kubeconfig files (libfyaml) and the pod's service account. */
#include "kube/kubeconfig.h"
#include "kube/kube_exec_plugin.h"
#include "basic/util.h"
#include "basic/yaml.h"

#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <sys/stat.h>

#define KUBECONFIG_MAX_SIZE (16u << 20) /* a kubeconfig or a file it names */

/* One parsed kubeconfig file. */
struct kc_file {
        json_t *root;  /* NULL for an empty file */
        char *text;    /* the YAML text */
        char *display; /* the name errors use */
        char *dir;     /* folder relative paths are resolved against */
};

/* The merged set of kubeconfig files, first file wins per key. */
struct kc_set {
        struct kc_file *files;
        size_t n;
        unsigned flags;
        unsigned timeout_ms;
};

/* Wipes the secrets of c and frees it; NULL is fine. Returns nothing. */
void kube_config_free(struct kube_config *c) {
        if (!c) return;
        free(c->server);
        free(c->ca_file);
        free(c->ca_pem);
        free(c->tls_server_name);
        free(c->proxy_url);
        free_secret(c->token, 0);
        free(c->username);
        free_secret(c->password, 0);
        free(c->cert_pem);
        free_secret(c->key_pem, c->key_pem_len);
        free(c->namespace);
        free(c->context);
        free(c->source);
        free(c);
}

/* Frees every kubeconfig file of the set. */
static void kc_set_done(struct kc_set *s) {
        for (size_t i = 0; i < s->n; i++) {
                json_decref(s->files[i].root);
                free(s->files[i].text);
                free(s->files[i].display);
                free(s->files[i].dir);
        }
        free(s->files);
        *s = (struct kc_set){ 0 };
}

/* ---- base64 ---- */

/* Returns the 6-bit value of a base64 character, or -1. */
static int b64_value(unsigned char c) {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
}

/* Hand-written: none of the linked libraries exports a base64 decoder (curl's is internal). */
int kube_base64_decode(const char *s, size_t len, void **ret, size_t *ret_len) {
        _cleanup_free_ unsigned char *out = xmalloc(len / 4 * 3 + 4);
        size_t n = 0, quad = 0, pad = 0;
        uint32_t acc = 0;

        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];
                if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
                if (c == '=') {
                        /* padding only in the last two places of a group */
                        if (quad < 2) return -EINVAL;
                        pad++;
                        acc <<= 6;
                        quad++;
                } else {
                        int v = b64_value(c);
                        if (v < 0 || pad > 0) return -EINVAL;
                        acc = acc << 6 | (uint32_t)v;
                        quad++;
                }
                if (quad == 4) {
                        out[n++] = (unsigned char)(acc >> 16);
                        if (pad < 2) out[n++] = (unsigned char)(acc >> 8);
                        if (pad < 1) out[n++] = (unsigned char)acc;
                        quad = 0;
                        acc = 0;
                        if (pad > 0) {
                                /* nothing but whitespace may follow padding */
                                for (i++; i < len; i++)
                                        if (!strchr(" \n\r\t", s[i]) || !s[i]) return -EINVAL;
                                break;
                        }
                }
        }
        if (quad != 0) return -EINVAL;
        out[n] = 0;
        *ret_len = n;
        *ret = TAKE_PTR(out);
        return 0;
}

/* ---- files ---- */

/* Returns the path as errors show it: "~/..." under $HOME, else as given (malloc'd). */
static char *display_path(const char *path) {
        const char *home = getenv("HOME");
        if (home && home[0] == '/' && home[1]) {
                const char *rest = startswith(path, home);
                if (rest && rest[0] == '/') return xasprintf("~%s", rest);
        }
        return xstrdup(path);
}

/* Reads a whole regular file of at most max bytes into a NUL-terminated buffer. Returns 0, or
 * -errno from open/read, -EFBIG when larger than max, -EISDIR for a folder. */
static int read_file_all(const char *path, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0) return -errno;
        if (S_ISDIR(st.st_mode)) return -EISDIR;
        struct buf b = { 0 };
        buf_append(&b, "", 0);
        for (;;) {
                char chunk[16384];
                ssize_t k = read(fd, chunk, sizeof chunk);
                if (k < 0) {
                        if (errno == EINTR) continue;
                        int r = -errno;
                        buf_free(&b);
                        return r;
                }
                if (k == 0) break;
                if (b.len + (size_t)k > max) {
                        buf_free(&b);
                        return -EFBIG;
                }
                buf_append(&b, chunk, (size_t)k);
        }
        *ret = b.data;
        *ret_len = b.len;
        return 0;
}

/* Returns the folder of path, made absolute (malloc'd). */
static char *dir_of(const char *path) {
        _cleanup_free_ char *copy = xstrdup(path);
        char *slash = strrchr(copy, '/');
        if (slash == copy) return xstrdup("/");
        if (slash) {
                *slash = 0;
                if (copy[0] == '/') return TAKE_PTR(copy);
        }
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) return slash ? TAKE_PTR(copy) : xstrdup(".");
        return slash ? xasprintf("%s/%s", cwd, copy) : xstrdup(cwd);
}

/* ---- YAML ---- */

/* Parses text (taking ownership) into f. Returns 0, or -EINVAL with *ret_error quoting the
 * parser's first error with its line and column. */
static int kc_file_parse(char *text, size_t len, const char *display, const char *dir, struct kc_file *f,
                         char **ret_error) {
        *f = (struct kc_file){ .text = text, .display = xstrdup(display), .dir = xstrdup(dir ? dir : ".") };

        char *error = NULL;
        int r = yaml_to_json(text, len, &f->root, &error);
        if (r < 0) {
                r = errorf(ret_error, r, "%s: %s", display, error);
                free(error);
                return r;
        }
        /* an empty document or a bare "null" is an empty kubeconfig */
        if (json_is_null(f->root)) {
                json_decref(f->root);
                f->root = NULL;
        }
        if (f->root && !json_is_object(f->root))
                return errorf(ret_error, -EINVAL, "%s: not a kubeconfig: the top level is not a mapping", display);
        return 0;
}

/* Returns true when n is absent or YAML's null (yaml_to_json maps null, ~ and empty to null). */
static bool node_is_null(const json_t *n) {
        return !n || json_is_null(n);
}

/* Returns the value of key in mapping m, or NULL when m is not a mapping or lacks the key. */
static json_t *map_get(json_t *m, const char *key) {
        return json_is_object(m) ? json_object_get(m, key) : NULL;
}

/* Reads the scalar n as a string (malloc'd in *ret, NULL for null). Returns 0, or -EINVAL with
 * *ret_error naming where (a printf'd "what") when n is not a scalar. */
static int node_string(json_t *n, const char *where, char **ret, char **ret_error) {
        *ret = NULL;
        if (node_is_null(n)) return 0;
        if (!json_is_string(n)) return errorf(ret_error, -EINVAL, "%s must be a string", where);
        size_t len = json_string_length(n);
        const char *v = json_string_value(n);
        if (memchr(v, 0, len)) return errorf(ret_error, -EINVAL, "%s contains a NUL character", where);
        *ret = xstrndup(v, len);
        return 0;
}

/* Reads key of mapping m as a string; an empty string counts as unset. Returns as node_string(). */
_printf_(5, 6) static int get_string(json_t *m, const char *key, char **ret, char **ret_error, const char *where_fmt,
                                     ...) {
        json_t *n = map_get(m, key);
        *ret = NULL;
        if (node_is_null(n)) return 0;
        va_list ap;
        va_start(ap, where_fmt);
        _cleanup_free_ char *where0 = NULL;
        if (vasprintf(&where0, where_fmt, ap) < 0) abort();
        va_end(ap);
        _cleanup_free_ char *where = xasprintf("%s \"%s\"", where0, key);
        int r = node_string(n, where, ret, ret_error);
        if (r < 0) return r;
        if (*ret && !**ret) {
                free(*ret);
                *ret = NULL;
        }
        return 0;
}

/* Parses a YAML 1.1 boolean as Go's yaml does. Returns 0, or -EINVAL. */
static int parse_bool(const char *s, bool *ret) {
        static const char *const yes[] = { "true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "y", "Y" };
        static const char *const no[] = { "false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "n", "N" };
        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                if (streq(s, yes[i])) return (*ret = true), 0;
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                if (streq(s, no[i])) return (*ret = false), 0;
        return -EINVAL;
}

/* Reads key of mapping m as a boolean (false when unset). Returns 0 or -EINVAL with *ret_error. */
static int get_bool(json_t *m, const char *key, bool *ret, char **ret_error, const char *where) {
        _cleanup_free_ char *s = NULL;
        int r = get_string(m, key, &s, ret_error, "%s", where);
        if (r < 0) return r;
        *ret = false;
        if (s && parse_bool(s, ret) < 0)
                return errorf(ret_error, -EINVAL, "%s \"%s\" must be true or false, not \"%s\"", where, key, s);
        return 0;
}

/* Finds the entry called name in the named list listkey ("contexts", "clusters", "users") across
 * the files, first file first, and returns its innerkey mapping in *ret (NULL when the entry has
 * none) and its file in *ret_file. Returns 1 when found, 0 when not, -EINVAL with *ret_error for a
 * malformed list. */
static int find_named(struct kc_set *s, const char *listkey, const char *innerkey, const char *name, json_t **ret,
                      struct kc_file **ret_file, char **ret_error) {
        for (size_t i = 0; i < s->n; i++) {
                struct kc_file *f = &s->files[i];
                json_t *list = map_get(f->root, listkey);
                if (node_is_null(list)) continue;
                if (!json_is_array(list))
                        return errorf(ret_error, -EINVAL, "%s: \"%s\" must be a list", f->display, listkey);
                size_t it;
                json_t *item;
                json_array_foreach(list, it, item) {
                        if (!json_is_object(item))
                                return errorf(ret_error, -EINVAL, "%s: an entry of \"%s\" is not a mapping", f->display,
                                              listkey);
                        _cleanup_free_ char *n = NULL;
                        int r = get_string(item, "name", &n, ret_error, "%s: an entry of \"%s\":", f->display, listkey);
                        if (r < 0) return r;
                        if (!n || !streq(n, name)) continue;
                        json_t *inner = map_get(item, innerkey);
                        if (node_is_null(inner))
                                inner = NULL;
                        else if (!json_is_object(inner))
                                return errorf(ret_error, -EINVAL, "%s: %s \"%s\": \"%s\" must be a mapping", f->display,
                                              innerkey, name, innerkey);
                        *ret = inner;
                        *ret_file = f;
                        return 1;
                }
        }
        return 0;
}

/* Returns the names of all files in s joined with ", " for errors (malloc'd). */
static char *set_display(const struct kc_set *s) {
        struct buf b = { 0 };
        buf_puts(&b, "");
        for (size_t i = 0; i < s->n; i++) {
                if (i) buf_puts(&b, ", ");
                buf_puts(&b, s->files[i].display);
        }
        return b.data;
}

/* Returns true when no file in s has any of the keys a kubeconfig is made of. */
static bool set_is_empty(const struct kc_set *s) {
        static const char *const keys[] = { "current-context", "contexts", "clusters", "users" };
        for (size_t i = 0; i < s->n; i++)
                for (size_t k = 0; k < ELEMENTSOF(keys); k++)
                        if (!node_is_null(map_get(s->files[i].root, keys[k]))) return false;
        return true;
}

/* Reads a file that the kubeconfig names (path already resolved). Returns 0 with the contents, or
 * a negative errno with *ret_error naming the kubeconfig, the key and the path. ENOENT becomes
 * -EINVAL so that only a missing configuration reads as -ENOENT. */
static int read_named_file(struct kc_set *s, const struct kc_file *f, const char *what, const char *key,
                           const char *path, char **ret, size_t *ret_len, char **ret_error) {
        if (s->flags & KUBE_CONFIG_NO_FILES)
                return errorf(ret_error, -EPERM, "%s: %s: \"%s\": reading files is disabled", f->display, what, key);
        int r = read_file_all(path, KUBECONFIG_MAX_SIZE, ret, ret_len);
        if (r < 0)
                return errorf(ret_error, r == -ENOENT ? -EINVAL : r, "%s: %s: \"%s\": cannot read %s: %s", f->display,
                              what, key, path, strerror(-r));
        return 0;
}

/* Loads PEM data from key_data (base64) or else key_file of mapping m into *ret. Returns 0 (with
 * *ret NULL when neither is set), or a negative errno with *ret_error. */
static int get_pem(struct kc_set *s, const struct kc_file *f, json_t *m, const char *what, const char *key_file,
                   const char *key_data, void **ret, size_t *ret_len, char **ret_path, char **ret_error) {
        _cleanup_free_ char *data = NULL, *file = NULL;
        int r;

        *ret = NULL;
        *ret_len = 0;
        if (ret_path) *ret_path = NULL;
        if ((r = get_string(m, key_data, &data, ret_error, "%s: %s:", f->display, what)) < 0) return r;
        if ((r = get_string(m, key_file, &file, ret_error, "%s: %s:", f->display, what)) < 0) return r;
        if (data) {
                /* as client-go: the -data field wins over the file */
                r = kube_base64_decode(data, strlen(data), ret, ret_len);
                explicit_bzero(data, strlen(data));
                if (r < 0)
                        return errorf(ret_error, -EINVAL, "%s: %s: \"%s\" is not valid base64", f->display, what,
                                      key_data);
                if (*ret_len == 0) {
                        free(*ret);
                        *ret = NULL;
                        return errorf(ret_error, -EINVAL, "%s: %s: \"%s\" is empty", f->display, what, key_data);
                }
                return 0;
        }
        if (file) {
                _cleanup_free_ char *path = resolve_path(f->dir, file);
                char *content;
                size_t len;
                if ((r = read_named_file(s, f, what, key_file, path, &content, &len, ret_error)) < 0) return r;
                *ret = content;
                *ret_len = len;
                if (ret_path) *ret_path = TAKE_PTR(path);
        }
        return 0;
}

/* ---- exec credential plugins: the spec (kube_exec_plugin.c runs it) ---- */

/* Frees what an exec credential plugin spec owns. */
static void exec_spec_done(struct kube_exec_spec *e) {
        free(e->api_version);
        free(e->command);
        free(e->install_hint);
        free(e->interactive_mode);
        for (char **a = e->args; a && *a; a++) free(*a);
        free(e->args);
        for (char **a = e->env; a && *a; a++) free_secret(*a, 0);
        free(e->env);
}

/* Reads the exec mapping of a user. Returns 0, or -EINVAL with *ret_error. */
static int exec_spec_parse(const struct kc_file *f, const char *user, json_t *m, struct kube_exec_spec *e,
                           char **ret_error) {
        _cleanup_free_ char *where = xasprintf("%s: user \"%s\": exec:", f->display, user);
        int r;

        if (!json_is_object(m)) return errorf(ret_error, -EINVAL, "%s must be a mapping", where);
        if ((r = get_string(m, "apiVersion", &e->api_version, ret_error, "%s", where)) < 0) return r;
        if ((r = get_string(m, "command", &e->command, ret_error, "%s", where)) < 0) return r;
        if ((r = get_string(m, "installHint", &e->install_hint, ret_error, "%s", where)) < 0) return r;
        if ((r = get_string(m, "interactiveMode", &e->interactive_mode, ret_error, "%s", where)) < 0) return r;
        if ((r = get_bool(m, "provideClusterInfo", &e->provide_cluster_info, ret_error, where)) < 0) return r;
        if (!e->command) return errorf(ret_error, -EINVAL, "%s \"command\" is not set", where);
        if (!e->api_version) return errorf(ret_error, -EINVAL, "%s \"apiVersion\" is not set", where);
        if (!streq(e->api_version, "client.authentication.k8s.io/v1") &&
            !streq(e->api_version, "client.authentication.k8s.io/v1beta1"))
                return errorf(ret_error, -EINVAL,
                              "%s apiVersion \"%s\" is not supported (client.authentication.k8s.io/v1 or v1beta1)",
                              where, e->api_version);
        if (e->interactive_mode && !streq(e->interactive_mode, "Never") && !streq(e->interactive_mode, "IfAvailable") &&
            !streq(e->interactive_mode, "Always"))
                return errorf(ret_error, -EINVAL, "%s invalid interactiveMode \"%s\" (Never, IfAvailable or Always)",
                              where, e->interactive_mode);
        if (e->interactive_mode && streq(e->interactive_mode, "Always"))
                return errorf(ret_error, -EINVAL,
                              "%s interactiveMode is Always, but gpunode runs the plugin without a terminal", where);

        json_t *args = map_get(m, "args");
        size_t n = 0;
        if (!node_is_null(args)) {
                if (!json_is_array(args)) return errorf(ret_error, -EINVAL, "%s \"args\" must be a list", where);
                n = json_array_size(args);
        }
        e->args = xcalloc(n + 1, sizeof(char *));
        if (n) {
                size_t it, i = 0;
                json_t *a;
                json_array_foreach(args, it, a) {
                        _cleanup_free_ char *w = xasprintf("%s an entry of \"args\"", where);
                        char *v;
                        if ((r = node_string(a, w, &v, ret_error)) < 0) return r;
                        e->args[i++] = v ? v : xstrdup("");
                }
        }

        json_t *env = map_get(m, "env");
        n = 0;
        if (!node_is_null(env)) {
                if (!json_is_array(env)) return errorf(ret_error, -EINVAL, "%s \"env\" must be a list", where);
                n = json_array_size(env);
        }
        e->env = xcalloc(n + 1, sizeof(char *));
        if (n) {
                size_t it, i = 0;
                json_t *a;
                json_array_foreach(env, it, a) {
                        _cleanup_free_ char *name = NULL, *value = NULL;
                        if (!json_is_object(a))
                                return errorf(ret_error, -EINVAL, "%s an entry of \"env\" is not a mapping", where);
                        if ((r = get_string(a, "name", &name, ret_error, "%s env:", where)) < 0) return r;
                        if ((r = get_string(a, "value", &value, ret_error, "%s env:", where)) < 0) return r;
                        if (!name || strchr(name, '='))
                                return errorf(ret_error, -EINVAL, "%s an entry of \"env\" has no valid name", where);
                        e->env[i++] = xasprintf("%s=%s", name, value ? value : "");
                        if (value) explicit_bzero(value, strlen(value));
                }
        }
        return 0;
}

/* ---- resolution ---- */

/* Fills c's server and TLS settings from cluster mapping m of file f. Returns 0 or a negative errno. */
static int resolve_cluster(struct kc_set *s, const struct kc_file *f, const char *name, json_t *m,
                           struct kube_config *c, char **ret_error) {
        _cleanup_free_ char *what = xasprintf("cluster \"%s\"", name);
        _cleanup_free_ char *server = NULL;
        int r;

        if ((r = get_string(m, "server", &server, ret_error, "%s: %s:", f->display, what)) < 0) return r;
        if (!server) return errorf(ret_error, -EINVAL, "%s: %s has no \"server\"", f->display, what);
        c->server = strstr(server, "://") ? TAKE_PTR(server) : xasprintf("https://%s", server);
        if (!startswith(c->server, "https://") && !startswith(c->server, "http://"))
                return errorf(ret_error, -EINVAL, "%s: %s: server \"%s\" is not an https:// URL", f->display, what,
                              c->server);
        /* the URL is handed to curl, which must see no whitespace or control characters */
        for (const char *p = c->server; *p; p++)
                if ((unsigned char)*p <= ' ' || *p == 0x7f)
                        return errorf(ret_error, -EINVAL, "%s: %s: server contains a space or control character",
                                      f->display, what);
        while (strlen(c->server) > strlen("https://") && c->server[strlen(c->server) - 1] == '/')
                c->server[strlen(c->server) - 1] = 0;

        if ((r = get_pem(s, f, m, what, "certificate-authority", "certificate-authority-data", &c->ca_pem,
                         &c->ca_pem_len, &c->ca_file, ret_error)) < 0)
                return r;
        _cleanup_free_ char *where = xasprintf("%s: %s:", f->display, what);
        if ((r = get_bool(m, "insecure-skip-tls-verify", &c->insecure, ret_error, where)) < 0) return r;
        if (c->insecure && c->ca_pem)
                return errorf(ret_error, -EINVAL,
                              "%s: %s: a certificate authority together with insecure-skip-tls-verify is not allowed",
                              f->display, what);
        if ((r = get_string(m, "tls-server-name", &c->tls_server_name, ret_error, "%s", where)) < 0) return r;
        if ((r = get_string(m, "proxy-url", &c->proxy_url, ret_error, "%s", where)) < 0) return r;
        for (const char *p = c->tls_server_name; p && *p; p++)
                if ((unsigned char)*p <= ' ' || *p == ':' || *p == '/' || *p == 0x7f)
                        return errorf(ret_error, -EINVAL, "%s \"tls-server-name\" is not a host name", where);
        return 0;
}

/* Fills c's credentials from user mapping m of file f (running an exec plugin when it names one).
 * Returns 0 or a negative errno. */
static int resolve_user(struct kc_set *s, const struct kc_file *f, const char *name, json_t *m, struct kube_config *c,
                        char **ret_error) {
        _cleanup_free_ char *what = xasprintf("user \"%s\"", name);
        _cleanup_free_ char *where = xasprintf("%s: %s:", f->display, what);
        _cleanup_free_ char *token_file = NULL;
        int r;

        if (!m) return 0; /* a user with no credentials: anonymous */
        if ((r = get_string(m, "token", &c->token, ret_error, "%s", where)) < 0) return r;
        if ((r = get_string(m, "tokenFile", &token_file, ret_error, "%s", where)) < 0) return r;
        if (!c->token && token_file) {
                _cleanup_free_ char *path = resolve_path(f->dir, token_file);
                char *t;
                size_t len;
                if ((r = read_named_file(s, f, what, "tokenFile", path, &t, &len, ret_error)) < 0) return r;
                c->token = t;
                strstrip_right(c->token);
                if (!c->token[0] || strpbrk(c->token, "\r\n"))
                        return errorf(ret_error, -EINVAL, "%s tokenFile %s holds no single-line token", where, path);
        }
        if ((r = get_string(m, "username", &c->username, ret_error, "%s", where)) < 0) return r;
        if ((r = get_string(m, "password", &c->password, ret_error, "%s", where)) < 0) return r;
        if (c->token && (c->username || c->password))
                return errorf(ret_error, -EINVAL,
                              "%s both a token and a username/password are set; only one is allowed", where);
        if (c->token)
                for (const char *p = c->token; *p; p++)
                        if ((unsigned char)*p < ' ' || *p == 0x7f)
                                return errorf(ret_error, -EINVAL, "%s the token contains a control character", where);

        if ((r = get_pem(s, f, m, what, "client-certificate", "client-certificate-data", &c->cert_pem, &c->cert_pem_len,
                         NULL, ret_error)) < 0)
                return r;
        if ((r = get_pem(s, f, m, what, "client-key", "client-key-data", &c->key_pem, &c->key_pem_len, NULL,
                         ret_error)) < 0)
                return r;
        if (!!c->cert_pem != !!c->key_pem)
                return errorf(ret_error, -EINVAL, "%s a client %s is set without a client %s", where,
                              c->cert_pem ? "certificate" : "key", c->cert_pem ? "key" : "certificate");

        json_t *ap = map_get(m, "auth-provider");
        if (!node_is_null(ap)) {
                _cleanup_free_ char *apname = NULL;
                if ((r = get_string(ap, "name", &apname, ret_error, "%s auth-provider:", where)) < 0) return r;
                if (apname && streq(apname, "oidc")) {
                        /* the id-token it cached is a bearer token; refreshing it is kubectl's job */
                        _cleanup_free_ char *idt = NULL;
                        if ((r = get_string(map_get(ap, "config"), "id-token", &idt, ret_error,
                                            "%s auth-provider config:", where)) < 0)
                                return r;
                        if (!idt)
                                return errorf(ret_error, -EINVAL,
                                              "%s auth-provider oidc has no id-token; run kubectl once to log in",
                                              where);
                        if (!c->token)
                                c->token = TAKE_PTR(idt);
                        else
                                explicit_bzero(idt, strlen(idt));
                } else
                        return errorf(ret_error, -EINVAL,
                                      "%s auth-provider \"%s\" is not supported (removed from kubectl); use an exec "
                                      "plugin such as gke-gcloud-auth-plugin or kubelogin",
                                      where, apname ? apname : "");
        }

        json_t *ex = map_get(m, "exec");
        if (!node_is_null(ex)) {
                struct kube_exec_spec e = { 0 };
                r = exec_spec_parse(f, name, ex, &e, ret_error);
                if (r >= 0 && (s->flags & KUBE_CONFIG_NO_EXEC))
                        r = errorf(ret_error, -EPERM, "%s: user \"%s\": exec plugins are disabled", f->display, name);
                if (r >= 0) r = kube_exec_plugin_run(&e, f->display, f->dir, name, s->timeout_ms, c, ret_error);
                exec_spec_done(&e);
                if (r < 0) return r;
        }
        return 0;
}

/* Resolves the context ctxname (NULL: current-context) of the merged set s into *ret. Returns 0,
 * -ENOENT when s holds no configuration at all, or another negative errno with *ret_error. */
static int kc_set_resolve(struct kc_set *s, const char *ctxname, struct kube_config **ret, char **ret_error) {
        _cleanup_free_ char *all = set_display(s);
        _cleanup_free_ char *current = NULL;
        _cleanup_kube_config_ struct kube_config *c = NULL;
        int r;

        if (!ctxname) {
                for (size_t i = 0; i < s->n && !current; i++)
                        if ((r = get_string(s->files[i].root, "current-context", &current, ret_error,
                                            "%s:", s->files[i].display)) < 0)
                                return r;
                if (!current) {
                        if (set_is_empty(s)) return errorf(ret_error, -ENOENT, "%s: the kubeconfig is empty", all);
                        return errorf(ret_error, -EINVAL, "%s: \"current-context\" is not set", all);
                }
                ctxname = current;
        }

        json_t *ctx = NULL, *cluster = NULL, *user = NULL;
        struct kc_file *cf = NULL, *clf = NULL, *uf = NULL;
        r = find_named(s, "contexts", "context", ctxname, &ctx, &cf, ret_error);
        if (r < 0) return r;
        if (r == 0) return errorf(ret_error, -EINVAL, "%s: context \"%s\" is not defined", all, ctxname);
        _cleanup_free_ char *where = xasprintf("%s: context \"%s\":", cf->display, ctxname);
        _cleanup_free_ char *clname = NULL, *uname = NULL, *ns = NULL;
        if ((r = get_string(ctx, "cluster", &clname, ret_error, "%s", where)) < 0) return r;
        if ((r = get_string(ctx, "user", &uname, ret_error, "%s", where)) < 0) return r;
        if ((r = get_string(ctx, "namespace", &ns, ret_error, "%s", where)) < 0) return r;
        if (!clname) return errorf(ret_error, -EINVAL, "%s: context \"%s\" names no cluster", cf->display, ctxname);

        r = find_named(s, "clusters", "cluster", clname, &cluster, &clf, ret_error);
        if (r < 0) return r;
        if (r == 0)
                return errorf(ret_error, -EINVAL, "%s: context \"%s\" names cluster \"%s\" that is not defined",
                              cf->display, ctxname, clname);
        if (uname) {
                r = find_named(s, "users", "user", uname, &user, &uf, ret_error);
                if (r < 0) return r;
                if (r == 0)
                        return errorf(ret_error, -EINVAL, "%s: context \"%s\" names user \"%s\" that is not defined",
                                      cf->display, ctxname, uname);
        }

        c = xcalloc(1, sizeof *c);
        c->context = xstrdup(ctxname);
        c->namespace = ns ? TAKE_PTR(ns) : xstrdup("default");
        c->source = xstrdup(all);
        if (!cluster) return errorf(ret_error, -EINVAL, "%s: cluster \"%s\" has no \"server\"", clf->display, clname);
        if ((r = resolve_cluster(s, clf, clname, cluster, c, ret_error)) < 0) return r;
        if (uname && (r = resolve_user(s, uf, uname, user, c, ret_error)) < 0) return r;

        *ret = TAKE_PTR(c);
        return 0;
}

/* Resolves a kubeconfig held in memory. Returns 0 and *ret, or a negative errno with *ret_error
 * (see kubeconfig.h). */
int kube_config_from_yaml(const char *data, size_t len, const char *source, const char *dir, const char *context,
                          unsigned flags, unsigned timeout_ms, struct kube_config **ret, char **ret_error) {
        struct kc_set s = { .flags = flags, .timeout_ms = timeout_ms };
        char *text = xmalloc(len + 1);
        memcpy(text, data, len);
        text[len] = 0;
        s.files = xcalloc(1, sizeof(struct kc_file));
        s.n = 1;
        int r = kc_file_parse(text, len, source ? source : "kubeconfig", dir, &s.files[0], ret_error);
        if (r >= 0) r = kc_set_resolve(&s, context, ret, ret_error);
        kc_set_done(&s);
        return r;
}

/* Reads and parses the kubeconfig at path into a new entry of s. Returns 0; -ENOENT (no message)
 * when the file does not exist and missing_ok; else a negative errno with *ret_error. */
static int kc_set_add_file(struct kc_set *s, const char *path, bool missing_ok, char **ret_error) {
        _cleanup_free_ char *display = display_path(path);
        char *text;
        size_t len;
        int r = read_file_all(path, KUBECONFIG_MAX_SIZE, &text, &len);
        if (r == -ENOENT && missing_ok) return -ENOENT;
        if (r < 0) return errorf(ret_error, r == -ENOENT ? -EINVAL : r, "%s: cannot read: %s", display, strerror(-r));
        _cleanup_free_ char *dir = dir_of(path);
        s->files = xrealloc(s->files, (s->n + 1) * sizeof(struct kc_file));
        r = kc_file_parse(text, len, display, dir, &s->files[s->n], ret_error);
        s->n++; /* parsed or not, the entry owns text now */
        return r;
}

/* Builds the in-cluster configuration. Returns 0 and *ret; -ENOENT when the service variables or
 * the token are absent; another negative errno with *ret_error. */
int kube_config_in_cluster(const char *sa_dir, struct kube_config **ret, char **ret_error) {
        const char *host = getenv("KUBERNETES_SERVICE_HOST");
        const char *port = getenv("KUBERNETES_SERVICE_PORT");
        if (!sa_dir) sa_dir = KUBE_SERVICE_ACCOUNT_DIR;
        if (!host || !*host || !port || !*port)
                return errorf(ret_error, -ENOENT, "not in a pod: KUBERNETES_SERVICE_HOST/PORT are not set");
        for (const char *p = host; *p; p++)
                if ((unsigned char)*p <= ' ' || *p == '/' || *p == '@')
                        return errorf(ret_error, -EINVAL, "KUBERNETES_SERVICE_HOST is not a host name or address");
        uint64_t portnum;
        if (parse_u64(port, 10, &portnum) < 0 || portnum == 0 || portnum > 65535)
                return errorf(ret_error, -EINVAL, "KUBERNETES_SERVICE_PORT \"%s\" is not a port number", port);

        _cleanup_free_ char *tpath = xasprintf("%s/token", sa_dir);
        char *token;
        size_t len;
        int r = read_file_all(tpath, KUBECONFIG_MAX_SIZE, &token, &len);
        if (r == -ENOENT)
                return errorf(ret_error, -ENOENT,
                              "in a pod, but %s does not exist (automountServiceAccountToken: false?)", tpath);
        if (r < 0) return errorf(ret_error, r, "%s: cannot read: %s", tpath, strerror(-r));

        _cleanup_kube_config_ struct kube_config *c = xcalloc(1, sizeof *c);
        c->token = token;
        strstrip_right(c->token);
        if (!c->token[0] || strpbrk(c->token, "\r\n"))
                return errorf(ret_error, -EINVAL, "%s holds no single-line token", tpath);
        /* an IPv6 address goes in brackets, as Go's net.JoinHostPort does */
        c->server =
                strchr(host, ':') ? xasprintf("https://[%s]:%s", host, port) : xasprintf("https://%s:%s", host, port);

        _cleanup_free_ char *capath = xasprintf("%s/ca.crt", sa_dir);
        char *ca;
        r = read_file_all(capath, KUBECONFIG_MAX_SIZE, &ca, &c->ca_pem_len);
        if (r >= 0) {
                c->ca_pem = ca;
                c->ca_file = TAKE_PTR(capath);
        } else if (r != -ENOENT)
                return errorf(ret_error, r, "%s: cannot read: %s", capath, strerror(-r));

        _cleanup_free_ char *nspath = xasprintf("%s/namespace", sa_dir);
        char *ns;
        if (read_file_all(nspath, 4096, &ns, &len) >= 0) {
                strstrip_right(ns);
                if (*ns)
                        c->namespace = ns;
                else
                        free(ns);
        }
        if (!c->namespace) c->namespace = xstrdup("default");
        c->source = xstrdup("in-cluster");
        *ret = TAKE_PTR(c);
        return 0;
}

/* Loads credentials as kubectl does, with context instead of current-context when not NULL.
 * Returns 0 and *ret; -ENOENT when no configuration exists; another negative errno with *ret_error. */
int kube_config_load_context(const char *kubeconfig_path, const char *context, unsigned timeout_ms,
                             struct kube_config **ret, char **ret_error) {
        struct kc_set s = { .timeout_ms = timeout_ms };
        int r = 0;

        if (kubeconfig_path) {
                /* --kubeconfig names one file that must exist */
                r = kc_set_add_file(&s, kubeconfig_path, false, ret_error);
                if (r >= 0) {
                        r = kc_set_resolve(&s, context, ret, ret_error);
                        if (r == -ENOENT) r = -EINVAL; /* an explicit but empty file is an error */
                }
                kc_set_done(&s);
                return r;
        }

        const char *env = getenv("KUBECONFIG");
        if (env && *env) {
                _cleanup_free_ char *list = xstrdup(env);
                char *save = NULL;
                for (char *p = strtok_r(list, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
                        bool dup = false;
                        for (size_t i = 0; i < s.n; i++) {
                                _cleanup_free_ char *d = display_path(p);
                                if (streq(s.files[i].display, d)) dup = true;
                        }
                        if (dup) continue;
                        r = kc_set_add_file(&s, p, true, ret_error);
                        if (r == -ENOENT) continue;
                        if (r < 0) goto done;
                }
        } else {
                const char *home = getenv("HOME");
                if (!home || !*home) {
                        struct passwd *pw = getpwuid(getuid());
                        home = pw ? pw->pw_dir : NULL;
                }
                if (home) {
                        _cleanup_free_ char *path = xasprintf("%s/.kube/config", home);
                        r = kc_set_add_file(&s, path, true, ret_error);
                        if (r < 0 && r != -ENOENT) goto done;
                }
        }

        if (s.n > 0 && !set_is_empty(&s)) {
                r = kc_set_resolve(&s, context, ret, ret_error);
                goto done;
        }

        /* no kubeconfig: as client-go, fall back to the pod's service account */
        r = kube_config_in_cluster(NULL, ret, ret_error);
        if (r == -ENOENT && !getenv("KUBERNETES_SERVICE_HOST")) {
                if (ret_error) {
                        free(*ret_error);
                        *ret_error = NULL;
                }
                r = errorf(ret_error, -ENOENT,
                           "no kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config) and not in a pod");
        }
done:
        kc_set_done(&s);
        return r;
}

/* As kube_config_load_context() with current-context. Returns as it does. */
int kube_config_load(const char *kubeconfig_path, unsigned timeout_ms, struct kube_config **ret, char **ret_error) {
        return kube_config_load_context(kubeconfig_path, NULL, timeout_ms, ret, ret_error);
}
