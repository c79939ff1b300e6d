/* redact.c: what a snapshot never holds: environments, mounted secrets, keys, certificates, credential values. */
#include "snapshot/snapshot.h"

#include <ctype.h>

/*
 * Rules (README "gpunode collect" lists them too):
 *  1. /proc/<pid>/environ (and task/<tid>/environ): never copied; environments carry credentials.
 *  2. Anything below /var/run/secrets/ or /run/secrets/ (service account tokens, mounted Secrets):
 *     content replaced by "REDACTED".
 *  3. Keys and certificates by name (*.key, *.pem, *.crt, *.cert, *.der, *.p12, *.pfx, *.jks,
 *     *.keystore, id_rsa, id_ecdsa, id_ed25519, files named token): content replaced by "REDACTED".
 *  4. Every other file outside /proc and /sys (which the kernel writes): the values of keys that
 *     name credentials (token, client-key-data, client-certificate-data, password, secret, auth,
 *     ... in YAML "k: v", TOML/INI/env "k = v" or JSON "\"k\": v" form, on one line) and PEM
 *     private key blocks are replaced by REDACTED; the rest of the file stays as it was. A
 *     kubeconfig keeps its clusters and contexts, its users lose their token/client-key-data.
 *  5. /proc/<pid>/cmdline: arguments "--token=V", "--password V", "TOKEN=V" (credential keys as in
 *     rule 4) keep their key and lose their value (redact_cmdline).
 *  6. Kubernetes API responses (redact_api_json): string values of credential keys (as rule 4, also
 *     an annotation's last "/" segment), every value of a Secret's data/stringData, env[].value,
 *     kubectl's last-applied-configuration annotation (a copy of the spec, env values included),
 *     and credential arguments in command/args arrays (as rule 5). Metrics pages: rule 4.
 * Line-based by design (rules 1-5): the file must stay as it is apart from the secret values, which a
 * parse-and-reprint through a YAML or TOML library would not keep.
 */

/* Returns true when s ends with suffix. */
static bool endswith(const char *s, const char *suffix) {
        size_t n = strlen(s), m = strlen(suffix);
        return n >= m && strcmp(s + n - m, suffix) == 0;
}

