/* redact.c: what a snapshot never holds: environments, mounted secrets, keys, certificates, credential values. */
#include "snapshot/snapshot.h"

#include <ctype.h>
#include <strings.h>

#include "basic/toml.h"

/*
 * Rules (README "Snapshots", Redaction, lists them too):
 *  1. /proc/<pid>/environ (and task/<tid>/environ): never copied; environments carry credentials.
 *  2. Anything below /var/run/secrets/ or /run/secrets/ (service account tokens, mounted Secrets):
 *     content replaced by "REDACTED".
 *  3. Keys and certificates by name (*.key, *.pem, *.crt, *.cert, *.der, *.p12, *.pfx, *.jks,
 *     *.keystore, id_rsa, id_ecdsa, id_ed25519, files named token): content replaced by "REDACTED".
 *  4. Every other file outside /proc and /sys (which the kernel writes), by its format, found from
 *     its content (redact_text): the values of credential keys (secret_key: token, password,
 *     secret, auth, Authorization, client-key-data, ...) become REDACTED, and in every other value
 *     the free-text rules (redact_words) apply: user:password@ in URLs, "Bearer T", "key=V" and
 *     "key: V" with a credential key, "--password V". The file keeps its text and its structure:
 *      - JSON (daemon.json, CDI, checkpoints): jansson loads it, the rules of 6 are applied to the
 *        tree, and only the string tokens whose value changed are rewritten in the text;
 *      - TOML (containerd, CRI-O, the toolkit): a scanner over text that toml_parse accepted
 *        rewrites string tokens (basic, literal, multi-line, in arrays and inline tables) keeping
 *        the line count; the result must parse to the same shape or the line rules apply instead;
 *      - anything else by lines (YAML, INI, env files, Prometheus pages, TOML that does not parse):
 *        "k: v", "k = v", "- K=V" at the start of a line, YAML block scalars and quoted values
 *        spanning lines, multi-line TOML strings, "- name: <credential>" followed by "value: V",
 *        the label values of credential-named labels on a sample line, PEM private key blocks.
 *  5. /proc/<pid>/cmdline (NUL-separated, redact_cmdline): "--token=V", "--password V", "KEY=V",
 *     "Bearer T", and the free-text rules inside every argument (a shell command in one).
 *  6. Kubernetes API responses (redact_api_json): string values of credential keys (also an
 *     annotation's last "/" segment), strings in arrays under such keys, every value of a Secret's
 *     data/stringData, env[].value, the value of {"name": <credential>, "value": V} (httpHeaders),
 *     kubectl's last-applied-configuration annotation (a copy of the spec, env values included),
 *     credential arguments in command/args arrays (as rule 5), and the free-text rules in every
 *     other string (annotation values, commands, messages). Metrics pages: rule 4.
 * Values that hold nothing (empty, true, false, REDACTED) are left as they are.
 * The scanners are written by hand: jansson, libfyaml and basic/toml.c give trees without the
 * positions of the text, and printing a tree again would not keep the file as it was read
 * (comments, order, layout, and with them a parse error's line); the libraries check the result.
 */

/* Returns true when s ends with suffix. */
static bool endswith(const char *s, const char *suffix) {
        size_t n = strlen(s), m = strlen(suffix);
        return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Returns what to do with host_path (snapshot.h); cannot fail. */
enum redact_action redact_rule(const char *host_path, const char **ret_why) {
        const char *p = host_path;
        const char *rest = startswith(p, "/proc/");
        if (rest) {
                const char *slash = strchr(rest, '/');
                if (slash &&
                    (streq(slash, "/environ") || (startswith(slash, "/task/") && endswith(slash, "/environ")))) {
                        *ret_why = "process environment: holds credentials, never copied";
                        return REDACT_OMIT;
                }
                *ret_why = NULL;
                return REDACT_NONE;
        }
        if (startswith(p, "/var/run/secrets/") || startswith(p, "/run/secrets/")) {
                *ret_why = "mounted secret or service account token: content replaced";
                return REDACT_REPLACE;
        }
        const char *base = strrchr(p, '/');
        base = base ? base + 1 : p;
        static const char *const suffixes[] = { ".key", ".pem", ".crt", ".cert",    ".der",
                                                ".p12", ".pfx", ".jks", ".keystore" };
        static const char *const names[] = { "id_rsa", "id_ecdsa", "id_ed25519", "token" };
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++)
                if (endswith(base, suffixes[i])) {
                        *ret_why = "key or certificate file: content replaced";
                        return REDACT_REPLACE;
                }
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (streq(base, names[i])) {
                        *ret_why = "key or token file: content replaced";
                        return REDACT_REPLACE;
                }
        if (startswith(p, "/sys/")) {
                *ret_why = NULL;
                return REDACT_NONE;
        }
        *ret_why = "credential values (token, key data, password, secret) replaced";
        return REDACT_FILTER;
}

/* ---- credential names ---- */

/* Returns true when key (n bytes; lower-cased, '_' read as '-') names a credential: token,
 * password, secret, auth, Authorization, key and certificate data, API and access keys. */
static bool secret_key(const char *key, size_t n) {
        char k[128];
        if (n == 0 || n >= sizeof k) return false;
        for (size_t i = 0; i < n; i++) k[i] = key[i] == '_' ? '-' : (char)tolower((unsigned char)key[i]);
        k[n] = 0;
        static const char *const exact[] = { "identitytoken", "registrytoken",       "passwd", "pwd",
                                             "authorization", "proxy-authorization", "cookie", "set-cookie" };
        static const char *const contains[] = { "password", "passwd", "secret", "credential" };
        static const char *const suffix[] = { "token",       "auth",       "key-data",   "certificate-data",
                                              "private-key", "access-key", "secret-key", "api-key",
                                              "apikey" };
        for (size_t i = 0; i < ELEMENTSOF(exact); i++)
                if (streq(k, exact[i])) return true;
        for (size_t i = 0; i < ELEMENTSOF(contains); i++)
                if (strstr(k, contains[i])) return true;
        for (size_t i = 0; i < ELEMENTSOF(suffix); i++)
                if (endswith(k, suffix[i])) return true;
        return false;
}

/* Returns true for the characters of a key or flag name. */
static bool keychar(char c) {
        return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.';
}

/* Returns true when s (n bytes) is a credential flag or variable: "--token", "AWS_SECRET_ACCESS_KEY"
 * (leading dashes skipped, nothing but key characters). */
static bool secret_flag(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!keychar(s[i])) return false;
        while (n > 0 && *s == '-') {
                s++;
                n--;
        }
        return secret_key(s, n);
}

