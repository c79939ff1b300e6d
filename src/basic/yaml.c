/* yaml.c: the one place libfyaml runs: in a forked child, its document handed back as JSON. */
#include "basic/yaml.h"
#include "basic/dl_fyaml.h"
#include "basic/util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#define YAML_MAX_DEPTH        64
#define YAML_JSON_MAX         (64u << 20)
#define YAML_CHILD_TIMEOUT_MS 10000
/* What libfyaml may allocate for one document (a 40,000-device CDI spec takes about 175 MiB). */
#define YAML_CHILD_MEMORY_MAX (256u << 20)

/* AddressSanitizer (gcc says so with __SANITIZE_ADDRESS__, clang with __has_feature). */
#if defined(__SANITIZE_ADDRESS__)
#define YAML_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define YAML_UNDER_ASAN 1
#endif
#endif

/* Returns true when a plain scalar spells YAML's null. */
static bool plain_is_null(const char *v, size_t len) {
        return !v || len == 0 || (len == 1 && v[0] == '~') ||
               (len == 4 && (!memcmp(v, "null", 4) || !memcmp(v, "Null", 4) || !memcmp(v, "NULL", 4)));
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

/* The child's answer on the pipe: "J" and the document as JSON text, written while the tree is walked
 * (no second copy of the document is built), then EOF and exit status 0. A failure, before or in the
 * middle of that text, appends a NUL byte (never part of JSON text), a class ('E' invalid YAML, 'M' over
 * the memory bound) and a sentence, and exits with status 2. */
struct child_out {
        int fd;
        const char *text; /* the input, to give a line number in errors */
        size_t text_len;
        size_t len;
        char buf[1 << 16];
};

/* Sends what the buffer holds. Exits the child (status 4) when the pipe is gone. */
static void out_flush(struct child_out *o) {
        if (o->len && write_all(o->fd, o->buf, o->len) < 0) _exit(4);
        o->len = 0;
}

/* Appends n bytes to the answer. Never fails (exits the child when the pipe is gone). */
static void out_put(struct child_out *o, const char *s, size_t n) {
        if (n > sizeof o->buf - o->len) {
                out_flush(o);
                if (n > sizeof o->buf) {
                        if (write_all(o->fd, s, n) < 0) _exit(4);
                        return;
                }
        }
        memcpy(o->buf + o->len, s, n);
        o->len += n;
}

/* json_dump_callback's sink: appends to the answer. Returns 0. */
static int out_dump_cb(const char *s, size_t n, void *data) {
        out_put(data, s, n);
        return 0;
}

/* Ends the answer with a failure of class cls ('E' or 'M') and the formatted sentence, and exits with
 * status 2. Allocates nothing (it also reports running out of memory). Never returns. */
_Noreturn _printf_(3, 4) static void child_fail(struct child_out *o, char cls, const char *fmt, ...) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(msg + 2, sizeof msg - 2, fmt, ap);
        va_end(ap);
        msg[0] = 0;
        msg[1] = cls;
        out_put(o, msg, 2 + (n < 0 ? 0 : (size_t)n < sizeof msg - 2 ? (size_t)n : sizeof msg - 3));
        out_flush(o);
        _exit(2);
}

/* Ends the answer with the memory bound's failure (struct child_out). Never returns. */
_Noreturn static void child_oom(struct child_out *o) {
        child_fail(o, 'M', "the YAML parser needs more than %u MiB for this document (%zu bytes)",
                   YAML_CHILD_MEMORY_MAX >> 20, o->text_len);
}

/* Returns the 1-based line of the input that s points into, or 0 when s is not inside the input
 * (libfyaml hands out plain scalars in place, processed ones in copies). */
static size_t line_of(const struct child_out *o, const char *s) {
        uintptr_t p = (uintptr_t)s, b = (uintptr_t)o->text;
        if (!s || p < b || p >= b + o->text_len) return 0;
        size_t line = 1;
        for (const char *c = o->text; c < s; c++) line += *c == '\n';
        return line;
}

/* Appends a scalar as a JSON string (jansson escapes it). Never fails (a scalar that is not UTF-8, from
 * an escape, or no memory ends the answer with the failure). */
