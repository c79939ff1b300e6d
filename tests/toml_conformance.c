/* toml_conformance.c: runs src/basic/toml.c against the toml-test corpus (toml_conformance DIR). */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>

#include "basic/toml.h"
#include "basic/util.h"

/* Reads a whole file. Returns 0 with a malloc'd buffer (NUL-terminated) and its length, or
 * negative errno. */
static int read_file(const char *path, char **ret, size_t *ret_len) {
        _cleanup_fclose_ FILE *f = fopen(path, "rb");
        if (!f) return -errno;
        struct buf b = {0};
        char chunk[65536];
        size_t n;
        while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) buf_append(&b, chunk, n);
        if (ferror(f)) {
                buf_free(&b);
                return -EIO;
        }
        if (!b.data) buf_append(&b, "", 0);
        *ret_len = b.len;
        *ret = b.data;
        return 0;
}

/* jansson refuses NUL in object keys, which toml-test uses ("\u0000" as a key). The expected
 * JSON therefore has every \u0000 escape rewritten to U+FDD0, a noncharacter the corpus does
 * not use, and unmap_nul() turns it back before comparing. */
#define NUL_STANDIN "\xef\xb7\x90"

/* Copies JSON text to *out with each \u0000 escape replaced by \uFDD0. Returns nothing. */
static void map_json_nul(const char *s, size_t n, struct buf *out) {
        for (size_t i = 0; i < n;) {
                if (s[i] == '\\' && i + 1 < n) {
                        bool nul = n - i >= 6 && memcmp(s + i, "\\u0000", 6) == 0;
                        buf_append(out, nul ? "\\uFDD0" : s + i, nul ? 6 : 2);
                        i += nul ? 6 : 2;
                        continue;
                }
                buf_append(out, s + i, 1);
                i++;
        }
        if (!out->data) buf_append(out, "", 0);
}

/* Copies n bytes at s to *out with each U+FDD0 turned back into NUL. Returns nothing. */
static void unmap_nul(const char *s, size_t n, struct buf *out) {
        for (size_t i = 0; i < n;) {
                if (n - i >= 3 && memcmp(s + i, NUL_STANDIN, 3) == 0) {
                        buf_append(out, "", 1);
                        i += 3;
                } else
                        buf_append(out, s + i++, 1);
        }
        if (!out->data) buf_append(out, "", 0);
}

/* A date/time split into fields; has_date/has_time/has_offset say which parts were present. */
struct datetime {
        bool has_date, has_time, has_offset;
        int year, month, day, hour, minute, second;
        long nanos;
        int offset_minutes;
};

/* Parses n digits at *s and advances it. Returns the value, or -1 if one is not a digit. */
static int digits(const char **s, int n) {
        int v = 0;
        for (int i = 0; i < n; i++, (*s)++) {
                if (**s < '0' || **s > '9') return -1;
                v = v * 10 + (**s - '0');
        }
        return v;
}

/* Parses an RFC 3339-like date/time (T, t or space as separator, z or Z). Returns 0, or
 * -EINVAL when malformed. */
static int parse_datetime(const char *s, struct datetime *ret) {
        struct datetime d = {0};
        if (strlen(s) >= 10 && s[4] == '-') {
                d.has_date = true;
                d.year = digits(&s, 4);
                if (*s++ != '-') return -EINVAL;
                d.month = digits(&s, 2);
                if (*s++ != '-') return -EINVAL;
                d.day = digits(&s, 2);
                if (d.year < 0 || d.month < 0 || d.day < 0) return -EINVAL;
                if (*s == 0) goto done;
                if (*s != 'T' && *s != 't' && *s != ' ') return -EINVAL;
                s++;
        }
        d.has_time = true;
        d.hour = digits(&s, 2);
        if (*s++ != ':') return -EINVAL;
        d.minute = digits(&s, 2);
        if (*s++ != ':') return -EINVAL;
        d.second = digits(&s, 2);
        if (d.hour < 0 || d.minute < 0 || d.second < 0) return -EINVAL;
        if (*s == '.') {
                s++;
                long scale = 100000000;
                if (*s < '0' || *s > '9') return -EINVAL;
                for (; *s >= '0' && *s <= '9'; s++, scale /= 10) d.nanos += (*s - '0') * scale;
        }
        if (*s == 'Z' || *s == 'z') {
                d.has_offset = true;
                s++;
        } else if (*s == '+' || *s == '-') {
                int sign = *s++ == '-' ? -1 : 1;
                int h = digits(&s, 2);
                if (*s++ != ':') return -EINVAL;
                int m = digits(&s, 2);
                if (h < 0 || m < 0) return -EINVAL;
                d.has_offset = true;
                d.offset_minutes = sign * (h * 60 + m);
        }
        if (*s) return -EINVAL;
done:
        *ret = d;
        return 0;
}