/* Returns true when the key (n bytes) names a credential by itself or by its last "/" segment
 * (annotations such as "example.com/api-token"). */
static bool secret_name(const char *k, size_t n) {
        const char *slash = memrchr(k, '/', n);
        return secret_key(k, n) || (slash && secret_key(slash + 1, n - (size_t)(slash + 1 - k)));
}

/* Returns true when a value (n bytes) holds nothing to hide: empty, true, false, or REDACTED. */
static bool harmless(const char *v, size_t n) {
        return n == 0 || (n == 4 && strncasecmp(v, "true", 4) == 0) || (n == 5 && strncasecmp(v, "false", 5) == 0) ||
               (n == 8 && memcmp(v, "REDACTED", 8) == 0);
}

/* ---- free text: URLs, Bearer tokens, key=value, --flag value ---- */

/* Returns true when c ends a bare value in free text (raw: a backslash too, as it escapes). */
static bool value_stop(char c, bool raw) {
        return c == 0 || isspace((unsigned char)c) || strchr("\"'`,;&)}]<>", c) || (raw && c == '\\');
}

/* Returns the length of an HTTP authorization scheme word and the blanks after it at s (n bytes)
 * when a credential follows it ("Bearer ", "Basic ", ...), 0 otherwise. */
static size_t scheme_len(const char *s, size_t n) {
        static const char *const schemes[] = { "bearer", "basic", "token", "digest", "negotiate" };
        for (size_t i = 0; i < ELEMENTSOF(schemes); i++) {
                size_t m = strlen(schemes[i]), j = m;
                if (n <= m || strncasecmp(s, schemes[i], m) != 0 || (s[m] != ' ' && s[m] != '\t')) continue;
                while (j < n && (s[j] == ' ' || s[j] == '\t')) j++;
                return j < n ? j : 0;
        }
        return 0;
}

/* Returns the index of the quote closing the one at s[i], or n when it does not close (raw text:
 * a backslash escapes the next character inside double quotes, '' is a quote inside single ones). */
static size_t quote_end(const char *s, size_t n, size_t i, bool raw) {
        char q = s[i];
        for (i++; i < n; i++) {
                if (raw && ((q == '"' && s[i] == '\\') || (q == '\'' && s[i] == q && i + 1 < n && s[i + 1] == q))) {
                        i++;
                        continue;
                }
                if (s[i] == q) return i;
        }
        return n;
}

/* Copies s[*done, a) to out, then REDACTED in place of s[a, b), unless that value is harmless; moves
 * *done to b. Returns 1 when it replaced, 0 otherwise. */
static size_t replace_span(const char *s, size_t *done, size_t a, size_t b, struct buf *out) {
        if (b <= a || harmless(s + a, b - a)) return 0;
        buf_append(out, s + *done, a - *done);
        buf_puts(out, "REDACTED");
        *done = b;
        return 1;
}

/* Appends s (n bytes of free text: a line, a string value, an argument) to out with credentials
 * replaced by REDACTED: the user information of URLs ("scheme://user:password@host"), the token
 * after "Bearer", the values of credential keys written "key=V", "key: V", "\"key\": \"V\"" or
 * "--key V", and the credential after an authorization scheme ("Authorization: Basic V"). raw: s
 * is text as written in a file, where a backslash escapes (values stop there). Returns the number
 * of values replaced; cannot fail. */
static size_t redact_words(const char *s, size_t n, bool raw, struct buf *out) {
        size_t count = 0, i = 0, done = 0;
        while (i < n) {
                char c = s[i];
                if (c == '-' && n - i > 10 && memcmp(s + i, "-----BEGIN", 10) == 0) {
                        /* a PEM private key in one string: what lies between its BEGIN and END lines */
                        const char *eol = memchr(s + i, '\n', n - i);
                        size_t le = eol ? (size_t)(eol - s) : n;
                        const char *h = memmem(s + i, le - i, "PRIVATE KEY-----", 16);
                        if (h) {
                                size_t a = (size_t)(h - s) + 16;
                                const char *end = memmem(s + a, n - a, "-----END", 8);
                                size_t b = end ? (size_t)(end - s) : n;
                                buf_append(out, s + done, a - done);
                                buf_puts(out, raw ? "REDACTED" : "\nREDACTED\n");
                                done = b;
                                count++;
                                i = b + (end ? 8 : 0);
                                continue;
                        }
                }
                if (c == ':' && i + 2 < n && s[i + 1] == '/' && s[i + 2] == '/' && i > 0 &&
                    isalnum((unsigned char)s[i - 1])) {
                        /* a URL: everything up to the last '@' of the authority is user information
                         * (which may hold the sub-delimiters ,;&=!$*+ and '@' itself) */
                        size_t a = i + 3, j = a, at = 0;
                        for (; j < n && s[j] && !isspace((unsigned char)s[j]) && !strchr("/?#\"'`<>", s[j]); j++) {
                                if (raw && s[j] == '\\') break;
                                if (s[j] == '@') at = j;
                        }
                        if (at > a) count += replace_span(s, &done, a, at, out);
                        i = at > a ? at : a;
                        continue;
                }
                if (!keychar(c) || (i > 0 && keychar(s[i - 1]))) {
                        i++;
                        continue;
                }
                size_t k0 = i, k1 = i;
                while (k1 < n && keychar(s[k1])) k1++;
                size_t p = k1;
                if (k0 > 0 && (s[k0 - 1] == '"' || s[k0 - 1] == '\'') && p < n && s[p] == s[k0 - 1]) p++; /* "key": */
                size_t sch = scheme_len(s + k0, n - k0);
                if (sch > 0 && k1 - k0 == 6 && strncasecmp(s + k0, "bearer", 6) == 0) {
                        size_t a = k0 + sch, b = a;
                        while (b < n && !value_stop(s[b], raw)) b++;
                        count += replace_span(s, &done, a, b, out);
                        i = b;
                        continue;
                }
                if (!secret_flag(s + k0, k1 - k0)) {
                        i = k1;
                        continue;
                }
                size_t v = p, v0;
                while (v < n && (s[v] == ' ' || s[v] == '\t')) v++;
                bool colon =
                        v + 1 < n && s[v] == ':' && s[v + 1] && strchr(" \t\"'", s[v + 1]); /* "key: V", "key":"V" */
                if (v < n && (s[v] == '=' || colon)) {
                        v0 = v + 1;
                        while (v0 < n && (s[v0] == ' ' || s[v0] == '\t')) v0++;
                } else if (s[k0] == '-' && v > p && v < n && s[v] != '-' && s[v] != '\n') {
                        v0 = v; /* "--password V" */
                } else {
                        i = k1;
                        continue;
                }
                if (v0 >= n || s[v0] == '{' || s[v0] == '[') {
                        i = v0;
                        continue;
                }
                size_t a, b;
                if (s[v0] == '"' || s[v0] == '\'') {
                        a = v0 + 1;
                        b = quote_end(s, n, v0, raw);
                } else {
                        a = v0 + scheme_len(s + v0, n - v0);
                        for (b = a; b < n && !value_stop(s[b], raw);) b++;
                }
                count += replace_span(s, &done, a, b, out);
                i = b;
        }
        buf_append(out, s + done, n - done);
        return count;
}

