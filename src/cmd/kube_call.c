/* kube_call.c: `gpunode kube-call`: one Kubernetes API request as the agent makes it, its outcome as one JSON object
 * (so that libcurl stays out of the agent). */
#include "cmd/commands.h"
#include "cmd/options.h"
#include "basic/util.h"
#include "kube/kube_client.h"
#include "kube/kubeconfig.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <unistd.h>

#define KUBE_CALL_BODY_MAX ((size_t)1 << 20) /* a request body (stdin) larger than this is refused */

enum { OPT_MAX_BODY = 0x200, OPT_FIELDS };

#define KUBE_CALL_FIELDS_MAX 16 /* --fields names at most this many paths */

/* Reads standard input up to KUBE_CALL_BODY_MAX bytes. Returns 0 with the malloc'd, NUL-terminated
 * text in *ret; -EFBIG when it is larger; -errno when it cannot be read. */
static int read_body(char **ret) {
        struct buf b = { 0 };
        for (;;) {
                char chunk[16384];
                ssize_t got = read(STDIN_FILENO, chunk, sizeof chunk);
                if (got < 0) {
                        if (errno == EINTR) continue;
                        int r = -errno;
                        buf_free(&b);
                        return r;
                }
                if (got == 0) break;
                if (b.len + (size_t)got > KUBE_CALL_BODY_MAX) {
                        buf_free(&b);
                        return -EFBIG;
                }
                buf_append(&b, chunk, (size_t)got);
        }
        if (!b.data) buf_puts(&b, "");
        *ret = b.data;
        return 0;
}

/* Prints {"rc": rc, "error": error or null, "body": body or null, "stage": stage} on stdout (stage:
 * "config" or "client" when the call failed before the request, else "request"). Takes body.
 * Returns 0, or EXIT_INTERNAL when it cannot be written. */
static int print_outcome(int rc, const char *error, json_t *body, const char *stage) {
        json_t *o = json_object();
        json_object_set_new(o, "rc", json_integer(rc));
        json_t *e = NULL;
        if (error) {
                _cleanup_free_ char *clean = utf8_sanitize(error);
                e = json_string(clean);
        }
        json_object_set_new(o, "error", e ? e : json_null());
        json_object_set_new(o, "body", body ? body : json_null());
        json_object_set_new(o, "stage", json_string(stage));
        int r = json_dumpf(o, stdout, JSON_COMPACT);
        json_decref(o);
        if (r < 0 || fputc('\n', stdout) == EOF || fflush(stdout) != 0) return EXIT_INTERNAL;
        return 0;
}

/* Copies into dst the member at the dotted path field (e.g. "spec.taints") of src, creating the
 * objects on the way, when src has it. Returns nothing. */
static void project_field(json_t *dst, const json_t *src, const char *field) {
        _cleanup_free_ char *copy = xstrdup(field);
        char *save = NULL;
        const json_t *s = src;
        json_t *d = dst;
        for (char *part = strtok_r(copy, ".", &save); part; part = strtok_r(NULL, ".", &save)) {
                const json_t *next = json_object_get(s, part);
                if (!next) return;
                char *rest = save && *save ? save : NULL;
                if (!rest) {
                        json_object_set(d, part, (json_t *)next);
                        return;
                }
                if (!json_is_object(next)) return;
                json_t *sub = json_object_get(d, part);
                if (!sub) {
                        sub = json_object();
                        json_object_set_new(d, part, sub);
                }
                s = next;
                d = sub;
        }
}

/* Returns a new object with only the fields (dotted paths, n of them) of o; of a list (an object with
 * an items array), its kind, apiVersion and metadata (the continue token) and each item so cut. Takes
 * o. Never fails. */
static json_t *project(json_t *o, char *const *fields, size_t n) {
        const json_t *items = json_object_get(o, "items");
        json_t *out = json_object();
        if (json_is_array(items)) {
                for (const char *const *k = (const char *const[]){ "kind", "apiVersion", "metadata", NULL }; *k; k++)
                        if (json_object_get(o, *k)) json_object_set(out, *k, json_object_get(o, *k));
                json_t *cut = json_array();
                size_t i;
                const json_t *it;
                json_array_foreach(items, i, it) {
                        json_t *c = json_object();
                        for (size_t f = 0; f < n; f++) project_field(c, it, fields[f]);
                        json_array_append_new(cut, c);
                }
                json_object_set_new(out, "items", cut);
        } else {
                for (size_t f = 0; f < n; f++) project_field(out, o, fields[f]);
        }
        json_decref(o);
        return out;
}

