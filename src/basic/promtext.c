/* promtext.c: Prometheus text exposition format 0.0.4 parser and DCGM per-GPU summary collector. */
#include "basic/promtext.h"

#include <math.h>
#include <stdarg.h>

#include "basic/util.h"

struct parser {
        const struct promtext_callbacks *cb;
        void *userdata;
        struct promtext_error *err;
        unsigned long line;
        char *scratch; /* decoded tokens of the current line; 2 * line length + 16 bytes */
        size_t scratch_cap;
        char *family; /* metric name of the last TYPE line */
        size_t family_len, family_cap;
        enum promtext_type family_type;
        bool have_family;
        struct promtext_label labels[PROMTEXT_MAX_LABELS];
};

static const char *const type_names[] = {
        [PROMTEXT_UNTYPED] = "untyped",     [PROMTEXT_COUNTER] = "counter", [PROMTEXT_GAUGE] = "gauge",
        [PROMTEXT_HISTOGRAM] = "histogram", [PROMTEXT_SUMMARY] = "summary",
};

/* Returns the TYPE-line name of t, or NULL when t is out of range. */
const char *promtext_type_to_string(enum promtext_type t) {
        if ((unsigned)t >= ELEMENTSOF(type_names)) return NULL;
        return type_names[t];
}

/* Returns true for the separators between tokens: blank and tab. */
static bool is_blank(char c) {
        return c == ' ' || c == '\t';
}

/* Returns true when c may start a metric name ([a-zA-Z_:]). */
static bool is_name_start(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

/* Returns true when c may continue a metric name ([a-zA-Z0-9_:]). */
static bool is_name_char(char c) {
        return is_name_start(c) || (c >= '0' && c <= '9');
}

/* Returns true when c may start a label name ([a-zA-Z_]). */
static bool is_label_start(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* Returns true when c may continue a label name ([a-zA-Z0-9_]). */
static bool is_label_char(char c) {
        return is_label_start(c) || (c >= '0' && c <= '9');
}

/* Returns the index of the first non-blank at or after i (n when none). Never fails. */
static size_t skip_blanks(const char *s, size_t n, size_t i) {
        while (i < n && is_blank(s[i])) i++;
        return i;
}

/* Returns the index of the first blank at or after i (n when none). Never fails. */
static size_t token_end(const char *s, size_t n, size_t i) {
        while (i < n && !is_blank(s[i])) i++;
        return i;
}

/* Writes a printable, quoted, shortened copy of s[0..n) to out (size 48) for error messages; returns out. */
static const char *show(char out[static 48], const char *s, size_t n) {
        size_t o = 0, lim = 40;
        out[o++] = '"';
        for (size_t i = 0; i < n && o < lim; i++) out[o++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
        out[o++] = '"';
        if (n > lim - 2) {
                memcpy(out + o, "...", 3);
                o += 3;
        }
        out[o] = 0;
        return out;
}

/* Returns a printable rendering of the single byte c (for messages) in out (size 8). */
static const char *show_char(char out[static 8], char c) {
        if (c >= 0x20 && c < 0x7f)
                snprintf(out, 8, "'%c'", c);
        else
                snprintf(out, 8, "0x%02x", (unsigned char)c);
        return out;
}

/* Writes a printable rendering of the escape sequence backslash + c into out (size 16); returns out. */
static const char *show_escape(char out[static 16], char c) {
        if (c >= 0x20 && c < 0x7f)
                snprintf(out, 16, "\"\\%c\"", c);
        else
                snprintf(out, 16, "\"\\\" + 0x%02x", (unsigned char)c);
        return out;
}

/* Records "line N: message" in the error struct; returns r (a negative errno). */
_printf_(3, 4) static int fail(struct parser *p, int r, const char *fmt, ...) {
        if (p->err) {
                va_list ap;
                int k = snprintf(p->err->message, sizeof p->err->message, "line %lu: ", p->line);
                va_start(ap, fmt);
                if (k >= 0 && (size_t)k < sizeof p->err->message)
                        vsnprintf(p->err->message + k, sizeof p->err->message - k, fmt, ap);
                va_end(ap);
                p->err->line = p->line;
                p->err->error = r;
        }
        return r;
}

/* Records that a callback stopped the parse with r; returns r unchanged. */
static int callback_result(struct parser *p, int r) {
        if (r < 0) fail(p, r, "aborted by callback (%s)", strerror(-r));
        return r;
}

/* Returns true when s[0..n) equals word, ignoring ASCII case. */
static bool word_eq_ci(const char *s, size_t n, const char *word) {
        if (strlen(word) != n) return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
                if (c != word[i]) return false;
        }
        return true;
}

/* Checks that s[0..n) is a float as Go's ParseFloat writes it (decimal with optional exponent, or
 * Inf/Infinity with optional sign, or NaN; case-insensitive), and converts it with strtod using
 * tmp (n + 1 bytes) as a NUL-terminated copy. Returns 0, -EBADMSG for bad syntax, -ERANGE when a
 * finite number overflows a double. */
static int parse_value(const char *s, size_t n, char *tmp, double *ret) {
        size_t i = 0, digits = 0;
        if (n == 0) return -EBADMSG;
        if (word_eq_ci(s, n, "nan")) {
                *ret = NAN;
                return 0;
        }
        if (s[0] == '+' || s[0] == '-') i++;
        if (word_eq_ci(s + i, n - i, "inf") || word_eq_ci(s + i, n - i, "infinity")) {
                *ret = s[0] == '-' ? -INFINITY : INFINITY;
                return 0;
        }
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) digits++;
        if (i < n && s[i] == '.')
                for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++) digits++;
        if (digits == 0) return -EBADMSG;
        if (i < n && (s[i] == 'e' || s[i] == 'E')) {
                size_t edigits = 0;
                i++;
                if (i < n && (s[i] == '+' || s[i] == '-')) i++;
                for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) edigits++;
                if (edigits == 0) return -EBADMSG;
        }
        if (i != n) return -EBADMSG;

        memcpy(tmp, s, n);
        tmp[n] = 0;
        errno = 0;
        double v = strtod(tmp, NULL);
        if (errno == ERANGE && isinf(v)) return -ERANGE;
        *ret = v;
        return 0;
}