static void emit_string(struct child_out *o, const char *s, size_t len) {
        if (utf8_valid_prefix(s, len) < len) {
                size_t line = line_of(o, s);
                if (line) child_fail(o, 'E', "invalid YAML at line %zu: a scalar is not valid UTF-8", line);
                child_fail(o, 'E', "invalid YAML: a scalar is not valid UTF-8 (an escape sequence?)");
        }
        json_t *j = json_stringn_nocheck(s, len);
        if (!j || json_dump_callback(j, out_dump_cb, o, JSON_ENCODE_ANY) < 0) child_oom(o);
        json_decref(j);
}

/* Appends a YAML node as JSON, as yaml_to_json() describes: depth first, each node once, so the cost
 * is linear in the document. A mapping's scalar keys are checked for duplicates here, in a hash set
 * (libfyaml's own check compares every key with every other: 20,000 keys took 19 s). Never fails
 * (a duplicate key or no memory ends the answer with the failure). */
static void emit_node(struct child_out *o, struct fy_node *n, int depth) {
        if (!n || fy_node_is_alias(n) || depth > YAML_MAX_DEPTH) {
                out_put(o, "null", 4);
                return;
        }
        switch (fy_node_get_type(n)) {
        case FYNT_SCALAR: {
                size_t len;
                const char *s = fy_node_get_scalar(n, &len);
                if (!s || (fy_node_get_style(n) == FYNS_PLAIN && plain_is_null(s, len)))
                        out_put(o, "null", 4);
                else
                        emit_string(o, s, len);
                return;
        }
        case FYNT_SEQUENCE: {
                void *it = NULL;
                struct fy_node *c;
                bool first = true;
                out_put(o, "[", 1);
                while ((c = fy_node_sequence_iterate(n, &it))) {
                        if (!first) out_put(o, ",", 1);
                        first = false;
                        emit_node(o, c, depth + 1);
                }
                out_put(o, "]", 1);
                return;
        }
        case FYNT_MAPPING: {
                json_t *seen = json_object();
                void *it = NULL;
                struct fy_node_pair *p;
                bool first = true;
                if (!seen) child_oom(o);
                out_put(o, "{", 1);
                while ((p = fy_node_mapping_iterate(n, &it))) {
                        struct fy_node *k = fy_node_pair_key(p);
                        if (!k || fy_node_get_type(k) != FYNT_SCALAR || fy_node_is_alias(k)) continue;
                        size_t klen;
                        const char *ks = fy_node_get_scalar(k, &klen);
                        if (!ks || memchr(ks, 0, klen)) continue;
                        if (json_object_getn(seen, ks, klen)) {
                                size_t line = line_of(o, ks);
                                int shown = klen > 64 ? 64 : (int)klen;
                                if (line)
                                        child_fail(o, 'E', "invalid YAML at line %zu: duplicate key '%.*s'", line,
                                                   shown, ks);
                                child_fail(o, 'E', "invalid YAML: duplicate key '%.*s'", shown, ks);
                        }
                        if (json_object_setn_new_nocheck(seen, ks, klen, json_null()) < 0) child_oom(o);
                        if (!first) out_put(o, ",", 1);
                        first = false;
                        emit_string(o, ks, klen);
                        out_put(o, ":", 1);
                        emit_node(o, fy_node_pair_value(p), depth + 1);
                }
                out_put(o, "}", 1);
                json_decref(seen);
                return;
        }
        }
        out_put(o, "null", 4);
}

#ifndef YAML_UNDER_ASAN
/* Returns the child's VmData (its private writable memory, in bytes) from /proc/self/status (the
 * process's own, not a host fact: not read through hostfs), or 0 when it cannot be read. Allocates
 * nothing. */
static uint64_t child_vm_data(void) {
        char b[4096];
        int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
        if (fd < 0) return 0;
        ssize_t n = read(fd, b, sizeof b - 1);
        close(fd);
        if (n <= 0) return 0;
        b[n] = 0;
        const char *v = strstr(b, "\nVmData:");
        return v ? strtoull(v + 8, NULL, 10) << 10 : 0;
}

/* Bounds what the child may allocate from here on to YAML_CHILD_MEMORY_MAX (RLIMIT_DATA over what it
 * holds at the fork), so that libfyaml's document, which costs 50 to 300 times its text, fails with
 * ENOMEM instead of taking the node's memory. Not under AddressSanitizer, whose allocator counts its
 * redzones and quarantine against the limit and aborts instead of failing. Returns nothing. */