enum redact_action redact_rule(const char *host_path, const char **ret_why) {
        const char *p = host_path;
        const char *rest = startswith(p, "/proc/");
        if (rest) {
                const char *slash = strchr(rest, '/');
                if (slash && (streq(slash, "/environ") ||
                              (startswith(slash, "/task/") && endswith(slash, "/environ")))) {
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
        static const char *const suffixes[] = {".key", ".pem", ".crt", ".cert", ".der", ".p12", ".pfx", ".jks", ".keystore"};
        static const char *const names[] = {"id_rsa", "id_ecdsa", "id_ed25519", "token"};
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

/* Returns true when the key (n bytes) names a credential: token, password, secret, key data. */
static bool secret_key(const char *key, size_t n) {
        char k[64];
        if (n == 0 || n >= sizeof k) return false;
        for (size_t i = 0; i < n; i++) k[i] = key[i] == '_' ? '-' : (char)tolower((unsigned char)key[i]);
        k[n] = 0;
        static const char *const exact[] = {"auth", "identitytoken", "registrytoken", "apikey", "api-key", "passwd"};
        static const char *const suffix[] = {"token", "password", "secret", "key-data", "certificate-data", "private-key"};
        for (size_t i = 0; i < ELEMENTSOF(exact); i++)
                if (streq(k, exact[i])) return true;
        for (size_t i = 0; i < ELEMENTSOF(suffix); i++)
                if (endswith(k, suffix[i])) return true;
        return false;
}

/* Returns true when line (n bytes) contains needle. */
static bool line_has(const char *line, size_t n, const char *needle) {
        return memmem(line, n, needle, strlen(needle)) != NULL;
}

/* Writes line (n bytes, without its newline) with the value of a credential key replaced, when it
 * is one. Returns true when it replaced. */
static bool redact_line(const char *line, size_t n, struct buf *out) {
        size_t i = 0;
        while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
        if (i + 1 < n && line[i] == '-' && line[i + 1] == ' ') i += 2; /* a YAML list item */
        while (i < n && line[i] == ' ') i++;
        if (i + 6 < n && memcmp(line + i, "export ", 7) == 0) i += 7; /* shell env files */
        char quote = 0;
        if (i < n && (line[i] == '"' || line[i] == '\'')) quote = line[i++];
        size_t k0 = i;
        while (i < n && (isalnum((unsigned char)line[i]) || line[i] == '_' || line[i] == '-' || line[i] == '.')) i++;
        size_t k1 = i;
        if (quote) {
                if (i >= n || line[i] != quote) return false;
                i++;
        }
        while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
        if (i >= n || (line[i] != ':' && line[i] != '=')) return false;
        i++;
        while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
        if (i >= n || !secret_key(line + k0, k1 - k0)) return false;
        /* Nested values (a mapping or a list follows) and empty values hold nothing to hide here. */
        if (line[i] == '{' || line[i] == '[' || line[i] == '#') return false;
        size_t end = n;
        bool comma = false;
        while (end > i && (line[end - 1] == ' ' || line[end - 1] == '\t' || line[end - 1] == '\r')) end--;
        if (end > i && line[end - 1] == ',') {
                comma = true;
                end--;
        }
        if (end == i) return false;
        buf_append(out, line, i);
        if (line[i] == '"' || line[i] == '\'') {
                char q[2] = {line[i], 0};
                buf_puts(out, q);
                buf_puts(out, "REDACTED");
                buf_puts(out, q);
        } else {
                buf_puts(out, "REDACTED");
        }
        if (comma) buf_puts(out, ",");
        return true;
}

size_t redact_text(const char *data, size_t len, struct buf *out) {
        size_t count = 0, pos = 0;
        bool in_key = false;
        while (pos < len) {
                const char *line = data + pos;
                const char *nl = memchr(line, '\n', len - pos);
                size_t n = nl ? (size_t)(nl - line) : len - pos;
                pos += n + (nl ? 1 : 0);
                if (in_key) {
                        if (line_has(line, n, "-----END")) {
                                in_key = false;
                                buf_append(out, line, n);
                                if (nl) buf_puts(out, "\n");
                        }
                        continue;
                }
                if (line_has(line, n, "-----BEGIN") && line_has(line, n, "PRIVATE KEY-----")) {
                        buf_append(out, line, n);
                        buf_puts(out, "\nREDACTED\n");
                        in_key = !line_has(line, n, "-----END");
                        count++;
                        continue;
                }
                if (redact_line(line, n, out))
                        count++;
                else
                        buf_append(out, line, n);
                if (nl) buf_puts(out, "\n");
        }
        if (!out->data) buf_append(out, "", 0);
        return count;
}

/* Returns true when s (n bytes, leading dashes skipped) is a credential key. */
static bool secret_flag(const char *s, size_t n) {
        while (n > 0 && *s == '-') {
                s++;
                n--;
        }
        return secret_key(s, n);
}

size_t redact_cmdline(const char *data, size_t len, struct buf *out) {
        size_t count = 0, pos = 0;
        bool value_next = false;
        while (pos < len) {
                const char *arg = data + pos;
                const char *nul = memchr(arg, 0, len - pos);
                size_t n = nul ? (size_t)(nul - arg) : len - pos;
                pos += n + (nul ? 1 : 0);
                const char *eq = memchr(arg, '=', n);
                if (value_next && n > 0) {
                        buf_puts(out, "REDACTED");
                        count++;
                        value_next = false;
                } else if (eq && secret_flag(arg, (size_t)(eq - arg))) {
                        buf_append(out, arg, (size_t)(eq - arg) + 1);
                        buf_puts(out, "REDACTED");
                        count++;
                } else {
                        buf_append(out, arg, n);
                        value_next = n > 2 && arg[0] == '-' && !eq && secret_flag(arg, n);
                }
                if (nul) buf_append(out, "", 1); /* the NUL separator */
        }
        if (!out->data) buf_append(out, "", 0);
        return count;
}

/* Returns true when an API object key names a credential: the key itself, or its last "/"
 * segment (annotations such as "example.com/api-token"). */
static bool secret_api_key(const char *k) {
        const char *slash = strrchr(k, '/');
        return secret_key(k, strlen(k)) || (slash && secret_key(slash + 1, strlen(slash + 1)));
}

/* Replaces every string value in obj (a Secret's data) with REDACTED. Returns the count. */
static size_t redact_all_values(json_t *obj) {
        size_t n = 0;
        const char *k;
        json_t *x;
        json_object_foreach(obj, k, x) {
                if (json_is_string(x) && !streq(json_string_value(x), "REDACTED")) {
                        json_object_set_new(obj, k, json_string("REDACTED"));
                        n++;
                }
        }
        return n;
}

/* Redacts a command or args array in place: "--token=V" keeps its key, "--password V" loses V. Returns the count. */
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
                if (value_next) {
                        json_array_set_new(arr, i, json_string("REDACTED"));
                        n++;
                        value_next = false;
                        continue;
                }
                struct buf out = {0};
                if (redact_cmdline(s, strlen(s), &out) > 0) {
                        json_array_set_new(arr, i, json_string(out.data));
                        n++;
                } else {
                        value_next = s[0] == '-' && !strchr(s, '=') && secret_flag(s, strlen(s));
                }
                buf_free(&out);
        }
        return n;
}

/* redact_api_json's walk: secret says v is a Secret (an item of a SecretList). Returns the count. */
static size_t redact_api_walk(json_t *v, bool secret) {
        size_t n = 0;
        if (json_is_array(v)) {
                size_t i;
                json_t *x;
                json_array_foreach(v, i, x) n += redact_api_walk(x, secret);
                return n;
        }
        if (!json_is_object(v)) return 0;
        const char *kind = json_string_value(json_object_get(v, "kind"));
        bool is_secret = secret || streq_ptr(kind, "Secret");
        bool secret_items = streq_ptr(kind, "SecretList");
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) {
                if (json_is_string(x) && secret_api_key(k)) {
                        if (!streq(json_string_value(x), "REDACTED")) {
                                json_object_set_new(v, k, json_string("REDACTED"));
                                n++;
                        }
                } else if (is_secret && (streq(k, "data") || streq(k, "stringData")) && json_is_object(x)) {
                        n += redact_all_values(x);
                } else if (streq(k, "env") && json_is_array(x)) {
                        size_t i;
                        json_t *e;
                        json_array_foreach(x, i, e) {
                                json_t *val = json_object_get(e, "value");
                                if (json_is_string(val) && *json_string_value(val)) {
                                        json_object_set_new(e, "value", json_string("REDACTED"));
                                        n++;
                                }
                        }
                } else if (streq(k, "annotations") && json_is_object(x)) {
                        json_t *last = json_object_get(x, "kubectl.kubernetes.io/last-applied-configuration");
                        if (json_is_string(last)) {
                                json_object_set_new(x, "kubectl.kubernetes.io/last-applied-configuration",
                                                    json_string("REDACTED"));
                                n++;
                        }
                        n += redact_api_walk(x, false);
                } else if ((streq(k, "command") || streq(k, "args")) && json_is_array(x)) {
                        n += redact_args(x);
                } else {
                        n += redact_api_walk(x, secret_items && streq(k, "items"));
                }
        }
        return n;
}

size_t redact_api_json(json_t *v) { return redact_api_walk(v, false); }