/* Parses s[0..n) as a signed decimal int64 (milliseconds). Returns 0, -EBADMSG for bad syntax or
 * -ERANGE on overflow. */
static int parse_timestamp(const char *s, size_t n, int64_t *ret) {
        size_t i = 0;
        bool neg = false;
        uint64_t v = 0, lim;
        if (n > 0 && (s[0] == '+' || s[0] == '-')) {
                neg = s[0] == '-';
                i++;
        }
        if (i == n) return -EBADMSG;
        lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        for (; i < n; i++) {
                if (s[i] < '0' || s[i] > '9') return -EBADMSG;
                unsigned d = (unsigned)(s[i] - '0');
                if (v > (lim - d) / 10) return -ERANGE;
                v = v * 10 + d;
        }
        *ret = neg ? (int64_t)(0 - v) : (int64_t)v;
        return 0;
}

/* Returns the type of the family that sample name belongs to, from the last TYPE line. */
static enum promtext_type sample_type(const struct parser *p, const char *name) {
        if (!p->have_family) return PROMTEXT_UNTYPED;
        size_t n = strlen(name);
        if (n < p->family_len || memcmp(name, p->family, p->family_len) != 0) return PROMTEXT_UNTYPED;
        const char *suffix = name + p->family_len;
        if (!*suffix) return p->family_type;
        if (p->family_type == PROMTEXT_HISTOGRAM &&
            (streq(suffix, "_bucket") || streq(suffix, "_sum") || streq(suffix, "_count")))
                return p->family_type;
        if (p->family_type == PROMTEXT_SUMMARY && (streq(suffix, "_sum") || streq(suffix, "_count")))
                return p->family_type;
        return PROMTEXT_UNTYPED;
}

/* Parses a "#" line starting at s[i] == '#'. Returns 0, a callback's non-zero value, or a negative
 * errno with the error recorded. */