/* What `gpunode kube-call` was asked: one request and its client's options. */
struct kube_call_args {
        struct command_args base;
        struct shared_options so;
        size_t max_body;
        char fields_text[512];              /* --fields, split in place into fields */
        char *fields[KUBE_CALL_FIELDS_MAX]; /* n_fields 0: the whole answer */
        size_t n_fields;
        const char *method, *path;
        enum kube_patch_type type;
        bool patch, post;
};

/* Parses METHOD PATH [strategic|merge|json] from argv's n positional arguments into args. Returns 0,
 * or -EINVAL after saying on stderr what is wrong. */
static int parse_request(int n, char **argv, struct kube_call_args *args) {
        const char *method = n > 0 ? argv[0] : NULL, *path = n > 1 ? argv[1] : NULL;
        args->patch = method && streq(method, "PATCH");
        args->post = method && streq(method, "POST");
        if (!method || !(args->patch || args->post || streq(method, "GET"))) {
                fprintf_escaped(stderr, "gpunode kube-call: METHOD must be GET, PATCH or POST, not '%s'\n",
                                method ? method : "");
                return -EINVAL;
        }
        if (!path || path[0] != '/') {
                fprintf_escaped(stderr, "gpunode kube-call: PATH must start with '/', not '%s'\n", path ? path : "");
                return -EINVAL;
        }
        args->method = method;
        args->path = path;
        args->type = KUBE_PATCH_STRATEGIC;
        if (args->patch) {
                const char *t = n > 2 ? argv[2] : "";
                if (streq(t, "strategic"))
                        args->type = KUBE_PATCH_STRATEGIC;
                else if (streq(t, "merge"))
                        args->type = KUBE_PATCH_MERGE;
                else if (streq(t, "json"))
                        args->type = KUBE_PATCH_JSON;
                else {
                        fprintf_escaped(stderr, "gpunode kube-call: PATCH needs strategic, merge or json, not '%s'\n",
                                        t);
                        return -EINVAL;
                }
        }
        if (n > (args->patch ? 3 : 2)) {
                fprintf_escaped(stderr, "gpunode kube-call: unexpected argument '%s'\n", argv[args->patch ? 3 : 2]);
                return -EINVAL;
        }
        return 0;
}

/* Parses `gpunode kube-call [OPTIONS] METHOD PATH [TYPE]` (argv[0] "kube-call"). Returns 0, or -EINVAL
 * after saying on stderr what is wrong. */
static int parse_argv_kube_call(int argc, char **argv, struct kube_call_args *args) {
        static const struct option longopts[] = {
                OPTIONS_KUBE,
                { "max-body", required_argument, NULL, OPT_MAX_BODY },
                { "fields", required_argument, NULL, OPT_FIELDS },
                { 0 },
        };
        shared_options_init(&args->so);
        args->max_body = KUBE_MAX_BODY_DEFAULT;
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
                if (c == OPT_MAX_BODY) {
                        char *end;
                        errno = 0;
                        unsigned long long v = strtoull(optarg, &end, 10);
                        if (errno || end == optarg || *end || optarg[0] == '-' || v == 0 || v > KUBE_MAX_BODY_DEFAULT) {
                                fprintf_escaped(stderr,
                                                "gpunode kube-call: --max-body must be 1..%zu bytes, not '%s'\n",
                                                KUBE_MAX_BODY_DEFAULT, optarg);
                                return -EINVAL;
                        }
                        args->max_body = (size_t)v;
                        continue;
                }
                if (c == OPT_FIELDS) {
                        char *save = NULL;
                        args->n_fields = 0;
                        if (strlen(optarg) >= sizeof args->fields_text) {
                                fprintf(stderr, "gpunode kube-call: --fields is longer than %zu characters\n",
                                        sizeof args->fields_text - 1);
                                return -EINVAL;
                        }
                        snprintf(args->fields_text, sizeof args->fields_text, "%s", optarg);
                        for (char *f = strtok_r(args->fields_text, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
                                bool ok = f[0] != '.' && f[strlen(f) - 1] != '.' && !strstr(f, "..");
                                if (!ok || args->n_fields == KUBE_CALL_FIELDS_MAX) {
                                        fprintf_escaped(stderr,
                                                        "gpunode kube-call: --fields takes at most %d dotted paths "
                                                        "(metadata.name,spec.taints), not '%s'\n",
                                                        KUBE_CALL_FIELDS_MAX, optarg);
                                        return -EINVAL;
                                }
                                args->fields[args->n_fields++] = f;
                        }
                        if (!args->n_fields) {
                                fprintf(stderr, "gpunode kube-call: --fields names no path\n");
                                return -EINVAL;
                        }
                        continue;
                }
                _cleanup_free_ char *error = NULL;
                int k = shared_option(c, optarg, &args->so, &error);
                if (k < 0) fprintf_escaped(stderr, "gpunode kube-call: %s\n", error);
                if (k <= 0) return -EINVAL;
        }
        return parse_request(argc - optind, argv + optind, args);
}

