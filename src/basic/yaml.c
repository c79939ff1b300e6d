/* yaml.c: the one place libfyaml runs: in a forked child, its document handed back as JSON. */
#include "basic/yaml.h"
#include "basic/dl_fyaml.h"
#include "basic/util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#define YAML_MAX_DEPTH 64
#define YAML_JSON_MAX (64u << 20)
#define YAML_CHILD_TIMEOUT_MS 10000

/* Returns true when a plain scalar spells YAML's null. */
static bool plain_is_null(const char *v, size_t len) {
        return !v || len == 0 || (len == 1 && v[0] == '~') ||
               (len == 4 && (!memcmp(v, "null", 4) || !memcmp(v, "Null", 4) || !memcmp(v, "NULL", 4)));
}

/* Returns a jansson value for a YAML node as yaml_to_json() describes; NULL only on out-of-memory. */
static json_t *node_to_json(struct fy_node *n, int depth) {
        if (!n || fy_node_is_alias(n) || depth > YAML_MAX_DEPTH) return json_null();
        switch (fy_node_get_type(n)) {
        case FYNT_SCALAR: {
                size_t len;
                const char *s = fy_node_get_scalar(n, &len);
                if (fy_node_get_style(n) == FYNS_PLAIN && plain_is_null(s, len)) return json_null();
                return s ? json_stringn_nocheck(s, len) : json_null();
        }
        case FYNT_SEQUENCE: {
                json_t *a = json_array();
                void *it = NULL;
                struct fy_node *c;
                while (a && (c = fy_node_sequence_iterate(n, &it))) json_array_append_new(a, node_to_json(c, depth + 1));
                return a;
        }
        case FYNT_MAPPING: {
                json_t *o = json_object();
                void *it = NULL;
                struct fy_node_pair *p;
                while (o && (p = fy_node_mapping_iterate(n, &it))) {
                        struct fy_node *k = fy_node_pair_key(p);
                        if (!k || fy_node_get_type(k) != FYNT_SCALAR || fy_node_is_alias(k)) continue;
                        size_t klen;
                        const char *ks = fy_node_get_scalar(k, &klen);
                        if (!ks || memchr(ks, 0, klen)) continue;
                        _cleanup_free_ char *key = xstrndup(ks, klen);
                        json_object_set_new_nocheck(o, key, node_to_json(fy_node_pair_value(p), depth + 1));
                }
                return o;
        }
        }
        return json_null();
}

/* Writes all of data to fd. Returns 0 or -errno. */
static int write_all(int fd, const char *data, size_t len) {
        while (len) {
                ssize_t n = write(fd, data, len);
                if (n < 0) {
                        if (errno == EINTR) continue;
                        return -errno;
                }
                data += n;
                len -= (size_t)n;
        }
        return 0;
}

/* The child's side: parses, then writes "J<json>" or "E<error>" to fd and exits. Never returns. */
_Noreturn static void child_parse(int fd, const char *text, size_t len) {
        struct fy_diag_cfg dcfg;
        fy_diag_cfg_default(&dcfg);
        dcfg.fp = NULL;
        dcfg.output_fn = NULL;
        dcfg.level = FYET_ERROR;
        dcfg.colorize = false;
        struct fy_diag *diag = fy_diag_create(&dcfg);
        if (!diag) _exit(3);
        fy_diag_set_collect_errors(diag, true);
        struct fy_parse_cfg pcfg = {.flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG | FYPCF_JSON_NONE, .diag = diag};
        struct fy_document *doc = fy_document_build_from_string(&pcfg, text, len);
        char *out;
        if (!doc || fy_diag_got_error(diag)) {
                void *it = NULL;
                struct fy_diag_error *e = fy_diag_errors_iterate(diag, &it);
                out = e && e->msg ? xasprintf("Einvalid YAML at line %d, column %d: %s", e->line + 1, e->column + 1, e->msg)
                                  : xstrdup("Einvalid YAML");
        } else {
                json_t *j = node_to_json(fy_document_root(doc), 0);
                char *dump = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
                out = dump ? xasprintf("J%s", dump) : xstrdup("Eout of memory converting YAML");
        }
        _exit(write_all(fd, out, strlen(out)) < 0 ? 4 : 0);
}

/* Returns milliseconds of CLOCK_MONOTONIC. */
static int64_t now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads the child's answer until EOF, the size cap or the deadline. Returns 0, -EFBIG or -ETIMEDOUT. */
static int read_answer(int fd, struct buf *b) {
        int64_t deadline = now_ms() + YAML_CHILD_TIMEOUT_MS;
        char chunk[16384];
        for (;;) {
                int64_t left = deadline - now_ms();
                if (left <= 0) return -ETIMEDOUT;
                struct pollfd p = {.fd = fd, .events = POLLIN};
                int r = poll(&p, 1, (int)left);
                if (r < 0 && errno == EINTR) continue;
                if (r < 0) return -errno;
                if (r == 0) return -ETIMEDOUT;
                ssize_t n = read(fd, chunk, sizeof chunk);
                if (n < 0 && errno == EINTR) continue;
                if (n < 0) return -errno;
                if (n == 0) return 0;
                if (b->len + (size_t)n > YAML_JSON_MAX) return -EFBIG;
                buf_append(b, chunk, (size_t)n);
        }
}

int yaml_to_json(const char *text, size_t len, json_t **ret, char **ret_error) {
        *ret = NULL;
        int r = dl_fyaml_open(ret_error);
        if (r < 0) return r;
        size_t bad = utf8_valid_prefix(text, len);
        if (bad < len) {
                size_t line = 1;
                for (size_t i = 0; i < bad; i++) line += text[i] == '\n';
                *ret_error = xasprintf("invalid UTF-8 at line %zu (byte %zu)", line, bad + 1);
                return -EINVAL;
        }
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) < 0) {
                r = -errno;
                *ret_error = xasprintf("cannot start the YAML parser: %s", strerror(-r));
                return r;
        }
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
                r = -errno;
                close(fds[0]);
                close(fds[1]);
                *ret_error = xasprintf("cannot start the YAML parser: %s", strerror(-r));
                return r;
        }
        if (pid == 0) {
                close(fds[0]);
                child_parse(fds[1], text, len);
        }
        close(fds[1]);
        struct buf answer = {0};
        r = read_answer(fds[0], &answer);
        close(fds[0]);
        if (r < 0) kill(pid, SIGKILL);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        if (r == -ETIMEDOUT) *ret_error = xasprintf("the YAML parser did not finish within %d s", YAML_CHILD_TIMEOUT_MS / 1000);
        else if (r == -EFBIG) *ret_error = xstrdup("the YAML document is too large");
        else if (r < 0) *ret_error = xasprintf("cannot read the YAML parser's answer: %s", strerror(-r));
        else if (WIFSIGNALED(status)) {
                r = -EIO;
                *ret_error = xasprintf("the YAML parser (libfyaml) crashed on this document (signal %d)", WTERMSIG(status));
        } else if (answer.len == 0 || (answer.data[0] != 'J' && answer.data[0] != 'E')) {
                r = -EIO;
                *ret_error = xasprintf("the YAML parser failed (exit status %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        } else if (answer.data[0] == 'E') {
                r = -EINVAL;
                *ret_error = xstrdup(answer.data + 1);
        } else {
                json_error_t je;
                *ret = json_loadb(answer.data + 1, answer.len - 1, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
                if (!*ret) {
                        r = -EIO;
                        *ret_error = xasprintf("the YAML parser's answer is not JSON: %s", je.text);
                }
        }
        buf_free(&answer);
        return r;
}