static int parse_comment(struct parser *p, const char *s, size_t n, size_t i) {
        char q[48];
        bool help;
        size_t k, e;

        i = skip_blanks(s, n, i + 1);
        k = token_end(s, n, i);
        if (k - i == 4 && memcmp(s + i, "HELP", 4) == 0)
                help = true;
        else if (k - i == 4 && memcmp(s + i, "TYPE", 4) == 0)
                help = false;
        else
                return 0; /* an ordinary comment */
        const char *what = help ? "HELP" : "TYPE";

        i = skip_blanks(s, n, k);
        e = token_end(s, n, i);
        if (i == e) return fail(p, -EBADMSG, "%s line without a metric name", what);
        if (!is_name_start(s[i]))
                return fail(p, -EBADMSG, "invalid metric name %s in %s line", show(q, s + i, e - i), what);
        for (k = i + 1; k < e; k++)
                if (!is_name_char(s[k]))
                        return fail(p, -EBADMSG, "invalid metric name %s in %s line", show(q, s + i, e - i), what);
        char *name = p->scratch, *out = p->scratch + (e - i) + 1;
        memcpy(name, s + i, e - i);
        name[e - i] = 0;
        i = skip_blanks(s, n, e);

        if (help) {
                size_t o = 0;
                for (; i < n; i++) {
                        if (s[i] != '\\') {
                                out[o++] = s[i];
                                continue;
                        }
                        if (++i >= n)
                                return fail(p, -EBADMSG, "HELP text for %s ends in a backslash",
                                            show(q, name, strlen(name)));
                        if (s[i] == '\\')
                                out[o++] = '\\';
                        else if (s[i] == 'n')
                                out[o++] = '\n';
                        else {
                                char c[16];
                                return fail(p, -EBADMSG, "invalid escape sequence %s in HELP text",
                                            show_escape(c, s[i]));
                        }
                }
                out[o] = 0;
                if (!p->cb || !p->cb->help) return 0;
                return callback_result(p, p->cb->help(name, out, p->line, p->userdata));
        }

        e = token_end(s, n, i);
        enum promtext_type t = PROMTEXT_UNTYPED;
        bool found = false;
        for (size_t j = 0; j < ELEMENTSOF(type_names); j++)
                if (e - i == strlen(type_names[j]) && memcmp(s + i, type_names[j], e - i) == 0) {
                        t = (enum promtext_type)j;
                        found = true;
                }
        if (i == e) return fail(p, -EBADMSG, "TYPE line for %s without a type", show(q, name, strlen(name)));
        if (!found) return fail(p, -EBADMSG, "unknown metric type %s in TYPE line", show(q, s + i, e - i));
        if (skip_blanks(s, n, e) != n) return fail(p, -EBADMSG, "unexpected text after the type in TYPE line");

        size_t len = strlen(name);
        if (len + 1 > p->family_cap) {
                p->family_cap = len + 1 > 2 * p->family_cap ? len + 1 : 2 * p->family_cap;
                p->family = xrealloc(p->family, p->family_cap);
        }
        memcpy(p->family, name, len + 1);
        p->family_len = len;
        p->family_type = t;
        p->have_family = true;

        if (!p->cb || !p->cb->type) return 0;
        return callback_result(p, p->cb->type(name, t, p->line, p->userdata));
}

/* Parses a sample line whose first non-blank is s[i]. Returns 0, a callback's non-zero value, or a
 * negative errno with the error recorded. */