/* ---- command lines ---- */

/* Appends one argument (n bytes) of a command line to out, redacted: the argument after a
 * credential flag ("--password V", *value_next says one came before; "Bearer" keeps it waiting),
 * the value of "--token=V" or "KEY=V", and the free-text rules inside any other argument. Sets
 * *value_next for the next argument. Returns the number of values replaced; cannot fail. */
static size_t redact_arg(const char *arg, size_t n, bool *value_next, struct buf *out) {
        if (*value_next && n > 0) {
                if (n == 6 && strncasecmp(arg, "bearer", 6) == 0) {
                        buf_append(out, arg, n);
                        return 0;
                }
                *value_next = false;
                if (harmless(arg, n)) {
                        buf_append(out, arg, n);
                        return 0;
                }
                buf_puts(out, "REDACTED");
                return 1;
        }
        *value_next = false;
        const char *eq = memchr(arg, '=', n);
        if (eq && eq > arg && secret_flag(arg, (size_t)(eq - arg))) {
                size_t k = (size_t)(eq - arg) + 1;
                if (harmless(arg + k, n - k)) {
                        buf_append(out, arg, n);
                        return 0;
                }
                buf_append(out, arg, k);
                buf_puts(out, "REDACTED");
                return 1;
        }
        if (!eq &&
            ((n > 2 && arg[0] == '-' && secret_flag(arg, n)) || (n == 6 && strncasecmp(arg, "bearer", 6) == 0))) {
                buf_append(out, arg, n);
                *value_next = true;
                return 0;
        }
        return redact_words(arg, n, false, out);
}

/* Returns the number of values replaced in a NUL-separated command line (snapshot.h); cannot fail. */
size_t redact_cmdline(const char *data, size_t len, struct buf *out) {
        size_t count = 0, pos = 0;
        bool value_next = false;
        while (pos < len) {
                const char *arg = data + pos;
                const char *nul = memchr(arg, 0, len - pos);
                size_t n = nul ? (size_t)(nul - arg) : len - pos;
                pos += n + (nul ? 1 : 0);
                count += redact_arg(arg, n, &value_next, out);
                if (nul) buf_append(out, "", 1); /* the NUL separator */
        }
        if (!out->data) buf_append(out, "", 0);
        return count;
}

/* ---- Prometheus sample lines ---- */

/* Appends a sample line with labels (s, n bytes: name{label="value",...} value) to out with the
 * values of credential-named labels replaced and the free-text rules applied to the others.
 * Returns the number replaced, or -1 (out untouched) when the line is not such a sample line. */
static int redact_prom_line(const char *s, size_t n, struct buf *out) {
        size_t i = 0;
        if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_' || s[0] == ':')) return -1;
        while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == ':')) i++;
        if (i >= n || s[i] != '{') return -1;
        struct buf b = { 0 };
        size_t count = 0, done = 0;
        i++;
        for (;;) {
                while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
                if (i < n && s[i] == '}') break;
                size_t l0 = i;
                while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '_')) i++;
                size_t l1 = i;
                while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
                if (l1 == l0 || i >= n || s[i] != '=') goto bad;
                i++;
                while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
                if (i >= n || s[i] != '"') goto bad;
                size_t a = i + 1, e = quote_end(s, n, i, true);
                if (e >= n) goto bad;
                if (secret_key(s + l0, l1 - l0)) {
                        count += replace_span(s, &done, a, e, &b);
                } else {
                        struct buf w = { 0 };
                        size_t c = redact_words(s + a, e - a, true, &w);
                        if (c > 0) {
                                buf_append(&b, s + done, a - done);
                                buf_append(&b, w.data, w.len);
                                done = e;
                                count += c;
                        }
                        buf_free(&w);
                }
                i = e + 1;
                while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
                if (i < n && s[i] == ',') {
                        i++;
                        continue;
                }
                if (i < n && s[i] == '}') break;
                goto bad;
        }
        buf_append(&b, s + done, n - done);
        buf_append(out, b.data, b.len);
        buf_free(&b);
        return (int)count;
bad:
        buf_free(&b);
        return -1;
}

/* ---- line rules (YAML, INI, env files, Prometheus pages, TOML that does not parse) ---- */

/* What a line leaves for the next ones. */
struct line_state {
        bool in_key;            /* inside a PEM private key block */
        const char *toml_close; /* inside a multi-line TOML string being dropped: its closing delimiter */
        long cont_col;          /* >= 0: lines indented deeper continue a redacted value */
        bool cont_all;          /* ... all of them (block scalar, open quote), else only those that hold no key */
        bool cont_first;        /* the first continuation line is the value itself ("token:" then "  V") */
        char cont_quote;        /* the quote of a quoted value that goes on below: its closing line keeps it */
        long name_col;          /* >= 0: "name: <credential>" seen at this column; its sibling "value:" goes */
};

/* Returns the number of leading blanks of line (n bytes). */
static size_t indent_of(const char *line, size_t n) {
        size_t i = 0;
        while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
        return i;
}

/* Appends the carriage return that ends line (n bytes) in a CRLF file, if it has one. */
static void keep_cr(const char *line, size_t n, struct buf *out) {
        if (n > 0 && line[n - 1] == '\r') buf_puts(out, "\r");
}

/* Notes in st that the lines indented deeper than col continue a redacted value: all of them
 * (all), or only those that hold no key; quote: the value is quoted and closes below. */
static void continue_below(struct line_state *st, long col, bool all, char quote) {
        st->cont_col = col;
        st->cont_all = all;
        st->cont_first = false;
        st->cont_quote = quote;
}

/* Returns true when line (n bytes) holds structure of its own: a list item, a comment, a table
 * header, or a key followed by ':' (then a blank or the end) or '='. */