/* Returns days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, int m, int d) {
        y -= m <= 2;
        int64_t era = (y >= 0 ? y : y - 399) / 400;
        int64_t yoe = y - era * 400;
        int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
        int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + doe - 719468;
}

/* Returns true when two date/time texts of the given kind mean the same: offset date-times
 * the same instant, local kinds the same fields; fractions compared by value, as toml-test
 * does. */
static bool datetimes_equal(const char *kind, const char *want, const char *have) {
        struct datetime a, b;
        if (parse_datetime(want, &a) < 0 || parse_datetime(have, &b) < 0) return false;
        if (a.has_date != b.has_date || a.has_time != b.has_time || a.has_offset != b.has_offset) return false;
        bool offset = streq(kind, "datetime");
        if (offset != a.has_offset) return false;
        if (offset) {
                int64_t ta = days_from_civil(a.year, a.month, a.day) * 86400 + a.hour * 3600 + a.minute * 60 + a.second - a.offset_minutes * 60;
                int64_t tb = days_from_civil(b.year, b.month, b.day) * 86400 + b.hour * 3600 + b.minute * 60 + b.second - b.offset_minutes * 60;
                return ta == tb && a.nanos == b.nanos;
        }
        return a.year == b.year && a.month == b.month && a.day == b.day && a.hour == b.hour && a.minute == b.minute &&
               a.second == b.second && a.nanos == b.nanos;
}

/* Parses a float as toml-test writes it (inf, +inf, -inf, nan, or a number). Returns 0, or
 * -EINVAL. */
static int parse_expected_float(const char *s, double *ret) {
        const char *t = s + (*s == '+' || *s == '-');
        if (streq(t, "inf")) *ret = *s == '-' ? -INFINITY : INFINITY;
        else if (streq(t, "nan")) *ret = NAN;
        else {
                char *end;
                errno = 0;
                *ret = strtod(s, &end);
                if (end == s || *end) return -EINVAL;
        }
        return 0;
}

/* Returns true when j is a tagged leaf {"type": "...", "value": "..."}. */
static bool is_tagged(json_t *j) {
        return json_is_object(j) && json_object_size(j) == 2 && json_is_string(json_object_get(j, "type")) &&
               json_is_string(json_object_get(j, "value"));
}

/* Compares a tagged leaf with a parsed value. Returns true when equal, otherwise false with
 * the reason in *why. */