static int parse_sample(struct parser *p, const char *s, size_t n, size_t i) {
        struct promtext_sample sample = { .line = p->line };
        char *out = p->scratch;
        char q[48], c[8], e[16];
        size_t k;
        int r;

        if (!is_name_start(s[i]))
                return fail(p, -EBADMSG, "invalid character %s at the start of a metric name", show_char(c, s[i]));
        for (k = i + 1; k < n && is_name_char(s[k]); k++)
                ;
        if (k < n && !is_blank(s[k]) && s[k] != '{')
                return fail(p, -EBADMSG, "invalid character %s in metric name", show_char(c, s[k]));
        sample.name = out;
        memcpy(out, s + i, k - i);
        out += k - i;
        *out++ = 0;
        i = skip_blanks(s, n, k);

        if (i < n && s[i] == '{') {
                i++;
                for (;;) {
                        i = skip_blanks(s, n, i);
                        if (i >= n) return fail(p, -EBADMSG, "label set not closed with '}'");
                        if (s[i] == '}') {
                                i++;
                                break;
                        }
                        if (sample.n_labels >= PROMTEXT_MAX_LABELS)
                                return fail(p, -E2BIG, "more than %u labels on %s", PROMTEXT_MAX_LABELS,
                                            show(q, sample.name, strlen(sample.name)));
                        if (!is_label_start(s[i]))
                                return fail(p, -EBADMSG, "invalid character %s at the start of a label name",
                                            show_char(c, s[i]));
                        for (k = i + 1; k < n && is_label_char(s[k]); k++)
                                ;
                        struct promtext_label *l = &p->labels[sample.n_labels];
                        l->name = out;
                        memcpy(out, s + i, k - i);
                        out += k - i;
                        *out++ = 0;
                        if (streq(l->name, "__name__")) return fail(p, -EBADMSG, "label name \"__name__\" is reserved");
                        i = skip_blanks(s, n, k);
                        if (i >= n || s[i] != '=') {
                                if (i < n)
                                        return fail(p, -EBADMSG, "expected '=' after label name %s, got %s",
                                                    show(q, l->name, strlen(l->name)), show_char(c, s[i]));
                                return fail(p, -EBADMSG, "expected '=' after label name %s",
                                            show(q, l->name, strlen(l->name)));
                        }
                        i = skip_blanks(s, n, i + 1);
                        if (i >= n || s[i] != '"')
                                return fail(p, -EBADMSG, "label value not quoted (label %s)",
                                            show(q, l->name, strlen(l->name)));
                        l->value = out;
                        for (i++;; i++) {
                                if (i >= n)
                                        return fail(p, -EBADMSG, "label value not terminated (label %s)",
                                                    show(q, l->name, strlen(l->name)));
                                if (s[i] == '"') break;
                                if (s[i] != '\\') {
                                        *out++ = s[i];
                                        continue;
                                }
                                if (++i >= n)
                                        return fail(p, -EBADMSG, "label value not terminated (label %s)",
                                                    show(q, l->name, strlen(l->name)));
                                if (s[i] == '\\' || s[i] == '"')
                                        *out++ = s[i];
                                else if (s[i] == 'n')
                                        *out++ = '\n';
                                else
                                        return fail(p, -EBADMSG, "invalid escape sequence %s in label value",
                                                    show_escape(e, s[i]));
                        }
                        *out++ = 0;
                        i++;
                        for (size_t j = 0; j < sample.n_labels; j++)
                                if (streq(p->labels[j].name, l->name))
                                        return fail(p, -EBADMSG, "duplicate label %s",
                                                    show(q, l->name, strlen(l->name)));
                        sample.n_labels++;
                        i = skip_blanks(s, n, i);
                        if (i < n && s[i] == ',') {
                                i++;
                                continue;
                        }
                        if (i < n && s[i] == '}') {
                                i++;
                                break;
                        }
                        if (i >= n) return fail(p, -EBADMSG, "label set not closed with '}'");
                        return fail(p, -EBADMSG, "expected ',' or '}' after label value, got %s", show_char(c, s[i]));
                }
                i = skip_blanks(s, n, i);
        }
        sample.labels = p->labels;

        if (i >= n) return fail(p, -EBADMSG, "missing value for %s", show(q, sample.name, strlen(sample.name)));
        k = token_end(s, n, i);
        r = parse_value(s + i, k - i, out, &sample.value);
        if (r == -ERANGE) return fail(p, -EBADMSG, "value %s out of range", show(q, s + i, k - i));
        if (r < 0) return fail(p, -EBADMSG, "invalid value %s", show(q, s + i, k - i));

        i = skip_blanks(s, n, k);
        if (i < n) {
                k = token_end(s, n, i);
                r = parse_timestamp(s + i, k - i, &sample.timestamp_ms);
                if (r == -ERANGE) return fail(p, -EBADMSG, "timestamp %s out of range", show(q, s + i, k - i));
                if (r < 0) return fail(p, -EBADMSG, "invalid timestamp %s", show(q, s + i, k - i));
                sample.has_timestamp = true;
                i = skip_blanks(s, n, k);
                if (i < n) return fail(p, -EBADMSG, "unexpected text %s after timestamp", show(q, s + i, n - i));
        }

        sample.type = sample_type(p, sample.name);
        if (!p->cb || !p->cb->sample) return 0;
        return callback_result(p, p->cb->sample(&sample, p->userdata));
}