static bool line_has_key(const char *line, size_t n) {
        size_t i = indent_of(line, n);
        if (i + 1 < n && line[i] == '-' && line[i + 1] == ' ') return true;
        if (i < n && (line[i] == '#' || line[i] == '[')) return true;
        if (i < n && (line[i] == '"' || line[i] == '\'')) i++;
        size_t k = i;
        while (i < n && (keychar(line[i]) || line[i] == '/')) i++;
        if (i == k) return false;
        if (i < n && (line[i] == '"' || line[i] == '\'')) i++;
        while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
        return i < n &&
               (line[i] == '=' || (line[i] == ':' && (i + 1 == n || line[i + 1] == ' ' || line[i + 1] == '\t')));
}

/* Returns the end of a multi-line TOML string's closing delimiter (3 quotes of delim, with up to two
 * more quotes that belong to the string) found in s (n bytes), or 0 when s has none. */
static size_t toml_close_end(const char *s, size_t n, const char *delim) {
        const char *p = memmem(s, n, delim, 3);
        if (!p) return 0;
        size_t e = (size_t)(p - s) + 3;
        for (int extra = 0; extra < 2 && e < n && s[e] == delim[0]; extra++) e++;
        return e;
}

/* Writes line (n bytes, without its newline) with the value of a credential key at its start
 * replaced ("k: v", "k = v", "\"k\": v", "- K=V", "export K=V"), and notes in st what the next
 * lines continue. Returns true when it wrote the line (a value was replaced), false (nothing
 * written) otherwise. */
static bool redact_line(const char *line, size_t n, struct line_state *st, struct buf *out) {
        size_t i = indent_of(line, n);
        bool item = false;
        if (i + 1 < n && line[i] == '-' && line[i + 1] == ' ') { /* a YAML list item */
                item = true;
                i += 2;
                while (i < n && line[i] == ' ') i++;
        }
        if (i + 6 < n && memcmp(line + i, "export ", 7) == 0) i += 7; /* shell env files */
        long col = (long)i;
        if (st->name_col >= 0 && (col < st->name_col || (item && col == st->name_col))) st->name_col = -1;
        char quote = 0;
        if (i < n && (line[i] == '"' || line[i] == '\'')) quote = line[i++];
        size_t k0 = i;
        while (i < n && (keychar(line[i]) || line[i] == '/')) i++;
        size_t k1 = i;
        if (quote) {
                if (i >= n || line[i] != quote) return false;
                i++;
        }
        while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
        if (k1 == k0 || i >= n || (line[i] != ':' && line[i] != '=')) return false;
        if (line[i] == ':' && i + 1 < n && line[i + 1] != ' ' && line[i + 1] != '\t' && line[i + 1] != '\r')
                return false;
        bool yaml = line[i] == ':'; /* only YAML values go on in deeper lines ("k = v" ones end with theirs) */
        i++;
        while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
        bool is_value = st->name_col == col && k1 - k0 == 5 && memcmp(line + k0, "value", 5) == 0;
        if (!is_value && !secret_name(line + k0, k1 - k0)) {
                if (k1 - k0 == 4 && memcmp(line + k0, "name", 4) == 0 && i < n) {
                        /* "- name: AWS_SECRET_ACCESS_KEY" (env, httpHeaders): its "value:" goes */
                        size_t a = i, b = i;
                        if (line[a] == '"' || line[a] == '\'') {
                                b = quote_end(line, n, a, true);
                                a++;
                        } else {
                                while (b < n && !isspace((unsigned char)line[b]) && line[b] != '#') b++;
                        }
                        if (secret_key(line + a, b - a)) st->name_col = col;
                }
                return false;
        }
        if (is_value) st->name_col = -1;
        if (i >= n || line[i] == '#' || (line[i] == '\r' && i + 1 == n)) {
                /* "token:" and the value on the next, deeper line, or a mapping below: the next lines tell */
                if (yaml) {
                        continue_below(st, col, false, 0);
                        st->cont_first = true;
                }
                return false;
        }
        if (line[i] == '{' || line[i] == '[') return false; /* nested: the free-text rules look inside */
        const char *v = line + i;
        size_t vn = n - i;
        if (vn >= 3 && (memcmp(v, "\"\"\"", 3) == 0 || memcmp(v, "'''", 3) == 0)) {
                /* a multi-line TOML string: one line "REDACTED" with a line-ending backslash, the
                 * lines it spanned left empty (the line count stays, so does a parse error's line) */
                const char *delim = v[0] == '"' ? "\"\"\"" : "'''";
                size_t e = toml_close_end(v + 3, vn - 3, delim);
                buf_append(out, line, i);
                if (e > 0) {
                        buf_puts(out, "\"REDACTED\"");
                        buf_append(out, v + 3 + e, vn - 3 - e);
                } else {
                        buf_puts(out, "\"\"\"REDACTED\\");
                        keep_cr(line, n, out);
                        st->toml_close = delim;
                }
                return true;
        }
        if (yaml && (v[0] == '|' || v[0] == '>')) {
                size_t j = 1;
                while (j < vn && (isdigit((unsigned char)v[j]) || v[j] == '-' || v[j] == '+')) j++;
                while (j < vn && (v[j] == ' ' || v[j] == '\t')) j++;
                if (j == vn || v[j] == '#' || v[j] == '\r') {
                        /* a YAML block scalar: the value on the key's line, the block's lines left empty */
                        buf_append(out, line, i);
                        buf_puts(out, "REDACTED");
                        keep_cr(line, n, out);
                        continue_below(st, col, true, 0);
                        return true;
                }
        }
        if (v[0] == '"' || v[0] == '\'') {
                size_t e = quote_end(line, n, i, true);
                if (e < n && harmless(v + 1, e - i - 1)) return false;
                buf_append(out, line, i + 1);
                buf_puts(out, "REDACTED");
                if (e < n) {
                        buf_append(out, line + e, n - e);
                } else {
                        /* a quoted value that goes on below: its lines are left empty but the
                         * closing quote (or, in TOML, stays unterminated, the parse error kept) */
                        keep_cr(line, n, out);
                        if (yaml) continue_below(st, col, true, v[0]);
                }
                return true;
        }
        size_t end = n;
        while (end > i && (line[end - 1] == ' ' || line[end - 1] == '\t' || line[end - 1] == '\r')) end--;
        if (end > i && line[end - 1] == ',') end--;
        if (harmless(line + i, end - i)) return false;
        buf_append(out, line, i);
        buf_puts(out, "REDACTED");
        buf_append(out, line + end, n - end);
        /* a plain YAML scalar may go on in deeper lines */
        if (yaml) continue_below(st, col, false, 0);
        return true;
}

