/* net_replay.c: the recorder and replayer of API and metrics exchanges, and api/INDEX.json's writer and
 * (hostile-input-proof) parser. */
#include "kube/net_replay.h"

#include "basic/hostfs.h"
#include "basic/util.h"

#include <ctype.h>
#include <fcntl.h>
#include <jansson.h>
#include <sys/stat.h>

#define INDEX_SCHEMA "gpunode.snapshot-api/v1"

/* The installed recorder and replayer (one run of the probes at a time). */
static struct net_log *recorder, *replayer;

/* Error classes, in the index, for the negative errnos the clients return. */
static const struct {
        const char *name;
        int rc;
} classes[] = {
        { "timeout", -ETIMEDOUT },
        { "refused", -ECONNREFUSED },
        { "unreachable", -EHOSTUNREACH },
        { "tls", -EPROTO },
        { "unauthorized", -EACCES },
        { "forbidden", -EPERM },
        { "not-found", -ENOENT },
        { "io", -EIO },
        { "too-big", -EFBIG },
        { "not-json", -EBADMSG },
        { "invalid", -EINVAL },
        { "no-memory", -ENOMEM },
        { "unsupported", -ENOTSUP },
        { "no-data", -ENODATA },
        { "tls-verify", -EKEYREJECTED },
        { "exec-plugin", -ENOEXEC },
};

const char *net_error_class(int rc) {
        for (size_t i = 0; i < ELEMENTSOF(classes); i++)
                if (classes[i].rc == rc) return classes[i].name;
        return "other";
}

struct net_log *net_log_new(void) {
        return xcalloc(1, sizeof(struct net_log));
}

void net_log_free(struct net_log *log) {
        if (!log) return;
        if (recorder == log) recorder = NULL;
        if (replayer == log) replayer = NULL;
        free(log->options.node);
        free(log->options.operator_namespace);
        free(log->options.dcgm_url);
        free(log->options.node_exporter_url);
        free(log->setup.error);
        free(log->setup.server);
        free(log->setup.source);
        for (size_t i = 0; i < log->n; i++) {
                free(log->v[i].request);
                free(log->v[i].error);
                free(log->v[i].member);
                free(log->v[i].body);
        }
        free(log->v);
        free(log->dir);
        free(log);
}

char *net_strip_url_credentials(const char *s) {
        if (!s) return NULL;
        struct buf b = { 0 };
        const char *p = s;
        for (;;) {
                const char *sep = strstr(p, "://");
                if (!sep) break;
                const char *auth = sep + 3;
                size_t n = strcspn(auth, "/?# \t\n\"'");
                const char *at = memchr(auth, '@', n);
                if (!at) {
                        buf_append(&b, p, (size_t)(auth - p));
                        p = auth;
                        continue;
                }
                /* the last '@' before the host ends the user information */
                for (const char *q = at; q < auth + n; q++)
                        if (*q == '@') at = q;
                buf_append(&b, p, (size_t)(auth - p));
                buf_puts(&b, "REDACTED");
                p = at;
        }
        buf_puts(&b, p);
        return b.data ? b.data : xstrdup("");
}

/* Returns a copy of s fit for the index: URL credentials replaced, valid UTF-8 (NULL for NULL). */
static char *clean(const char *s) {
        if (!s) return NULL;
        _cleanup_free_ char *t = net_strip_url_credentials(s);
        return utf8_sanitize(t);
}

void net_log_set_options(struct net_log *log, const char *node, unsigned timeout_ms, const char *operator_namespace,
                         const char *dcgm_url, const char *node_exporter_url) {
        struct net_options *o = &log->options;
        free(o->node);
        free(o->operator_namespace);
        free(o->dcgm_url);
        free(o->node_exporter_url);
        o->node = clean(node);
        o->timeout_ms = timeout_ms;
        o->operator_namespace = operator_namespace && *operator_namespace ? clean(operator_namespace) : NULL;
        o->dcgm_url = dcgm_url && *dcgm_url ? clean(dcgm_url) : NULL;
        o->node_exporter_url = node_exporter_url && *node_exporter_url ? clean(node_exporter_url) : NULL;
}

void net_record_to(struct net_log *log) {
        recorder = log;
}

void net_replay_from(struct net_log *log) {
        replayer = log;
}

bool net_replaying(void) {
        return replayer != NULL;
}