/* Parses one line s[0..n) (no '\n'). Returns 0, a callback's non-zero value, or a negative errno
 * with the error recorded. */
static int parse_line(struct parser *p, const char *s, size_t n) {
        if (n > PROMTEXT_MAX_LINE_LEN)
                return fail(p, -E2BIG, "line too long (%zu bytes, limit %u)", n, PROMTEXT_MAX_LINE_LEN);
        if (memchr(s, 0, n)) return fail(p, -EBADMSG, "NUL byte in line");
        if (2 * n + 16 > p->scratch_cap) {
                size_t cap = p->scratch_cap ? p->scratch_cap : 256;
                while (cap < 2 * n + 16) cap *= 2;
                free(p->scratch);
                p->scratch = xmalloc(cap);
                p->scratch_cap = cap;
        }
        size_t i = skip_blanks(s, n, 0);
        if (i == n) return 0;
        if (s[i] == '#') return parse_comment(p, s, n, i);
        return parse_sample(p, s, n, i);
}

int promtext_parse(const char *data, size_t len, const struct promtext_callbacks *cb, void *userdata,
                   struct promtext_error *ret_error) {
        struct parser p = { .cb = cb, .userdata = userdata, .err = ret_error };
        size_t pos = 0;
        int r = 0;

        if (ret_error) *ret_error = (struct promtext_error){};
        if (!data && len > 0) {
                fail(&p, -EINVAL, "no input buffer");
                return -EINVAL;
        }
        while (pos < len) {
                const char *nl = memchr(data + pos, '\n', len - pos);
                size_t end = nl ? (size_t)(nl - data) : len;
                size_t n = end - pos;
                p.line++;
                if (nl && n > 0 && data[end - 1] == '\r') n--;
                r = parse_line(&p, data + pos, n);
                if (r != 0) break;
                pos = nl ? end + 1 : len;
        }
        free(p.scratch);
        free(p.family);
        return r;
}

/* ---- DCGM summary ---- */

/* An open-addressing hash index over an array of structs whose first member is a char* key. */
struct strindex {
        size_t *slots; /* element index + 1; 0 = empty */
        size_t cap;    /* power of two, or 0 */
        size_t n;
};

struct summary_index {
        struct strindex gpus, metrics;
        size_t gpus_cap, metrics_cap;
};

/* Returns the FNV-1a hash of the NUL-terminated string s. */
static uint64_t str_hash(const char *s) {
        uint64_t h = 1469598103934665603ull;
        for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
        return h;
}

/* Returns the key of element idx of an array at base with element size stride. */
static const char *key_at(const void *base, size_t stride, size_t idx) {
        return *(char *const *)(const void *)((const char *)base + idx * stride);
}

/* Returns the element index whose key equals key, or SIZE_MAX when absent. */
static size_t strindex_find(const struct strindex *x, const void *base, size_t stride, const char *key) {
        if (x->cap == 0) return SIZE_MAX;
        for (size_t h = str_hash(key) & (x->cap - 1);; h = (h + 1) & (x->cap - 1)) {
                if (x->slots[h] == 0) return SIZE_MAX;
                if (streq(key_at(base, stride, x->slots[h] - 1), key)) return x->slots[h] - 1;
        }
}

/* Adds element idx (key not yet present) to the index, growing it as needed. Never fails. */
static void strindex_add(struct strindex *x, const void *base, size_t stride, size_t idx) {
        if (2 * (x->n + 1) > x->cap) {
                size_t cap = x->cap ? 2 * x->cap : 16;
                size_t *slots = xcalloc(cap, sizeof *slots);
                for (size_t i = 0; i < x->cap; i++) {
                        if (!x->slots[i]) continue;
                        size_t h = str_hash(key_at(base, stride, x->slots[i] - 1)) & (cap - 1);
                        while (slots[h]) h = (h + 1) & (cap - 1);
                        slots[h] = x->slots[i];
                }
                free(x->slots);
                x->slots = slots;
                x->cap = cap;
        }
        size_t h = str_hash(key_at(base, stride, idx)) & (x->cap - 1);
        while (x->slots[h]) h = (h + 1) & (x->cap - 1);
        x->slots[h] = idx + 1;
        x->n++;
}