/* Appends data (len bytes) to out redacted by the line rules (rule 4's last case). Returns the
 * number of values replaced; cannot fail. */
static size_t redact_lines(const char *data, size_t len, struct buf *out) {
        size_t count = 0, pos = 0;
        struct line_state st = { .cont_col = -1, .name_col = -1 };
        while (pos < len) {
                const char *line = data + pos;
                const char *nl = memchr(line, '\n', len - pos);
                size_t n = nl ? (size_t)(nl - line) : len - pos;
                pos += n + (nl ? 1 : 0);
                if (st.in_key) {
                        if (memmem(line, n, "-----END", 8)) {
                                st.in_key = false;
                                buf_append(out, line, n);
                                if (nl) buf_puts(out, "\n");
                        }
                        continue;
                }
                if (st.toml_close) {
                        size_t e = toml_close_end(line, n, st.toml_close);
                        if (e > 0) {
                                buf_puts(out, "\"\"\"");
                                buf_append(out, line + e, n - e);
                                st.toml_close = NULL;
                        } else {
                                keep_cr(line, n, out);
                        }
                        if (nl) buf_puts(out, "\n");
                        continue;
                }
                if (st.cont_col >= 0) {
                        size_t ind = indent_of(line, n);
                        if (ind == n || (line[ind] == '\r' && ind + 1 == n)) {
                                buf_append(out, line, n); /* a blank line goes on either way */
                                if (nl) buf_puts(out, "\n");
                                continue;
                        }
                        if ((long)ind > st.cont_col && (st.cont_all || !line_has_key(line, n))) {
                                size_t e = n;
                                if (st.cont_quote) {
                                        /* the line that closes the quoted value keeps the quote and what follows */
                                        for (e = ind; e < n; e++) {
                                                if (st.cont_quote == '"' && line[e] == '\\')
                                                        e++;
                                                else if (line[e] == st.cont_quote && st.cont_quote == '\'' &&
                                                         e + 1 < n && line[e + 1] == '\'')
                                                        e++; /* '' in a single-quoted YAML scalar */
                                                else if (line[e] == st.cont_quote)
                                                        break;
                                        }
                                }
                                if (e < n) {
                                        buf_append(out, line, ind);
                                        buf_append(out, line + e, n - e);
                                        st.cont_col = -1;
                                } else if (st.cont_first && !harmless(line + ind, n - ind)) {
                                        buf_append(out, line, ind);
                                        buf_puts(out, "REDACTED");
                                        keep_cr(line, n, out);
                                        count++;
                                } else {
                                        keep_cr(line, n, out);
                                }
                                st.cont_first = false;
                                if (nl) buf_puts(out, "\n");
                                continue;
                        }
                        st.cont_col = -1;
                }
                if (memmem(line, n, "-----BEGIN", 10) && memmem(line, n, "PRIVATE KEY-----", 16) &&
                    !memmem(line, n, "-----END", 8)) {
                        /* a PEM private key block: its lines go, REDACTED at the BEGIN line's indentation
                         * (inside a YAML block scalar too); on one line, the free-text rules take it */
                        buf_append(out, line, n);
                        buf_puts(out, "\n");
                        buf_append(out, line, indent_of(line, n));
                        buf_puts(out, "REDACTED\n");
                        st.in_key = true;
                        count++;
                        continue;
                }
                int c;
                if (redact_line(line, n, &st, out))
                        count++;
                else if ((c = redact_prom_line(line, n, out)) >= 0)
                        count += (size_t)c;
                else
                        count += redact_words(line, n, true, out);
                if (nl) buf_puts(out, "\n");
        }
        return count;
}

/* ---- TOML: string tokens rewritten in the text ---- */

/* A scan over TOML text that toml_parse accepted. */
struct tscan {
        const char *s;
        size_t n, i;
        size_t done; /* bytes of s already copied to out */
        struct buf out;
        size_t count;
};

/* Skips blanks. */
static void t_blank(struct tscan *t) {
        while (t->i < t->n && (t->s[t->i] == ' ' || t->s[t->i] == '\t')) t->i++;
}

/* Skips blanks, newlines and comments. */
static void t_space(struct tscan *t) {
        for (;;) {
                t_blank(t);
                if (t->i < t->n && t->s[t->i] == '#')
                        while (t->i < t->n && t->s[t->i] != '\n') t->i++;
                if (t->i < t->n && (t->s[t->i] == '\n' || t->s[t->i] == '\r')) {
                        t->i++;
                        continue;
                }
                return;
        }
}

/* Returns the end (past the closing quotes) of the string token at s[i] (a quote), or 0 when it does
 * not close. */
static size_t t_string_end(const char *s, size_t n, size_t i) {
        char q = s[i];
        if (i + 2 < n && s[i + 1] == q && s[i + 2] == q) {
                for (size_t j = i + 3; j < n;) {
                        if (q == '"' && s[j] == '\\') {
                                j += 2;
                                continue;
                        }
                        size_t r = 0;
                        while (j + r < n && s[j + r] == q) r++;
                        if (r >= 3) return j + (r > 5 ? 5 : r);
                        j += r ? r : 1;
                }
                return 0;
        }
        for (size_t j = i + 1; j < n; j++) {
                if (q == '"' && s[j] == '\\') {
                        j++;
                        continue;
                }
                if (s[j] == q) return j + 1;
                if (s[j] == '\n') return 0;
        }
        return 0;
}

/* Decodes the TOML string token tok (n bytes, quotes included) with toml_parse. Returns 0 and the
 * string (malloc'd, NUL-terminated, its length in *ret_len), or -EINVAL. */
static int toml_decode(const char *tok, size_t n, char **ret, size_t *ret_len) {
        struct buf b = { 0 };
        buf_puts(&b, "x = ");
        buf_append(&b, tok, n);
        buf_puts(&b, "\n");
        _cleanup_toml_ struct toml_value *doc = NULL;
        int r = toml_parse(b.data, b.len, &doc, NULL);
        buf_free(&b);
        const struct toml_value *v = r < 0 ? NULL : toml_table_get(doc, "x");
        if (!toml_string(v)) return -EINVAL;
        size_t len = toml_string_len(v);
        char *s = xmalloc(len + 1);
        memcpy(s, toml_string(v), len);
        s[len] = 0;
        *ret = s;
        *ret_len = len;
        return 0;
}

/* Appends s (len bytes) to out as a TOML basic string; with newlines > 0 as a multi-line one that
 * spans that many line breaks (a line-ending backslash swallows them), so the line count stays. */