/* Returns the member name for exchange number i (from 1) of request: api/NNNN-<request as a name>.<ext>. */
static char *member_name(size_t i, enum net_kind kind, const char *request) {
        struct buf b = { 0 };
        buf_printf(&b, "api/%04zu-%s", i, kind == NET_API ? "" : kind == NET_GRPC ? "grpc-" : "metrics-");
        const char *p = kind == NET_METRICS && strstr(request, "://") ? strstr(request, "://") + 3 : request;
        size_t n = 0;
        bool dash = true; /* no leading or doubled dashes */
        for (; *p && n < 60; p++) {
                char c = *p;
                if (isalnum((unsigned char)c) || c == '.' || c == '_') {
                        buf_append(&b, &c, 1);
                        dash = false;
                        n++;
                } else if (!dash) {
                        buf_append(&b, "-", 1);
                        dash = true;
                        n++;
                }
        }
        while (b.len > 0 && (b.data[b.len - 1] == '-' || b.data[b.len - 1] == '.')) b.data[--b.len] = 0;
        buf_puts(&b, kind == NET_METRICS ? ".txt" : ".json");
        return b.data;
}

void net_record(enum net_kind kind, const char *request, int rc, long status, const char *body, size_t len,
                const char *error) {
        struct net_log *log = recorder;
        if (!log || log->n >= NET_EXCHANGES_MAX) return;
        log->v = xrealloc(log->v, (log->n + 1) * sizeof *log->v);
        struct net_exchange *x = &log->v[log->n++];
        *x = (struct net_exchange){ .kind = kind, .rc = rc, .status = status };
        x->request = clean(request ? request : "");
        if (strlen(x->request) > NET_REQUEST_MAX) x->request[NET_REQUEST_MAX] = 0;
        if (rc < 0) {
                x->error = clean(error ? error : strerror(-rc));
                if (strlen(x->error) > NET_MESSAGE_MAX) x->error[NET_MESSAGE_MAX] = 0;
        }
        if (body || rc == 0) {
                if (len > NET_BODY_MAX) len = NET_BODY_MAX;
                x->body = xmalloc(len + 1);
                if (len) memcpy(x->body, body, len);
                x->body[len] = 0;
                x->len = len;
                x->member = member_name(log->n, kind, x->request);
        }
}

void net_record_setup(int rc, const char *error, const char *server, const char *source) {
        struct net_log *log = recorder;
        if (!log) return;
        struct net_setup *s = &log->setup;
        free(s->error);
        free(s->server);
        free(s->source);
        *s = (struct net_setup){ .recorded = true, .rc = rc };
        if (rc < 0) s->error = clean(error ? error : strerror(-rc));
        s->server = clean(server);
        s->source = clean(source);
}