/* Sample callback of the summary: counts the sample into s. Returns 0; never fails. */
static int summary_sample(const struct promtext_sample *sample, void *userdata) {
        struct promtext_gpu_summary *s = userdata;
        struct summary_index *x = s->index_;

        s->n_samples++;
        if (strindex_find(&x->metrics, s->metrics, sizeof *s->metrics, sample->name) == SIZE_MAX) {
                if (s->n_metrics == x->metrics_cap) {
                        x->metrics_cap = x->metrics_cap ? 2 * x->metrics_cap : 64;
                        s->metrics = xrealloc(s->metrics, x->metrics_cap * sizeof *s->metrics);
                }
                s->metrics[s->n_metrics] = xstrdup(sample->name);
                strindex_add(&x->metrics, s->metrics, sizeof *s->metrics, s->n_metrics++);
        }

        if (strncmp(sample->name, "DCGM_FI_", 8) != 0) return 0;
        s->n_dcgm_samples++;
        const char *uuid = NULL;
        for (size_t i = 0; i < sample->n_labels; i++)
                if (streq(sample->labels[i].name, "UUID")) {
                        uuid = sample->labels[i].value;
                        break;
                }
        if (!uuid) {
                s->n_dcgm_no_uuid++;
                return 0;
        }
        size_t idx = strindex_find(&x->gpus, s->gpus, sizeof *s->gpus, uuid);
        if (idx == SIZE_MAX) {
                if (s->n_gpus == x->gpus_cap) {
                        x->gpus_cap = x->gpus_cap ? 2 * x->gpus_cap : 8;
                        s->gpus = xrealloc(s->gpus, x->gpus_cap * sizeof *s->gpus);
                }
                s->gpus[s->n_gpus] = (struct promtext_gpu){ .uuid = xstrdup(uuid) };
                idx = s->n_gpus++;
                strindex_add(&x->gpus, s->gpus, sizeof *s->gpus, idx);
        }
        s->gpus[idx].n_series++;
        if (sample->value != 0 && !isnan(sample->value)) s->gpus[idx].n_nonzero++;
        return 0;
}

int promtext_gpu_summary_parse(const char *data, size_t len, struct promtext_gpu_summary *ret,
                               struct promtext_error *ret_error) {
        static const struct promtext_callbacks cb = { .sample = summary_sample };
        *ret = (struct promtext_gpu_summary){ .index_ = xcalloc(1, sizeof(struct summary_index)) };
        return promtext_parse(data, len, &cb, ret, ret_error);
}

const struct promtext_gpu *promtext_gpu_summary_find(const struct promtext_gpu_summary *s, const char *uuid) {
        if (!s->index_) return NULL;
        struct summary_index *x = s->index_;
        size_t idx = strindex_find(&x->gpus, s->gpus, sizeof *s->gpus, uuid);
        return idx == SIZE_MAX ? NULL : &s->gpus[idx];
}

bool promtext_gpu_summary_has_metric(const struct promtext_gpu_summary *s, const char *name) {
        if (!s->index_) return false;
        struct summary_index *x = s->index_;
        return strindex_find(&x->metrics, s->metrics, sizeof *s->metrics, name) != SIZE_MAX;
}

void promtext_gpu_summary_free(struct promtext_gpu_summary *s) {
        struct summary_index *x = s->index_;
        for (size_t i = 0; i < s->n_gpus; i++) free(s->gpus[i].uuid);
        for (size_t i = 0; i < s->n_metrics; i++) free(s->metrics[i]);
        free(s->gpus);
        free(s->metrics);
        if (x) {
                free(x->gpus.slots);
                free(x->metrics.slots);
                free(x);
        }
        *s = (struct promtext_gpu_summary){};
}