static void toml_encode(struct buf *out, const char *s, size_t len, size_t newlines, bool crlf) {
        buf_puts(out, newlines ? "\"\"\"" : "\"");
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];
                switch (c) {
                case '"': buf_puts(out, "\\\""); break;
                case '\\': buf_puts(out, "\\\\"); break;
                case '\n': buf_puts(out, "\\n"); break;
                case '\t': buf_puts(out, "\\t"); break;
                case '\r': buf_puts(out, "\\r"); break;
                default:
                        if (c < 0x20 || c == 0x7f)
                                buf_printf(out, "\\u%04X", c);
                        else
                                buf_append(out, s + i, 1);
                }
        }
        if (newlines) {
                buf_puts(out, "\\");
                for (size_t i = 0; i < newlines; i++) buf_puts(out, crlf ? "\r\n" : "\n");
                buf_puts(out, "\"\"\"");
        } else {
                buf_puts(out, "\"");
        }
}

/* Parses a key (dotted, bare or quoted parts) at t->i. Returns 0 with its last part decoded in
 * *ret_last (malloc'd), or -EINVAL. */
static int t_key(struct tscan *t, char **ret_last) {
        char *last = NULL;
        for (;;) {
                t_blank(t);
                free(last);
                last = NULL;
                if (t->i >= t->n) return -EINVAL;
                if (t->s[t->i] == '"' || t->s[t->i] == '\'') {
                        size_t e = t_string_end(t->s, t->n, t->i), len;
                        if (e == 0 || toml_decode(t->s + t->i, e - t->i, &last, &len) < 0) return -EINVAL;
                        t->i = e;
                } else {
                        size_t a = t->i;
                        while (t->i < t->n &&
                               (isalnum((unsigned char)t->s[t->i]) || t->s[t->i] == '_' || t->s[t->i] == '-'))
                                t->i++;
                        if (t->i == a) return -EINVAL;
                        last = xstrndup(t->s + a, t->i - a);
                }
                t_blank(t);
                if (t->i < t->n && t->s[t->i] == '.') {
                        t->i++;
                        continue;
                }
                *ret_last = last;
                return 0;
        }
}

/* Rewrites the string token at t->i when its value changes: REDACTED under a credential key, the
 * free-text rules otherwise. Returns 0, or -EINVAL when the token does not scan. */
static int t_string(struct tscan *t, const char *key) {
        size_t a = t->i, e = t_string_end(t->s, t->n, t->i), len;
        if (e == 0) return -EINVAL;
        t->i = e;
        _cleanup_free_ char *val = NULL;
        if (toml_decode(t->s + a, e - a, &val, &len) < 0) return -EINVAL;
        struct buf nv = { 0 };
        size_t c = 0;
        if (key && secret_key(key, strlen(key))) {
                if (!harmless(val, len)) {
                        buf_puts(&nv, "REDACTED");
                        c = 1;
                }
        } else if (!memchr(val, 0, len)) {
                c = redact_words(val, len, false, &nv);
        }
        if (c > 0) {
                size_t newlines = 0;
                bool crlf = false;
                for (size_t k = a; k < e; k++)
                        if (t->s[k] == '\n') {
                                newlines++;
                                crlf = crlf || (k > a && t->s[k - 1] == '\r');
                        }
                buf_append(&t->out, t->s + t->done, a - t->done);
                toml_encode(&t->out, nv.data, nv.len, newlines, crlf);
                t->done = e;
                t->count += c;
        }
        buf_free(&nv);
        return 0;
}

/* Scans a value at t->i (key: the key it is under, for arrays the array's). Returns 0 or -EINVAL. */
static int t_value(struct tscan *t, const char *key, unsigned depth) {
        if (depth > TOML_MAX_DEPTH + 2 || t->i >= t->n) return -EINVAL;
        char c = t->s[t->i];
        if (c == '"' || c == '\'') return t_string(t, key);
        if (c == '[') {
                t->i++;
                for (;;) {
                        t_space(t);
                        if (t->i < t->n && t->s[t->i] == ']') break;
                        if (t_value(t, key, depth + 1) < 0) return -EINVAL;
                        t_space(t);
                        if (t->i < t->n && t->s[t->i] == ',') {
                                t->i++;
                                continue;
                        }
                        if (t->i < t->n && t->s[t->i] == ']') break;
                        return -EINVAL;
                }
                t->i++;
                return 0;
        }
        if (c == '{') {
                t->i++;
                t_blank(t);
                if (t->i < t->n && t->s[t->i] == '}') {
                        t->i++;
                        return 0;
                }
                for (;;) {
                        _cleanup_free_ char *k = NULL;
                        if (t_key(t, &k) < 0 || t->i >= t->n || t->s[t->i] != '=') return -EINVAL;
                        t->i++;
                        t_blank(t);
                        if (t_value(t, k, depth + 1) < 0) return -EINVAL;
                        t_blank(t);
                        if (t->i < t->n && t->s[t->i] == ',') {
                                t->i++;
                                continue;
                        }
                        if (t->i < t->n && t->s[t->i] == '}') {
                                t->i++;
                                return 0;
                        }
                        return -EINVAL;
                }
        }
        /* numbers, booleans, dates and times ("1979-05-27 07:32:00Z" has a blank inside) */
        size_t a = t->i;
        for (;;) {
                while (t->i < t->n &&
                       (isalnum((unsigned char)t->s[t->i]) || (t->s[t->i] && strchr("_:.+-", t->s[t->i]))))
                        t->i++;
                if (t->i - a == 10 && t->s[a + 4] == '-' && t->s[a + 7] == '-' && t->i + 1 < t->n &&
                    t->s[t->i] == ' ' && isdigit((unsigned char)t->s[t->i + 1])) {
                        t->i++;
                        continue;
                }
                break;
        }
        return t->i > a ? 0 : -EINVAL;
}

/* Returns true when a and b have the same shape: tables with the same keys in the same order,
 * arrays of the same length, the same types at every place. */
static bool toml_same_shape(const struct toml_value *a, const struct toml_value *b) {
        if (toml_type_of(a) != toml_type_of(b)) return false;
        if (toml_type_of(a) == TOML_TABLE) {
                if (toml_table_size(a) != toml_table_size(b)) return false;
                for (size_t i = 0; i < toml_table_size(a); i++)
                        if (toml_table_key_len_at(a, i) != toml_table_key_len_at(b, i) ||
                            memcmp(toml_table_key_at(a, i), toml_table_key_at(b, i), toml_table_key_len_at(a, i)) !=
                                    0 ||
                            !toml_same_shape(toml_table_value_at(a, i), toml_table_value_at(b, i)))
                                return false;
        } else if (toml_type_of(a) == TOML_ARRAY) {
                if (toml_array_len(a) != toml_array_len(b)) return false;
                for (size_t i = 0; i < toml_array_len(a); i++)
                        if (!toml_same_shape(toml_array_at(a, i), toml_array_at(b, i))) return false;
        }
        return true;
}