static void child_bound_memory(void) {
        uint64_t now = child_vm_data();
        if (!now) return;
        struct rlimit rl;
        if (getrlimit(RLIMIT_DATA, &rl) < 0) return;
        rlim_t want = now + YAML_CHILD_MEMORY_MAX;
        if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur <= want) return;
        rl.rlim_cur = want;
        setrlimit(RLIMIT_DATA, &rl);
}
#else
static void child_bound_memory(void) {}
#endif

/* The child's document and diagnostics at its exit, kept reachable rather than destroyed (destroying
 * takes as long as the parse): under valgrind the forked child is checked for leaks too. */
static struct fy_document *volatile child_doc;
static struct fy_diag *volatile child_diag;

/* The child's side: bounds its memory, parses, writes the answer (struct child_out) to fd and exits.
 * Never returns. */
_Noreturn static void child_parse(int fd, const char *text, size_t len) {
        static struct child_out o;
        o = (struct child_out){ .fd = fd, .text = text, .text_len = len };
        child_bound_memory();
        struct fy_diag_cfg dcfg;
        fy_diag_cfg_default(&dcfg);
        dcfg.fp = NULL;
        dcfg.output_fn = NULL;
        dcfg.level = FYET_ERROR;
        dcfg.colorize = false;
        struct fy_diag *diag = fy_diag_create(&dcfg);
        if (!diag) child_oom(&o);
        child_diag = diag;
        fy_diag_set_collect_errors(diag, true);
        /* Duplicate keys are found by emit_node (linear); libfyaml's check is quadratic. */
        struct fy_parse_cfg pcfg = {
                .flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG | FYPCF_JSON_NONE | FYPCF_ALLOW_DUPLICATE_KEYS, .diag = diag
        };
        errno = 0;
        struct fy_document *doc = fy_document_build_from_string(&pcfg, text, len);
        int saved_errno = errno;
        child_doc = doc;
        if (!doc || fy_diag_got_error(diag)) {
                void *it = NULL;
                struct fy_diag_error *e = fy_diag_errors_iterate(diag, &it);
                if (e && e->msg)
                        child_fail(&o, 'E', "invalid YAML at line %d, column %d: %s", e->line + 1, e->column + 1,
                                   e->msg);
                if (saved_errno == ENOMEM) child_oom(&o);
                child_fail(&o, 'E', "invalid YAML");
        }
        out_put(&o, "J", 1);
        emit_node(&o, fy_document_root(doc), 0);
        out_flush(&o);
        _exit(0);
}

/* Reads the child's answer until EOF, the size cap or the deadline. Returns 0, -EFBIG or -ETIMEDOUT. */
static int read_answer(int fd, struct buf *b) {
        int64_t deadline = (int64_t)monotonic_ms() + YAML_CHILD_TIMEOUT_MS;
        char chunk[16384];
        for (;;) {
                int64_t left = deadline - (int64_t)monotonic_ms();
                if (left <= 0) return -ETIMEDOUT;
                struct pollfd p = { .fd = fd, .events = POLLIN };
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
                *ret_error = xasprintf("cannot start the YAML parser (a child process): %s", strerror(-r));
                return r;
        }
        if (pid == 0) {
                close(fds[0]);
                child_parse(fds[1], text, len);
        }
        close(fds[1]);
        struct buf answer = { 0 };
        const char *fail;
        r = read_answer(fds[0], &answer);
        close(fds[0]);
        if (r < 0) kill(pid, SIGKILL);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (r == -ETIMEDOUT)
                *ret_error = xasprintf("the YAML parser did not finish within %d s", YAML_CHILD_TIMEOUT_MS / 1000);
        else if (r == -EFBIG)
                *ret_error = xstrdup("the YAML document is too large");
        else if (r < 0)
                *ret_error = xasprintf("cannot read the YAML parser's answer: %s", strerror(-r));
        else if (WIFSIGNALED(status)) {
                r = -EIO;
                *ret_error =
                        xasprintf("the YAML parser (libfyaml) crashed on this document (signal %d)", WTERMSIG(status));
        } else if ((fail = answer.len ? memchr(answer.data, 0, answer.len) : NULL) &&
                   fail + 1 < answer.data + answer.len) {
                /* a failure the child reported (struct child_out): "\0" class sentence */
                r = fail[1] == 'M' ? -EFBIG : -EINVAL;
                *ret_error = xstrdup(fail + 2);
        } else if (answer.len == 0 || answer.data[0] != 'J' || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                r = -EIO;
                *ret_error = xasprintf("the YAML parser failed (exit status %d)",
                                       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
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