static bool leaf_equal(json_t *want, const struct toml_value *have, struct buf *why) {
        const char *type = json_string_value(json_object_get(want, "type"));
        json_t *jv = json_object_get(want, "value");
        const char *value = json_string_value(jv);
        if (!streq(type, toml_type_name(toml_type_of(have)))) {
                buf_printf(why, "type %s, want %s", toml_type_name(toml_type_of(have)), type);
                return false;
        }
        switch (toml_type_of(have)) {
        case TOML_STRING: {
                struct buf w = {0};
                unmap_nul(value, json_string_length(jv), &w);
                bool eq = w.len == toml_string_len(have) && memcmp(w.data, toml_string(have), w.len) == 0;
                buf_free(&w);
                if (eq) return true;
                buf_printf(why, "string \"%s\", want \"%s\"", toml_string(have), value);
                return false;
        }
        case TOML_INTEGER: {
                int64_t h = 0, w;
                toml_int(have, &h);
                if (parse_i64(value, &w) < 0) {
                        buf_printf(why, "bad expected integer %s", value);
                        return false;
                }
                if (h == w) return true;
                buf_printf(why, "integer %" PRId64 ", want %s", h, value);
                return false;
        }
        case TOML_FLOAT: {
                double h = 0, w;
                toml_double(have, &h);
                if (parse_expected_float(value, &w) < 0) {
                        buf_printf(why, "bad expected float %s", value);
                        return false;
                }
                if ((isnan(h) && isnan(w)) || (h == w && signbit(h) == signbit(w))) return true;
                buf_printf(why, "float %.17g, want %s", h, value);
                return false;
        }
        case TOML_BOOL: {
                bool h = false;
                toml_bool(have, &h);
                if (streq(value, h ? "true" : "false")) return true;
                buf_printf(why, "bool %s, want %s", h ? "true" : "false", value);
                return false;
        }
        default:
                if (datetimes_equal(type, value, toml_datetime(have))) return true;
                buf_printf(why, "%s %s, want %s", type, toml_datetime(have), value);
                return false;
        }
}

/* Compares expected tagged JSON with a parsed value, path naming where we are. Returns true
 * when equal, otherwise false with the first difference in *why. */
static bool value_equal(json_t *want, const struct toml_value *have, struct buf *path, struct buf *why) {
        size_t mark = path->len;
        bool ok = true;
        if (is_tagged(want)) {
                ok = leaf_equal(want, have, why);
        } else if (json_is_object(want)) {
                if (toml_type_of(have) != TOML_TABLE) {
                        buf_printf(why, "%s, want a table", toml_type_name(toml_type_of(have)));
                        ok = false;
                } else if (json_object_size(want) != toml_table_size(have)) {
                        buf_printf(why, "table of %zu keys, want %zu", toml_table_size(have), json_object_size(want));
                        ok = false;
                } else {
                        for (void *it = json_object_iter(want); ok && it; it = json_object_iter_next(want, it)) {
                                const char *key = json_object_iter_key(it);
                                struct buf k = {0};
                                unmap_nul(key, json_object_iter_key_len(it), &k);
                                buf_printf(path, ".%s", key);
                                const struct toml_value *v = toml_table_getn(have, k.data, k.len);
                                buf_free(&k);
                                if (!v) {
                                        buf_puts(why, "missing key");
                                        ok = false;
                                } else
                                        ok = value_equal(json_object_iter_value(it), v, path, why);
                                if (ok) {
                                        path->len = mark;
                                        path->data[mark] = 0;
                                }
                        }
                }
        } else if (json_is_array(want)) {
                if (toml_type_of(have) != TOML_ARRAY || toml_array_len(have) != json_array_size(want)) {
                        buf_printf(why, "%s of %zu elements, want an array of %zu", toml_type_name(toml_type_of(have)),
                                   toml_array_len(have), json_array_size(want));
                        ok = false;
                } else {
                        for (size_t i = 0; ok && i < json_array_size(want); i++) {
                                buf_printf(path, "[%zu]", i);
                                ok = value_equal(json_array_get(want, i), toml_array_at(have, i), path, why);
                                if (ok) {
                                        path->len = mark;
                                        path->data[mark] = 0;
                                }
                        }
                }
        } else {
                buf_puts(why, "unexpected JSON in the expected file");
                ok = false;
        }
        return ok;
}

/* Runs one valid/ test. Returns true when it parses to the expected JSON; otherwise prints
 * why on stderr and returns false. */