/* Appends data (len bytes) to out with the string values of a TOML document redacted (rule 4).
 * Returns 0 and the number replaced in *ret_count; -EINVAL (out untouched) when data is not TOML
 * or the result would not parse to the same shape. */
static int redact_toml(const char *data, size_t len, struct buf *out, size_t *ret_count) {
        _cleanup_toml_ struct toml_value *doc = NULL;
        if (toml_parse(data, len, &doc, NULL) < 0) return -EINVAL;
        struct tscan t = { .s = data, .n = len };
        if (len >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0) t.i = 3;
        for (;;) {
                t_space(&t);
                if (t.i >= t.n) break;
                _cleanup_free_ char *k = NULL;
                if (t.s[t.i] == '[') {
                        bool aot = t.i + 1 < t.n && t.s[t.i + 1] == '[';
                        t.i += aot ? 2 : 1;
                        if (t_key(&t, &k) < 0 || t.i >= t.n || t.s[t.i] != ']') goto bad;
                        t.i++;
                        if (aot && (t.i >= t.n || t.s[t.i++] != ']')) goto bad;
                } else {
                        if (t_key(&t, &k) < 0 || t.i >= t.n || t.s[t.i] != '=') goto bad;
                        t.i++;
                        t_blank(&t);
                        if (t_value(&t, k, 0) < 0) goto bad;
                }
                t_blank(&t);
                if (t.i < t.n && t.s[t.i] == '#')
                        while (t.i < t.n && t.s[t.i] != '\n') t.i++;
                if (t.i < t.n && t.s[t.i] == '\r') t.i++;
                if (t.i < t.n && t.s[t.i] != '\n') goto bad;
        }
        buf_append(&t.out, data + t.done, len - t.done);
        if (t.count > 0) {
                _cleanup_toml_ struct toml_value *check = NULL;
                if (toml_parse(t.out.data, t.out.len, &check, NULL) < 0 || !toml_same_shape(doc, check)) goto bad;
        }
        buf_append(out, t.out.data, t.out.len);
        buf_free(&t.out);
        *ret_count = t.count;
        return 0;
bad:
        buf_free(&t.out);
        return -EINVAL;
}

/* ---- JSON and API objects ---- */

/* Sets obj's string member k to REDACTED unless its value is harmless. Returns 1 when it did. */
static size_t redact_member(json_t *obj, const char *k) {
        const char *v = json_string_value(json_object_get(obj, k));
        if (!v || harmless(v, strlen(v))) return 0;
        json_object_set_new(obj, k, json_string("REDACTED"));
        return 1;
}

/* Returns the free-text redaction of the string x as a new string (NULL when nothing changed) and
 * the number replaced in *ret_count. */
static json_t *redact_json_words(json_t *x, size_t *ret_count) {
        struct buf out = { 0 };
        size_t len = json_string_length(x);
        const char *s = json_string_value(x);
        *ret_count = memchr(s, 0, len) ? 0 : redact_words(s, len, false, &out);
        json_t *r = NULL;
        if (*ret_count > 0) {
                r = json_stringn(out.data, out.len);
                if (!r) r = json_string("REDACTED"); /* cannot happen: the rules keep UTF-8 */
        }
        buf_free(&out);
        return r;
}

/* Redacts a command or args array in place (redact_arg: "--token=V", "--password V", "Bearer T",
 * the free-text rules in each string). Returns the count. */
static size_t redact_args(json_t *arr) {
        size_t n = 0, i;
        json_t *x;
        bool value_next = false;
        json_array_foreach(arr, i, x) {
                const char *s = json_string_value(x);
                if (!s) {
                        value_next = false;
                        continue;
                }
                struct buf out = { 0 };
                size_t c = redact_arg(s, json_string_length(x), &value_next, &out);
                if (c > 0) {
                        json_t *r = json_stringn(out.data, out.len);
                        json_array_set_new(arr, i, r ? r : json_string("REDACTED"));
                        n += c;
                }
                buf_free(&out);
        }
        return n;
}

/* Replaces every string value in obj (a Secret's data) with REDACTED. Returns the count. */
static size_t redact_all_values(json_t *obj) {
        size_t n = 0;
        const char *k;
        json_t *x;
        json_object_foreach(obj, k, x) if (json_is_string(x)) n += redact_member(obj, k);
        return n;
}

/* redact_api_json's walk (rule 6): secret says v is a Secret (an item of a SecretList). Returns
 * the count. */
static size_t redact_api_walk(json_t *v, bool secret) {
        size_t n = 0, i, c;
        json_t *x;
        if (json_is_array(v)) {
                json_array_foreach(v, i, x) {
                        json_t *r = json_is_string(x) ? redact_json_words(x, &c) : NULL;
                        if (r) {
                                json_array_set_new(v, i, r);
                                n += c;
                        } else {
                                n += redact_api_walk(x, secret);
                        }
                }
                return n;
        }
        if (!json_is_object(v)) return 0;
        const char *kind = json_string_value(json_object_get(v, "kind"));
        bool is_secret = secret || streq_ptr(kind, "Secret");
        bool secret_items = streq_ptr(kind, "SecretList");
        /* {"name": "Authorization", "value": V}: httpHeaders and lists like them */
        const char *name = json_string_value(json_object_get(v, "name"));
        if (name && secret_key(name, strlen(name))) n += redact_member(v, "value");
        const char *k;
        json_object_foreach(v, k, x) {
                if (json_is_string(x)) {
                        json_t *r;
                        if (secret_name(k, strlen(k))) {
                                n += redact_member(v, k);
                        } else if ((r = redact_json_words(x, &c))) {
                                json_object_set_new(v, k, r);
                                n += c;
                        }
                } else if (json_is_array(x) && secret_name(k, strlen(k))) {
                        /* "Authorization": ["Bearer T"] */
                        json_t *e;
                        json_array_foreach(x, i, e) {
                                const char *s = json_string_value(e);
                                if (s && !harmless(s, strlen(s))) {
                                        json_array_set_new(x, i, json_string("REDACTED"));
                                        n++;
                                } else if (!s) {
                                        n += redact_api_walk(e, false);
                                }
                        }
                } else if (is_secret && (streq(k, "data") || streq(k, "stringData")) && json_is_object(x)) {
                        n += redact_all_values(x);
                } else if (streq(k, "env") && json_is_array(x)) {
                        json_t *e;
                        json_array_foreach(x, i, e) {
                                json_t *r = json_is_string(e) ? redact_json_words(e, &c) : NULL; /* CDI: "K=V" */
                                if (r) {
                                        json_array_set_new(x, i, r);
                                        n += c;
                                } else if (json_is_object(e)) {
                                        n += redact_member(e, "value");
                                }
                        }
                } else if (streq(k, "annotations") && json_is_object(x)) {
                        if (json_is_string(json_object_get(x, "kubectl.kubernetes.io/last-applied-configuration")))
                                n += redact_member(x, "kubectl.kubernetes.io/last-applied-configuration");
                        n += redact_api_walk(x, false);
                } else if ((streq(k, "command") || streq(k, "args")) && json_is_array(x)) {
                        n += redact_args(x);
                } else {
                        n += redact_api_walk(x, secret_items && streq(k, "items"));
                }
        }
        return n;
}