/* Reads x's member from the snapshot folder into x->body. Returns 0 or -errno with *ret_error. */
static int load_body(const struct net_log *log, struct net_exchange *x, char **ret_error) {
        if (x->body) return 0;
        if (!log->dir) {
                *ret_error = xasprintf("%s: the snapshot folder is not known", x->member);
                return -ENOENT;
        }
        _cleanup_free_ char *p = xasprintf("%s/%s", log->dir, x->member);
        _cleanup_close_ int fd = open(p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        int r = fd < 0 ? -errno : fstat(fd, &st) < 0 ? -errno : !S_ISREG(st.st_mode) ? -EINVAL : 0;
        if (r == 0 && (uint64_t)st.st_size > NET_BODY_MAX) r = -EFBIG;
        if (r == 0) r = hostfs_read_fd(fd, NET_BODY_MAX, &x->body, &x->len);
        if (r < 0) {
                *ret_error = xasprintf("the snapshot's %s (named in api/INDEX.json) cannot be read: %s", x->member,
                                       r == -ENOENT ? "not in the archive" : strerror(-r));
                return r;
        }
        return 0;
}

int net_replay(enum net_kind kind, const char *request, const char *shown, const char **ret_body, size_t *ret_len,
               long *ret_status, char **ret_error) {
        struct net_log *log = replayer;
        struct net_exchange *x = NULL, *last = NULL;
        *ret_status = 0;
        for (size_t i = 0; log && i < log->n; i++) {
                struct net_exchange *e = &log->v[i];
                if (e->kind != kind || !streq(e->request, request)) continue;
                if (!e->answered) {
                        x = e;
                        break;
                }
                last = e;
        }
        if (!x) x = last;
        if (!x) {
                *ret_error = xasprintf("%s %s: not in the snapshot (gpunode collect did not %s on the node)",
                                       kind == NET_GRPC ? "call" : "GET", shown ? shown : request,
                                       kind == NET_API    ? "ask the API for it"
                                       : kind == NET_GRPC ? "make it"
                                                          : "fetch it");
                return NET_NOT_RECORDED;
        }
        x->answered = true;
        *ret_status = x->status;
        if (x->rc < 0) {
                *ret_error = xstrdup(x->error ? x->error : strerror(-x->rc));
                return x->rc;
        }
        int r = load_body(log, x, ret_error);
        if (r < 0) return r;
        *ret_body = x->body;
        *ret_len = x->len;
        return 0;
}

int net_replay_setup(char **ret_server, char **ret_source, char **ret_error) {
        const struct net_log *log = replayer;
        *ret_server = *ret_source = NULL;
        if (!log || !log->setup.recorded) {
                *ret_error = xstrdup("the snapshot holds no Kubernetes API answers (collected without them)");
                return NET_NOT_RECORDED;
        }
        const struct net_setup *s = &log->setup;
        *ret_server = s->server ? xstrdup(s->server) : NULL;
        *ret_source = s->source ? xstrdup(s->source) : NULL;
        if (s->rc < 0) *ret_error = xstrdup(s->error ? s->error : strerror(-s->rc));
        return s->rc;
}

/* Returns the index's name of a kind ("api", "metrics", "grpc"). */
static const char *kind_name(enum net_kind kind) {
        return kind == NET_API ? "api" : kind == NET_GRPC ? "grpc" : "metrics";
}

/* Returns the index's {class, message} object for rc and error (a new reference), or null for 0. */
static json_t *error_json(int rc, const char *error) {
        if (rc >= 0) return json_null();
        const char *c = net_error_class(rc);
        json_t *e = json_pack("{s:s,s:s}", "class", c, "message", error ? error : "");
        if (!e) return json_null();
        if (streq(c, "other")) json_object_set_new(e, "errno", json_integer(-rc));
        return e;
}

int net_log_to_index(const struct net_log *log, char **ret) {
        const struct net_options *o = &log->options;
        json_t *root = json_object();
        json_object_set_new(root, "schema", json_string(INDEX_SCHEMA));
        json_t *opts = json_pack("{s:s?,s:I,s:s?,s:s?,s:s?}", "node", o->node, "timeout_ms", (json_int_t)o->timeout_ms,
                                 "operator_namespace", o->operator_namespace, "dcgm_url", o->dcgm_url,
                                 "node_exporter_url", o->node_exporter_url);
        json_object_set_new(root, "options", opts ? opts : json_null());
        const struct net_setup *s = &log->setup;
        json_t *setup = s->recorded ? json_pack("{s:o,s:s?,s:s?}", "error", error_json(s->rc, s->error), "server",
                                                s->server, "source", s->source)
                                    : NULL;
        json_object_set_new(root, "setup", setup ? setup : json_null());
        json_t *xs = json_array();
        for (size_t i = 0; i < log->n; i++) {
                const struct net_exchange *x = &log->v[i];
                json_t *e =
                        json_pack("{s:s,s:s,s:I,s:o,s:s?}", "kind", kind_name(x->kind), "request", x->request, "status",
                                  (json_int_t)x->status, "error", error_json(x->rc, x->error), "member", x->member);
                if (!e) {
                        json_decref(xs);
                        json_decref(root);
                        return -ENOMEM;
                }
                json_array_append_new(xs, e);
        }
        json_object_set_new(root, "exchanges", xs);
        *ret = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        json_decref(root);
        return *ret ? 0 : -ENOMEM;
}

/* Sets *ret_error to the formatted sentence (prefixed "api/INDEX.json: "). Returns r. */
_printf_(3, 4) static int bad(char **ret_error, int r, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        char *s = NULL;
        if (vasprintf(&s, fmt, ap) < 0) s = NULL;
        va_end(ap);
        *ret_error = xasprintf("api/INDEX.json: %s", s ? s : "invalid");
        free(s);
        return r;
}

/* Returns true when s is printable text of at most max bytes (no control characters). */
static bool text_ok(const char *s, size_t max, bool allow_newlines) {
        size_t n = 0;
        for (const unsigned char *p = (const unsigned char *)s; *p; p++, n++) {
                if (n >= max) return false;
                if ((*p < ' ' && !(allow_newlines && (*p == '\n' || *p == '\t'))) || *p == 0x7f) return false;
        }
        return true;
}

/* Returns true when s is a member name the writer makes: "api/" then [A-Za-z0-9._-], no "..", ending .json or .txt. */
static bool member_ok(const char *s) {
        const char *rest = startswith(s, "api/");
        if (!rest || !*rest || strlen(rest) > 200 || strstr(rest, "..") || streq(rest, "INDEX.json")) return false;
        for (const char *p = rest; *p; p++)
                if (!(isalnum((unsigned char)*p) || *p == '.' || *p == '_' || *p == '-')) return false;
        size_t n = strlen(rest);
        return (n > 5 && streq(rest + n - 5, ".json")) || (n > 4 && streq(rest + n - 4, ".txt"));
}

/* Reads an optional string field: NULL or absent gives NULL. Returns 0 with *ret, or -EINVAL. */
static int opt_string(const json_t *obj, const char *key, size_t max, char **ret) {
        json_t *v = json_object_get(obj, key);
        *ret = NULL;
        if (!v || json_is_null(v)) return 0;
        if (!json_is_string(v) || !text_ok(json_string_value(v), max, false)) return -EINVAL;
        *ret = xstrdup(json_string_value(v));
        return 0;
}

/* Parses an {class, message[, errno]} object (or null: rc 0). Returns 0 with *ret_rc and *ret_message, or -EINVAL. */
static int parse_error(const json_t *e, int *ret_rc, char **ret_message) {
        *ret_rc = 0;
        *ret_message = NULL;
        if (!e || json_is_null(e)) return 0;
        if (!json_is_object(e)) return -EINVAL;
        const char *c = json_string_value(json_object_get(e, "class"));
        const char *m = json_string_value(json_object_get(e, "message"));
        if (!c || !m || !text_ok(m, NET_MESSAGE_MAX, true)) return -EINVAL;
        int rc = 0;
        for (size_t i = 0; i < ELEMENTSOF(classes); i++)
                if (streq(c, classes[i].name)) rc = classes[i].rc;
        if (streq(c, "other")) {
                json_t *n = json_object_get(e, "errno");
                if (!json_is_integer(n) || json_integer_value(n) < 1 || json_integer_value(n) > 4095) return -EINVAL;
                rc = -(int)json_integer_value(n);
        }
        if (rc == 0) return -EINVAL;
        *ret_rc = rc;
        *ret_message = xstrdup(m);
        return 0;
}

/* Parses the "options" object into o. Returns 0 or -EINVAL. */
static int parse_options(const json_t *j, struct net_options *o) {
        if (!j || json_is_null(j)) return 0;
        if (!json_is_object(j)) return -EINVAL;
        json_t *t = json_object_get(j, "timeout_ms");
        if (t && !(json_is_integer(t) && json_integer_value(t) >= 0 && json_integer_value(t) <= 600000)) return -EINVAL;
        o->timeout_ms = t ? (unsigned)json_integer_value(t) : 0;
        if (opt_string(j, "node", 253, &o->node) < 0 ||
            opt_string(j, "operator_namespace", 253, &o->operator_namespace) < 0 ||
            opt_string(j, "dcgm_url", NET_REQUEST_MAX, &o->dcgm_url) < 0 ||
            opt_string(j, "node_exporter_url", NET_REQUEST_MAX, &o->node_exporter_url) < 0)
                return -EINVAL;
        return 0;
}

/* Parses the "setup" object into s. Returns 0 or -EINVAL. */
static int parse_setup(const json_t *j, struct net_setup *s) {
        if (!j || json_is_null(j)) return 0;
        if (!json_is_object(j)) return -EINVAL;
        s->recorded = true;
        if (parse_error(json_object_get(j, "error"), &s->rc, &s->error) < 0 ||
            opt_string(j, "server", NET_REQUEST_MAX, &s->server) < 0 ||
            opt_string(j, "source", NET_REQUEST_MAX, &s->source) < 0)
                return -EINVAL;
        return 0;
}

/* Parses one exchange. Returns 0 or -EINVAL with a constant reason in *ret_why. */
static int parse_exchange(const json_t *j, struct net_exchange *x, const char **ret_why) {
        if (!json_is_object(j)) return *ret_why = "not an object", -EINVAL;
        const char *kind = json_string_value(json_object_get(j, "kind"));
        if (!kind || !(streq(kind, "api") || streq(kind, "metrics") || streq(kind, "grpc")))
                return *ret_why = "kind is not api, metrics or grpc", -EINVAL;
        x->kind = streq(kind, "api") ? NET_API : streq(kind, "grpc") ? NET_GRPC : NET_METRICS;
        const char *req = json_string_value(json_object_get(j, "request"));
        /* API paths and gRPC methods ("/service/method") start with a slash and hold no space */
        if (!req || !*req || !text_ok(req, NET_REQUEST_MAX, false) ||
            (x->kind != NET_METRICS && (req[0] != '/' || strchr(req, ' '))))
                return *ret_why = "request missing, too long, or with control characters", -EINVAL;
        x->request = xstrdup(req);
        json_t *st = json_object_get(j, "status");
        if (st && !(json_is_integer(st) && json_integer_value(st) >= 0 && json_integer_value(st) <= 999))
                return *ret_why = "status is not an HTTP status", -EINVAL;
        x->status = st ? (long)json_integer_value(st) : 0;
        if (parse_error(json_object_get(j, "error"), &x->rc, &x->error) < 0)
                return *ret_why = "error is not {class, message} with a known class", -EINVAL;
        json_t *m = json_object_get(j, "member");
        if (m && !json_is_null(m)) {
                if (!json_is_string(m) || !member_ok(json_string_value(m)))
                        return *ret_why = "member is not a file name below api/ (.json or .txt, no \"..\")", -EINVAL;
                x->member = xstrdup(json_string_value(m));
        }
        if (x->rc == 0 && !x->member) return *ret_why = "an answer without a member holding its body", -EINVAL;
        return 0;
}

int net_log_from_index(const char *text, size_t len, struct net_log **ret, char **ret_error) {
        if (len > NET_INDEX_MAX_BYTES)
                return bad(ret_error, -EFBIG, "larger than %zu bytes (%zu), refused", NET_INDEX_MAX_BYTES, len);
        json_error_t jerr;
        json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!root) return bad(ret_error, -EINVAL, "not JSON (line %d: %s)", jerr.line, jerr.text);
        int r = 0;
        struct net_log *log = net_log_new();
        const char *schema = json_string_value(json_object_get(root, "schema"));
        json_t *xs = json_object_get(root, "exchanges");
        if (!json_is_object(root) || !schema || !streq(schema, INDEX_SCHEMA)) {
                r = bad(ret_error, -EINVAL, "not a gpunode API index (schema %s expected)", INDEX_SCHEMA);
                goto out;
        }
        if (!json_is_array(xs)) {
                r = bad(ret_error, -EINVAL, "no exchanges array");
                goto out;
        }
        if (json_array_size(xs) > NET_EXCHANGES_MAX) {
                r = bad(ret_error, -E2BIG, "%zu exchanges, more than the %u allowed", json_array_size(xs),
                        NET_EXCHANGES_MAX);
                goto out;
        }
        if (parse_options(json_object_get(root, "options"), &log->options) < 0) {
                r = bad(ret_error, -EINVAL,
                        "options: not {node, timeout_ms, operator_namespace, dcgm_url, node_exporter_url}");
                goto out;
        }
        if (parse_setup(json_object_get(root, "setup"), &log->setup) < 0) {
                r = bad(ret_error, -EINVAL, "setup: not {error, server, source}");
                goto out;
        }
        log->v = xcalloc(json_array_size(xs) ? json_array_size(xs) : 1, sizeof *log->v);
        for (size_t i = 0; i < json_array_size(xs); i++) {
                const char *why = NULL;
                log->n = i + 1;
                if (parse_exchange(json_array_get(xs, i), &log->v[i], &why) < 0) {
                        r = bad(ret_error, -EINVAL, "exchange %zu: %s", i + 1, why);
                        goto out;
                }
        }
out:
        json_decref(root);
        if (r < 0) {
                net_log_free(log);
                return r;
        }
        *ret = log;
        return 0;
}