static bool run_valid(const char *dir, const char *name) {
        _cleanup_free_ char *path = xasprintf("%s/%s", dir, name);
        _cleanup_free_ char *json_path = xasprintf("%.*s.json", (int)(strlen(path) - 5), path);
        _cleanup_free_ char *text = NULL;
        size_t len;
        if (read_file(path, &text, &len) < 0) {
                fprintf(stderr, "FAIL %s: cannot read: %m\n", name);
                return false;
        }
        _cleanup_free_ char *json_text = NULL;
        size_t json_len;
        if (read_file(json_path, &json_text, &json_len) < 0) {
                fprintf(stderr, "FAIL %s: cannot read %s: %m\n", name, json_path);
                return false;
        }
        struct buf json_mapped = {0};
        map_json_nul(json_text, json_len, &json_mapped);
        json_error_t jerr;
        json_t *want = json_loadb(json_mapped.data, json_mapped.len, 0, &jerr);
        buf_free(&json_mapped);
        if (!want) {
                fprintf(stderr, "FAIL %s: cannot load %s: %s\n", name, json_path, jerr.text);
                return false;
        }
        struct toml_value *have = NULL;
        struct toml_error err;
        bool ok = false;
        if (toml_parse(text, len, &have, &err) < 0)
                fprintf(stderr, "FAIL %s: rejected at %d:%d: %s\n", name, err.line, err.column, err.message);
        else {
                struct buf path_buf = {0}, why = {0};
                buf_puts(&path_buf, "");
                ok = value_equal(want, have, &path_buf, &why);
                if (!ok) fprintf(stderr, "FAIL %s: at %s: %s\n", name, path_buf.len ? path_buf.data : "(root)", why.data ? why.data : "");
                buf_free(&path_buf);
                buf_free(&why);
        }
        toml_free(have);
        json_decref(want);
        return ok;
}

/* Runs one invalid/ test. Returns true when the parser rejects it; otherwise prints it on
 * stderr and returns false. */
static bool run_invalid(const char *dir, const char *name) {
        _cleanup_free_ char *path = xasprintf("%s/%s", dir, name);
        _cleanup_free_ char *text = NULL;
        size_t len;
        if (read_file(path, &text, &len) < 0) {
                fprintf(stderr, "FAIL %s: cannot read: %m\n", name);
                return false;
        }
        struct toml_value *v = NULL;
        struct toml_error err;
        if (toml_parse(text, len, &v, &err) < 0) {
                if (err.line < 1 || err.column < 1 || !err.message[0]) {
                        fprintf(stderr, "FAIL %s: rejected without a position or message\n", name);
                        return false;
                }
                return true;
        }
        toml_free(v);
        fprintf(stderr, "FAIL %s: accepted, should be rejected\n", name);
        return false;
}

/* Reads DIR/files-toml-1.0.0 and runs every test it lists. Returns 0 when all pass, 1 on any
 * failure, 2 on usage errors. */
int main(int argc, char **argv) {
        if (argc != 2) {
                fprintf(stderr, "usage: %s TOML-TEST-TESTS-DIR\n", argv[0]);
                return 2;
        }
        /* DIR is toml-test's tests/ folder; its parent (the corpus root) works too. */
        _cleanup_free_ char *dir = xstrdup(argv[1]);
        _cleanup_free_ char *list_path = xasprintf("%s/files-toml-1.0.0", dir);
        _cleanup_fclose_ FILE *list = fopen(list_path, "re");
        if (!list) {
                free(dir);
                dir = xasprintf("%s/tests", argv[1]);
                free(list_path);
                list_path = xasprintf("%s/files-toml-1.0.0", dir);
                list = fopen(list_path, "re");
        }
        if (!list) {
                fprintf(stderr, "cannot open files-toml-1.0.0 in %s or %s/tests: %m\n", argv[1], argv[1]);
                return 2;
        }
        unsigned valid = 0, valid_ok = 0, invalid = 0, invalid_ok = 0;
        char line[4096];
        while (fgets(line, sizeof(line), list)) {
                strstrip_right(line);
                size_t n = strlen(line);
                if (n < 5 || !streq(line + n - 5, ".toml")) continue;
                if (startswith(line, "valid/")) {
                        valid++;
                        valid_ok += run_valid(dir, line);
                } else if (startswith(line, "invalid/")) {
                        invalid++;
                        invalid_ok += run_invalid(dir, line);
                }
        }
        printf("toml-test 1.0.0: valid %u/%u passed, invalid %u/%u rejected\n", valid_ok, valid, invalid_ok, invalid);
        if (fflush(stdout) != 0 || ferror(stdout)) return 2;
        return valid + invalid > 0 && valid_ok == valid && invalid_ok == invalid ? 0 : 1;
}