/* Returns the count of values replaced in an API object or list (snapshot.h); cannot fail. */
size_t redact_api_json(json_t *v) {
        return redact_api_walk(v, false);
}

/* A scan over JSON text, beside the redacted tree of the same document. */
struct jscan {
        const char *s;
        size_t n, i;
        size_t done; /* bytes of s already copied to out */
        struct buf out;
};

/* Skips JSON whitespace. */
static void j_space(struct jscan *j) {
        while (j->i < j->n && (j->s[j->i] == ' ' || j->s[j->i] == '\t' || j->s[j->i] == '\n' || j->s[j->i] == '\r'))
                j->i++;
}

/* Returns the end (past the closing quote) of the JSON string at s[i], or 0 when it does not close. */
static size_t j_string_end(const char *s, size_t n, size_t i) {
        for (i++; i < n; i++) {
                if (s[i] == '\\')
                        i++;
                else if (s[i] == '"')
                        return i + 1;
        }
        return 0;
}

/* Scans the value at j->i, whose redacted form is r, and rewrites every string token whose value r
 * changed. Returns 0, or -EINVAL when text and tree do not match. */
static int j_value(struct jscan *j, json_t *r, unsigned depth) {
        j_space(j);
        if (depth > 4096 || j->i >= j->n) return -EINVAL;
        char c = j->s[j->i];
        if (c == '{' || c == '[') {
                size_t index = 0;
                j->i++;
                j_space(j);
                if (j->i < j->n && j->s[j->i] == (c == '{' ? '}' : ']')) {
                        j->i++;
                        return 0;
                }
                for (;;) {
                        json_t *child;
                        j_space(j);
                        if (c == '{') {
                                size_t a = j->i, e = j->i < j->n && j->s[a] == '"' ? j_string_end(j->s, j->n, a) : 0;
                                json_t *key = e ? json_loadb(j->s + a, e - a, JSON_DECODE_ANY, NULL) : NULL;
                                child = json_object_get(r, json_string_value(key) ?: "");
                                json_decref(key);
                                if (!e) return -EINVAL;
                                j->i = e;
                                j_space(j);
                                if (j->i >= j->n || j->s[j->i] != ':') return -EINVAL;
                                j->i++;
                        } else {
                                child = json_array_get(r, index++);
                        }
                        if (j_value(j, child, depth + 1) < 0) return -EINVAL;
                        j_space(j);
                        if (j->i < j->n && j->s[j->i] == ',') {
                                j->i++;
                                continue;
                        }
                        if (j->i < j->n && j->s[j->i] == (c == '{' ? '}' : ']')) {
                                j->i++;
                                return 0;
                        }
                        return -EINVAL;
                }
        }
        if (c == '"') {
                size_t a = j->i, e = j_string_end(j->s, j->n, a);
                if (!e || !json_is_string(r)) return -EINVAL;
                j->i = e;
                json_t *orig = json_loadb(j->s + a, e - a, JSON_DECODE_ANY, NULL);
                bool same = orig && json_equal(orig, r);
                json_decref(orig);
                if (!same) {
                        _cleanup_free_ char *enc = json_dumps(r, JSON_ENCODE_ANY);
                        if (!enc) return -EINVAL;
                        buf_append(&j->out, j->s + j->done, a - j->done);
                        buf_puts(&j->out, enc);
                        j->done = e;
                }
                return 0;
        }
        size_t a = j->i;
        while (j->i < j->n && j->s[j->i] && !strchr(",]} \t\r\n", j->s[j->i])) j->i++;
        return j->i > a ? 0 : -EINVAL;
}

/* Appends data (len bytes: a JSON object or array) to out with rule 6 applied to its values (rule
 * 4): only the string tokens whose value changed are rewritten, the rest of the text stays (when
 * text and tree cannot be matched, the redacted tree is written out instead). Returns 0 and the
 * number replaced in *ret_count, or -EINVAL (out untouched) when data is not such JSON. */
static int redact_json(const char *data, size_t len, struct buf *out, size_t *ret_count) {
        size_t i = 0;
        while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r')) i++;
        if (i >= len || (data[i] != '{' && data[i] != '[')) return -EINVAL;
        json_t *doc = json_loadb(data, len, 0, NULL);
        if (!doc) return -EINVAL;
        size_t count = redact_api_walk(doc, false);
        if (count == 0) {
                buf_append(out, data, len);
        } else {
                struct jscan j = { .s = data, .n = len };
                json_t *check = NULL;
                if (j_value(&j, doc, 0) == 0) {
                        buf_append(&j.out, data + j.done, len - j.done);
                        check = json_loadb(j.out.data, j.out.len, 0, NULL);
                }
                if (check && json_equal(check, doc)) {
                        buf_append(out, j.out.data, j.out.len);
                } else {
                        _cleanup_free_ char *s = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
                        buf_puts(out, s ? s : "\"REDACTED\"");
                        buf_puts(out, "\n");
                }
                json_decref(check);
                buf_free(&j.out);
        }
        json_decref(doc);
        *ret_count = count;
        return 0;
}

/* Returns the number of values replaced (snapshot.h): the file's format decides the rules: JSON,
 * TOML, or lines. Cannot fail. */
size_t redact_text(const char *data, size_t len, struct buf *out) {
        size_t count = 0;
        if (redact_json(data, len, out, &count) < 0 && redact_toml(data, len, out, &count) < 0)
                count = redact_lines(data, len, out);
        if (!out->data) buf_append(out, "", 0);
        return count;
}