/* Runs `gpunode kube-call`: reads the body of a PATCH or POST, makes the request. Returns 0 when the
 * outcome was printed (also for a failed call), EXIT_INTERNAL otherwise. */
static int run_kube_call(struct kube_call_args *args) {
        _cleanup_free_ char *body = NULL;
        if (args->patch || args->post) {
                int r = read_body(&body);
                if (r < 0) {
                        fprintf(stderr, "gpunode kube-call: cannot read the request body from standard input: %s\n",
                                r == -EFBIG ? "larger than 1 MiB" : strerror(-r));
                        return EXIT_INTERNAL;
                }
        }

        _cleanup_kube_config_ struct kube_config *cfg = NULL;
        _cleanup_free_ char *err = NULL;
        int r = kube_config_load(args->so.kube.kubeconfig, args->so.kube.timeout_ms, &cfg, &err);
        if (r < 0) {
                /* "no configuration" only when there is none: a YAML child that could not start (a fork
                 * refused under RLIMIT_NPROC) is a configuration that could not be read. */
                _cleanup_free_ char *msg = xasprintf("%s: %s",
                                                     r == -ENOENT ? "no Kubernetes configuration"
                                                                  : "cannot load the Kubernetes configuration",
                                                     err ? err : strerror(-r));
                return print_outcome(r, msg, NULL, "config");
        }
        _cleanup_kube_client_ struct kube_client *kube = NULL;
        r = kube_client_new(cfg, args->so.kube.timeout_ms, &kube, &err);
        if (r < 0) {
                _cleanup_free_ char *msg = xasprintf("cannot create the API client: %s", err ? err : strerror(-r));
                return print_outcome(r, msg, NULL, "client");
        }
        kube_client_set_max_body(kube, args->max_body);
        json_t *answer = NULL;
        if (args->patch)
                r = kube_patch(kube, args->path, args->type, body, &answer, &err);
        else if (args->post)
                r = kube_post(kube, args->path, body, &answer, &err);
        else
                r = kube_get(kube, args->path, &answer, &err);
        if (r < 0) {
                json_decref(answer);
                answer = NULL;
        } else if (answer && args->n_fields) {
                /* only what the agent reads crosses into it: a Node of megabytes is parsed here, once */
                answer = project(answer, args->fields, args->n_fields);
        }
        return print_outcome(r, r < 0 ? (err ? err : strerror(-r)) : NULL, answer, "request");
}

DEFINE_COMMAND_STEPS(kube_call)

/* `gpunode kube-call`: its entry in the command table; hidden from `gpunode --help` (the agent runs it). */
const struct command command_kube_call = {
        .name = "kube-call",
        COMMAND_STEPS(kube_call),
        .hidden = true,
        .summary = "one Kubernetes API request as the agent makes it (used by gpunode agent)",
        .usage = "[OPTIONS] METHOD PATH [strategic|merge|json]",
        .options = "  METHOD                GET, PATCH or POST; PATCH takes the patch type (strategic, merge or json)\n"
                   "  PATH                  the API path, query included and escaped (e.g. "
                   "/api/v1/nodes?labelSelector=a%3Db)\n"
                   "                        the body of a PATCH or POST is read from standard input (at most 1 MiB)\n"
                   "  --max-body BYTES      the largest answer accepted (default 64 MiB)\n"
                   "  --fields F,...        print only these dotted paths of the answer (of each item of a "
                   "list;\n"
                   "                        the list's metadata is kept), e.g. metadata.name,spec.taints\n",
        .shared = SHARED_OPT_KUBECONFIG | SHARED_OPT_TIMEOUT,
        .notes =
                "prints one JSON object: {\"rc\": 0 or a negative errno, \"error\": a sentence or null, \"body\": the\n"
                "answer or null, \"stage\": \"config\", \"client\" or \"request\"}\n"
                "exit status: 0 the outcome was printed (also for a failed request), 64 usage error, 70 internal "
                "error\n",
};
