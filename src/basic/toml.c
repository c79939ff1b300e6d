/* toml.c: a one-pass recursive-descent TOML 1.0 parser, written by hand because Debian packages
 * no C TOML library, and the read/merge API declared in toml.h. */
#include "basic/toml.h"

#include <locale.h>
#include <math.h>
#include <stdarg.h>

#include "basic/util.h"

/* Tables with at least this many keys get a hash index; smaller ones are scanned. */
#define INDEX_MIN 8

/* How a table or array came to be; decides which later definitions may extend it. */
enum {
        F_IMPLICIT = 1 << 0, /* table created as a parent by a [a.b] or [[a.b]] header */
        F_EXPLICIT = 1 << 1, /* table defined by a [header], or an element of [[header]] */
        F_DOTTED = 1 << 2,   /* table created (or extended) by a dotted key: a.b = 1 */
        F_INLINE = 1 << 3,   /* inline table { }: sealed, nothing may add to it */
        F_AOT = 1 << 4,      /* array created by [[header]]: more [[header]]s append to it */
};

struct toml_kv {
        char *key;
        size_t key_len;
        uint32_t hash;
        struct toml_value *value;
};

struct toml_value {
        enum toml_type type;
        uint8_t flags;
        uint16_t depth;
        union {
                struct {
                        struct toml_kv *items;
                        size_t n, cap;
                        uint32_t *index; /* slots hold item number + 1; 0 is empty */
                        size_t index_cap;
                } table;
                struct {
                        struct toml_value **items;
                        size_t n, cap;
                } array;
                struct {
                        char *s;
                        size_t len;
                } str; /* strings and the text of dates and times */
                int64_t i;
                double f;
                bool b;
        } u;
};

/* One part of a dotted key, with where it starts in the text for error messages. */
struct key_part {
        char *s;
        size_t len, pos;
        bool owned; /* false once a table holds s */
};

struct key {
        struct key_part *parts;
        size_t n, cap;
};

struct parser {
        const char *text;
        size_t len, pos;
        struct toml_value *root, *cur;
        size_t err_pos;
        bool failed;
        char err[200];
        struct buf scratch; /* strings and keys are decoded here, then copied out at their size */
};

/* ---- values ---- */

/* Returns a new empty value of the given type at the given depth; aborts on out-of-memory. */
static struct toml_value *value_new(enum toml_type type, unsigned depth, uint8_t flags) {
        struct toml_value *v = xcalloc(1, sizeof(*v));
        v->type = type;
        v->depth = (uint16_t)depth;
        v->flags = flags;
        return v;
}

/* Frees v and everything under it (recursion is bounded by TOML_MAX_DEPTH for parsed values).
 * Returns nothing; NULL is fine. */
void toml_free(struct toml_value *v) {
        if (!v) return;
        switch (v->type) {
        case TOML_TABLE:
                for (size_t i = 0; i < v->u.table.n; i++) {
                        free(v->u.table.items[i].key);
                        toml_free(v->u.table.items[i].value);
                }
                free(v->u.table.items);
                free(v->u.table.index);
                break;
        case TOML_ARRAY:
                for (size_t i = 0; i < v->u.array.n; i++) toml_free(v->u.array.items[i]);
                free(v->u.array.items);
                break;
        case TOML_STRING:
        case TOML_DATETIME:
        case TOML_DATETIME_LOCAL:
        case TOML_DATE_LOCAL:
        case TOML_TIME_LOCAL: free(v->u.str.s); break;
        default: break;
        }
        free(v);
}

/* Returns the FNV-1a hash of a key. */
static uint32_t hash_key(const char *s, size_t n) {
        uint32_t h = 2166136261u;
        for (size_t i = 0; i < n; i++) {
                h ^= (unsigned char)s[i];
                h *= 16777619u;
        }
        return h;
}

/* Puts item number i of table t into its hash index (which has room). Returns nothing. */
static void index_put(struct toml_value *t, size_t i) {
        size_t mask = t->u.table.index_cap - 1;
        size_t slot = t->u.table.items[i].hash & mask;
        while (t->u.table.index[slot]) slot = (slot + 1) & mask;
        t->u.table.index[slot] = (uint32_t)(i + 1);
}

/* Rebuilds the hash index of t with room for at least twice its keys. Returns nothing. */
static void index_rebuild(struct toml_value *t) {
        size_t cap = 16;
        while (cap < t->u.table.n * 4) cap *= 2;
        free(t->u.table.index);
        t->u.table.index = xcalloc(cap, sizeof(uint32_t));
        t->u.table.index_cap = cap;
        for (size_t i = 0; i < t->u.table.n; i++) index_put(t, i);
}

/* Returns the item number of key in table t, or -1 when absent. */
static ssize_t table_find(const struct toml_value *t, const char *key, size_t len) {
        uint32_t h = hash_key(key, len);
        const struct toml_kv *items = t->u.table.items;
        if (!t->u.table.index) {
                for (size_t i = 0; i < t->u.table.n; i++)
                        if (items[i].hash == h && items[i].key_len == len && memcmp(items[i].key, key, len) == 0)
                                return (ssize_t)i;
                return -1;
        }
        size_t mask = t->u.table.index_cap - 1;
        for (size_t slot = h & mask; t->u.table.index[slot]; slot = (slot + 1) & mask) {
                size_t i = t->u.table.index[slot] - 1;
                if (items[i].hash == h && items[i].key_len == len && memcmp(items[i].key, key, len) == 0)
                        return (ssize_t)i;
        }
        return -1;
}

/* Returns the value under key in table t, or NULL. */
static struct toml_value *table_lookup(const struct toml_value *t, const char *key, size_t len) {
        ssize_t i = table_find(t, key, len);
        return i < 0 ? NULL : t->u.table.items[i].value;
}

/* Appends key (taking ownership of the malloc'd key) with value to table t, which must not
 * hold key yet. Returns nothing; aborts on out-of-memory. */
static void table_append(struct toml_value *t, char *key, size_t len, struct toml_value *value) {
        if (t->u.table.n == t->u.table.cap) {
                t->u.table.cap = t->u.table.cap ? t->u.table.cap * 2 : 4;
                t->u.table.items = xrealloc(t->u.table.items, t->u.table.cap * sizeof(struct toml_kv));
        }
        size_t i = t->u.table.n++;
        t->u.table.items[i] = (struct toml_kv){ key, len, hash_key(key, len), value };
        if (t->u.table.index && t->u.table.n * 2 <= t->u.table.index_cap)
                index_put(t, i);
        else if (t->u.table.n >= INDEX_MIN)
                index_rebuild(t);
}

/* Appends v to array a. Returns nothing; aborts on out-of-memory. */
static void array_append(struct toml_value *a, struct toml_value *v) {
        if (a->u.array.n == a->u.array.cap) {
                a->u.array.cap = a->u.array.cap ? a->u.array.cap * 2 : 4;
                a->u.array.items = xrealloc(a->u.array.items, a->u.array.cap * sizeof(struct toml_value *));
        }
        a->u.array.items[a->u.array.n++] = v;
}

/* Frees the parts of a key and resets it. Returns nothing. */
static void key_clear(struct key *k) {
        for (size_t i = 0; i < k->n; i++)
                if (k->parts[i].owned) free(k->parts[i].s);
        free(k->parts);
        *k = (struct key){ 0 };
}

/* Returns true for the characters of a bare key: A-Z a-z 0-9 _ -. */
static bool is_bare_key_char(int c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* ---- errors ---- */

/* Records an error at byte offset pos (the first one wins). Returns -EINVAL. */
_printf_(3, 4) static int fail_at(struct parser *p, size_t pos, const char *fmt, ...) {
        if (p->failed) return -EINVAL;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err, sizeof(p->err), fmt, ap);
        va_end(ap);
        p->failed = true;
        p->err_pos = pos;
        return -EINVAL;
}

/* Writes the first n parts of key k into out (size bytes) the way TOML spells them: bare parts
 * as they are, others quoted (control characters as '?'), joined by dots, cut short with "..."
 * when too long. Returns out. */
static const char *key_name(const struct key *k, size_t n, char *out, size_t size) {
        struct buf b = { 0 };
        for (size_t i = 0; i < n && b.len < size; i++) {
                const struct key_part *kp = &k->parts[i];
                bool bare = kp->len > 0;
                for (size_t j = 0; j < kp->len && bare; j++) bare = is_bare_key_char((unsigned char)kp->s[j]);
                if (i > 0) buf_append(&b, ".", 1);
                if (!bare) buf_append(&b, "\"", 1);
                for (size_t j = 0; j < kp->len && b.len < size; j++) {
                        char c = kp->s[j];
                        if (c == '"' || c == '\\') buf_append(&b, "\\", 1);
                        buf_append(&b, ((unsigned char)c < 0x20 || c == 0x7f) ? "?" : &c, 1);
                }
                if (!bare) buf_append(&b, "\"", 1);
        }
        if (b.len < size)
                memcpy(out, b.data ? b.data : "", b.len + 1);
        else {
                size_t cut = size - 4;
                while (cut > 0 && ((unsigned char)b.data[cut] & 0xc0) == 0x80) cut--; /* whole characters */
                memcpy(out, b.data, cut);
                memcpy(out + cut, "...", 4);
        }
        buf_free(&b);
        return out;
}

/* Writes a short description of byte c for a message into out (8 bytes): "'x'", "end of
 * input" or "a non-ASCII character". Returns the description. */
static const char *char_name(int c, char out[8]) {
        if (c < 0) return "end of input";
        if (c >= 0x80) return "a non-ASCII character";
        if (c == '\n' || c == '\r') return "end of line";
        snprintf(out, 8, "'%c'", c);
        return out;
}

/* Converts byte offset pos into a 1-based line and a 1-based column counted in characters.
 * Returns nothing. */
static void position_of(const char *text, size_t len, size_t pos, int *ret_line, int *ret_column) {
        int line = 1, column = 1;
        if (pos > len) pos = len;
        for (size_t i = 0; i < pos; i++) {
                if (text[i] == '\n') {
                        line++;
                        column = 1;
                } else if (((unsigned char)text[i] & 0xc0) != 0x80)
                        column++;
        }
        *ret_line = line;
        *ret_column = column;
}

/* ---- bytes ---- */

/* Checks the whole text from start: valid UTF-8 (no overlong forms, surrogates or code points
 * above U+10FFFF) and no control characters other than tab, LF, and CR before LF, which TOML
 * allows nowhere else. Returns 0, or -EINVAL with the error recorded. */
static int check_bytes(struct parser *p, size_t start) {
        const unsigned char *s = (const unsigned char *)p->text;
        size_t len = p->len;
        for (size_t i = start; i < len;) {
                unsigned c = s[i];
                if (c < 0x80) {
                        if (c == '\r' && (i + 1 >= len || s[i + 1] != '\n'))
                                return fail_at(p, i, "carriage return not followed by a line feed");
                        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
                                return fail_at(
                                        p, i,
                                        "control character U+%04X is not allowed (write it as an escape in a string)",
                                        c);
                        i++;
                        continue;
                }
                size_t n;
                unsigned lo = 0x80, hi = 0xbf;
                if (c >= 0xc2 && c <= 0xdf)
                        n = 1;
                else if (c >= 0xe0 && c <= 0xef) {
                        n = 2;
                        if (c == 0xe0) lo = 0xa0;
                        if (c == 0xed) hi = 0x9f;
                } else if (c >= 0xf0 && c <= 0xf4) {
                        n = 3;
                        if (c == 0xf0) lo = 0x90;
                        if (c == 0xf4) hi = 0x8f;
                } else
                        return fail_at(p, i, "invalid UTF-8 byte 0x%02X", c);
                if (len - i <= n) return fail_at(p, i, "truncated UTF-8 sequence at end of input");
                if (s[i + 1] < lo || s[i + 1] > hi) return fail_at(p, i, "invalid UTF-8 sequence");
                for (size_t k = 2; k <= n; k++)
                        if ((s[i + k] & 0xc0) != 0x80) return fail_at(p, i, "invalid UTF-8 sequence");
                i += n + 1;
        }
        return 0;
}

/* Returns the byte at offset off from the current position, or -1 past the end. */
static int peek_at(const struct parser *p, size_t off) {
        return p->pos + off < p->len ? (unsigned char)p->text[p->pos + off] : -1;
}

/* Returns the current byte, or -1 at the end. */
static int peek(const struct parser *p) {
        return peek_at(p, 0);
}

/* Returns true when the next three bytes are c c c. */
static bool at_triple(const struct parser *p, char c) {
        return peek_at(p, 0) == c && peek_at(p, 1) == c && peek_at(p, 2) == c;
}

/* Returns true when the current position starts a newline (LF, or CR which check_bytes()
 * guarantees is followed by LF). */
static bool at_newline(const struct parser *p) {
        int c = peek(p);
        return c == '\n' || c == '\r';
}

/* Consumes a newline if there is one. Returns true when it did. */
static bool eat_newline(struct parser *p) {
        int c = peek(p);
        if (c == '\n') {
                p->pos++;
                return true;
        }
        if (c == '\r') {
                p->pos += 2;
                return true;
        }
        return false;
}

/* Skips spaces and tabs. Returns nothing. */
static void skip_ws(struct parser *p) {
        while (p->pos < p->len && (p->text[p->pos] == ' ' || p->text[p->pos] == '\t')) p->pos++;
}

/* Skips a comment up to (not including) the end of its line, if one starts here. Returns
 * nothing: check_bytes() has already rejected what comments may not contain. */
static void skip_comment(struct parser *p) {
        if (peek(p) != '#') return;
        while (p->pos < p->len && p->text[p->pos] != '\n' && p->text[p->pos] != '\r') p->pos++;
}

/* Skips whitespace, comments and newlines (between array elements). Returns nothing. */
static void skip_ws_comments_newlines(struct parser *p) {
        for (;;) {
                skip_ws(p);
                skip_comment(p);
                if (!eat_newline(p)) return;
        }
}

/* Expects the rest of the line to be blank or a comment, and consumes its newline. Returns 0,
 * or -EINVAL when something else follows (what names the thing just parsed). */
static int expect_line_end(struct parser *p, const char *what) {
        skip_ws(p);
        skip_comment(p);
        if (p->pos >= p->len || eat_newline(p)) return 0;
        return fail_at(p, p->pos, "expected a newline after %s, found %s", what, char_name(peek(p), (char[8]){ 0 }));
}

/* ---- strings ---- */

/* Empties the parser's scratch buffer. Returns it. */
static struct buf *scratch_reset(struct parser *p) {
        p->scratch.len = 0;
        return &p->scratch;
}

/* Returns a malloc'd NUL-terminated copy of the scratch buffer, with its length in *ret_len;
 * aborts on out-of-memory. */
static char *scratch_take(struct parser *p, size_t *ret_len) {
        char *s = xmalloc(p->scratch.len + 1);
        if (p->scratch.len) memcpy(s, p->scratch.data, p->scratch.len);
        s[p->scratch.len] = 0;
        *ret_len = p->scratch.len;
        return s;
}

/* Appends code point cp to b as UTF-8. Returns nothing. */
static void append_utf8(struct buf *b, uint32_t cp) {
        char out[4];
        size_t n;
        if (cp < 0x80) {
                out[0] = (char)cp;
                n = 1;
        } else if (cp < 0x800) {
                out[0] = (char)(0xc0 | (cp >> 6));
                out[1] = (char)(0x80 | (cp & 0x3f));
                n = 2;
        } else if (cp < 0x10000) {
                out[0] = (char)(0xe0 | (cp >> 12));
                out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
                out[2] = (char)(0x80 | (cp & 0x3f));
                n = 3;
        } else {
                out[0] = (char)(0xf0 | (cp >> 18));
                out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
                out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
                out[3] = (char)(0x80 | (cp & 0x3f));
                n = 4;
        }
        buf_append(b, out, n);
}

/* Returns the value of hex digit c, or -1. */
static int hex_value(int c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
}

/* Parses the escape sequence at the backslash at the current position into b. In multi-line
 * strings a backslash ending a line also swallows the newline and following whitespace.
 * Returns 0, or -EINVAL on an unknown or malformed escape. */
static int parse_escape(struct parser *p, struct buf *b, bool multiline) {
        size_t start = p->pos;
        p->pos++;
        int c = peek(p);
        const char *simple = NULL;
        switch (c) {
        case 'b': simple = "\b"; break;
        case 't': simple = "\t"; break;
        case 'n': simple = "\n"; break;
        case 'f': simple = "\f"; break;
        case 'r': simple = "\r"; break;
        case '"': simple = "\""; break;
        case '\\': simple = "\\"; break;
        default: break;
        }
        if (simple) {
                buf_append(b, simple, 1);
                p->pos++;
                return 0;
        }
        if (c == 'u' || c == 'U') {
                int digits = c == 'u' ? 4 : 8;
                uint32_t cp = 0;
                for (int i = 1; i <= digits; i++) {
                        int h = hex_value(peek_at(p, (size_t)i));
                        if (h < 0) return fail_at(p, start, "\\%c escape needs %d hex digits", c, digits);
                        cp = cp << 4 | (uint32_t)h;
                }
                if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                        return fail_at(p, start, "escape \\%c%.*s is not a Unicode scalar value", c, digits,
                                       p->text + p->pos + 1);
                append_utf8(b, cp);
                p->pos += (size_t)digits + 1;
                return 0;
        }
        if (multiline && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
                skip_ws(p);
                if (!at_newline(p)) return fail_at(p, start, "a backslash followed by whitespace must end the line");
                while (p->pos < p->len) {
                        skip_ws(p);
                        if (!eat_newline(p)) break;
                }
                return 0;
        }
        if (c < 0) return fail_at(p, start, "unterminated string");
        if (c == '\n' || c == '\r') return fail_at(p, start, "a backslash may end a line only in a \"\"\" string");
        if (c < 0x20 || c >= 0x7f) return fail_at(p, start, "invalid escape sequence");
        return fail_at(p, start, "invalid escape sequence '\\%c'", c);
}

/* Parses a single-line basic ("...") or literal ('...') string at the current position.
 * Returns 0 with the decoded bytes in *b, or -EINVAL on a newline, end of input or bad escape. */
static int parse_line_string(struct parser *p, struct buf *b) {
        size_t start = p->pos;
        char quote = p->text[p->pos++];
        for (;;) {
                size_t run = p->pos;
                while (p->pos < p->len) {
                        char c = p->text[p->pos];
                        if (c == quote || c == '\n' || c == '\r' || (c == '\\' && quote == '"')) break;
                        p->pos++;
                }
                buf_append(b, p->text + run, p->pos - run);
                if (p->pos >= p->len || at_newline(p))
                        return fail_at(p, start, "unterminated string (a %s string ends on its line)",
                                       quote == '"' ? "\"...\"" : "'...'");
                if (p->text[p->pos] == quote) {
                        p->pos++;
                        return 0;
                }
                int r = parse_escape(p, b, false);
                if (r < 0) return r;
        }
}

/* Parses a multi-line basic ("""...""") or literal ('''...''') string at the current position;
 * a newline right after the opening quotes is dropped, CRLF becomes LF. Returns 0 with the
 * decoded bytes in *b, or -EINVAL when unterminated, on a bad escape or on too many quotes. */
static int parse_multiline_string(struct parser *p, struct buf *b) {
        size_t start = p->pos;
        char quote = p->text[p->pos];
        p->pos += 3;
        eat_newline(p);
        for (;;) {
                size_t run = p->pos;
                while (p->pos < p->len) {
                        char c = p->text[p->pos];
                        if (c == quote || c == '\r' || (c == '\\' && quote == '"')) break;
                        p->pos++;
                }
                buf_append(b, p->text + run, p->pos - run);
                if (p->pos >= p->len) return fail_at(p, start, "unterminated multi-line string");
                char c = p->text[p->pos];
                if (c == '\r') {
                        buf_append(b, "\n", 1);
                        p->pos += 2;
                } else if (c == quote) {
                        size_t n = 0;
                        while (peek_at(p, n) == quote) n++;
                        if (n < 3) {
                                buf_append(b, p->text + p->pos, n);
                                p->pos += n;
                                continue;
                        }
                        if (n > 5)
                                return fail_at(p, p->pos, "too many quotes: at most five may end a multi-line string");
                        buf_append(b, p->text + p->pos, n - 3);
                        p->pos += n;
                        return 0;
                } else {
                        int r = parse_escape(p, b, true);
                        if (r < 0) return r;
                }
        }
}

/* ---- keys ---- */

/* Parses a key (bare, quoted, or dotted: a."b.c".'d') at the current position into *k, which
 * must be empty. Returns 0, or -EINVAL when no valid key is there; *k is freed by the caller. */
static int parse_key(struct parser *p, struct key *k) {
        for (;;) {
                size_t start = p->pos;
                int c = peek(p);
                char *s;
                size_t len;
                if (c == '"' || c == '\'') {
                        if (at_triple(p, (char)c)) return fail_at(p, start, "a multi-line string cannot be a key");
                        int r = parse_line_string(p, scratch_reset(p));
                        if (r < 0) return r;
                        s = scratch_take(p, &len);
                } else if (is_bare_key_char(c)) {
                        while (p->pos < p->len && is_bare_key_char((unsigned char)p->text[p->pos])) p->pos++;
                        len = p->pos - start;
                        s = xstrndup(p->text + start, len);
                } else if (c < 0)
                        return fail_at(p, start, "expected a key before the end of input");
                else if (at_newline(p))
                        return fail_at(p, start, "expected a key before the end of the line");
                else if (c >= 0x80)
                        return fail_at(
                                p, start,
                                "expected a key: bare keys are ASCII letters, digits, '_' and '-'; quote others");
                else
                        return fail_at(p, start, "expected a key, found %s", char_name(c, (char[8]){ 0 }));
                if (k->n == TOML_MAX_DEPTH) {
                        free(s);
                        return fail_at(p, start, "key has more than %d parts", TOML_MAX_DEPTH);
                }
                if (k->n == k->cap) {
                        k->cap = k->cap ? k->cap * 2 : 4;
                        k->parts = xrealloc(k->parts, k->cap * sizeof(struct key_part));
                }
                k->parts[k->n++] = (struct key_part){ s, len, start, true };
                size_t save = p->pos;
                skip_ws(p);
                if (peek(p) != '.') {
                        p->pos = save;
                        return 0;
                }
                p->pos++;
                skip_ws(p);
        }
}

/* Creates an empty table or array at the given depth (pos is where the text creates it).
 * Returns 0 with it in *ret, or -EINVAL when depth exceeds TOML_MAX_DEPTH. */
static int container_new(struct parser *p, size_t pos, enum toml_type type, unsigned depth, uint8_t flags,
                         struct toml_value **ret) {
        if (depth > TOML_MAX_DEPTH) return fail_at(p, pos, "nesting deeper than %d tables and arrays", TOML_MAX_DEPTH);
        *ret = value_new(type, depth, flags);
        return 0;
}

/* ---- values ---- */

static int parse_value(struct parser *p, unsigned depth, struct toml_value **ret);
static int parse_keyval(struct parser *p, struct toml_value *table);

/* Returns true for the bytes that may form an unquoted value: numbers, booleans, dates. */
static bool is_token_char(int c) {
        return is_bare_key_char(c) || c == '+' || c == '.' || c == ':';
}

/* Parses digits (per the given base) separated by single underscores, starting at *s, which
 * must start with a digit. Returns the end of the digits, or NULL on a misplaced underscore or
 * when no digit is there. */
static const char *scan_digits(const char *s, const char *end, int base) {
        if (s >= end || hex_value((unsigned char)*s) < 0 || hex_value((unsigned char)*s) >= base) return NULL;
        while (s < end) {
                int d = hex_value((unsigned char)*s);
                if (d >= 0 && d < base) {
                        s++;
                        continue;
                }
                if (*s != '_') break;
                if (s + 1 >= end || hex_value((unsigned char)s[1]) < 0 || hex_value((unsigned char)s[1]) >= base)
                        return NULL;
                s++;
        }
        return s;
}

/* Parses the integer or float in the token [s, end). Returns 0 with a new value in *ret, or
 * -EINVAL (error at pos) when it is malformed or out of range. */
static int parse_number(struct parser *p, size_t pos, const char *s, const char *end, struct toml_value **ret) {
        const char *t = s;
        bool neg = false, sign = false;
        if (*t == '+' || *t == '-') {
                neg = *t == '-';
                sign = true;
                t++;
        }
        size_t rest = (size_t)(end - t);
        if (rest == 3 && (memcmp(t, "inf", 3) == 0 || memcmp(t, "nan", 3) == 0)) {
                struct toml_value *v = value_new(TOML_FLOAT, 0, 0);
                v->u.f = t[0] == 'i' ? (neg ? -INFINITY : INFINITY) : (neg ? -NAN : NAN);
                *ret = v;
                return 0;
        }
        if (rest >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'o' || t[1] == 'b')) {
                int base = t[1] == 'x' ? 16 : t[1] == 'o' ? 8 : 2;
                if (sign) return fail_at(p, pos, "a sign is not allowed on hexadecimal, octal or binary integers");
                const char *e = scan_digits(t + 2, end, base);
                if (!e || e != end)
                        return fail_at(p, pos, "invalid %s integer '%.*s'",
                                       base == 16  ? "hexadecimal"
                                       : base == 8 ? "octal"
                                                   : "binary",
                                       (int)(end - s), s);
                uint64_t u = 0;
                for (const char *c = t + 2; c < end; c++) {
                        if (*c == '_') continue;
                        if (u > (uint64_t)INT64_MAX / (uint64_t)base)
                                return fail_at(p, pos, "integer out of range (64-bit signed)");
                        u = u * (uint64_t)base + (uint64_t)hex_value((unsigned char)*c);
                        if (u > (uint64_t)INT64_MAX) return fail_at(p, pos, "integer out of range (64-bit signed)");
                }
                struct toml_value *v = value_new(TOML_INTEGER, 0, 0);
                v->u.i = (int64_t)u;
                *ret = v;
                return 0;
        }
        const char *e = scan_digits(t, end, 10);
        if (!e) return fail_at(p, pos, "invalid value '%.*s'", (int)(end - s), s);
        if (t[0] == '0' && e - t > 1)
                return fail_at(p, pos, "leading zeros are not allowed in '%.*s'", (int)(end - s), s);
        bool is_float = false;
        if (e < end && *e == '.') {
                is_float = true;
                e = scan_digits(e + 1, end, 10);
                if (!e)
                        return fail_at(p, pos, "a decimal point needs digits on both sides in '%.*s'", (int)(end - s),
                                       s);
        }
        if (e < end && (*e == 'e' || *e == 'E')) {
                is_float = true;
                e++;
                if (e < end && (*e == '+' || *e == '-')) e++;
                e = scan_digits(e, end, 10);
                if (!e) return fail_at(p, pos, "invalid exponent in '%.*s'", (int)(end - s), s);
        }
        if (e != end) return fail_at(p, pos, "invalid number '%.*s'", (int)(end - s), s);

        struct buf *digits = scratch_reset(p);
        for (const char *c = s; c < end; c++)
                if (*c != '_') buf_append(digits, c, 1);
        const char *clean = digits->data;
        if (!is_float) {
                uint64_t u = 0;
                for (const char *c = clean + sign; *c; c++) {
                        if (u > (UINT64_MAX - 9) / 10) return fail_at(p, pos, "integer out of range (64-bit signed)");
                        u = u * 10 + (uint64_t)(*c - '0');
                }
                if (u > (uint64_t)INT64_MAX + neg) return fail_at(p, pos, "integer out of range (64-bit signed)");
                struct toml_value *v = value_new(TOML_INTEGER, 0, 0);
                v->u.i = neg ? (int64_t)(0 - u) : (int64_t)u;
                *ret = v;
                return 0;
        }
        /* strtod_l: the C locale's decimal point whatever setlocale() the program called. */
        locale_t c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
        if (!c_locale) return fail_at(p, pos, "cannot create the C locale");
        errno = 0;
        char *stop;
        double d = strtod_l(clean, &stop, c_locale);
        int saved = errno;
        freelocale(c_locale);
        if (*stop) return fail_at(p, pos, "invalid float '%.*s'", (int)(end - s), s);
        if (saved == ERANGE && isinf(d)) return fail_at(p, pos, "float out of range '%.*s'", (int)(end - s), s);
        struct toml_value *v = value_new(TOML_FLOAT, 0, 0);
        v->u.f = d;
        *ret = v;
        return 0;
}

/* Returns the number of days of a month (1-12) in a year. */
static int days_in_month(int year, int month) {
        static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
        if (month == 2 && year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)) return 29;
        return days[month - 1];
}

/* Reads n decimal digits at s (which has room). Returns their value, or -1 if one is not a digit. */
static int read_digits(const char *s, int n) {
        int v = 0;
        for (int i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9') return -1;
                v = v * 10 + (s[i] - '0');
        }
        return v;
}

/* Parses YYYY-MM-DD at [s, end). Returns the end of the date, or NULL with the reason in *why
 * when malformed or not a real day. */
static const char *scan_date(const char *s, const char *end, const char **why) {
        int y = -1, m = -1, d = -1;
        if (end - s >= 10 && s[4] == '-' && s[7] == '-') {
                y = read_digits(s, 4);
                m = read_digits(s + 5, 2);
                d = read_digits(s + 8, 2);
        }
        if (y < 0 || m < 0 || d < 0)
                *why = "a date is YYYY-MM-DD";
        else if (m < 1 || m > 12)
                *why = "month out of range 01-12";
        else if (d < 1 || d > days_in_month(y, m))
                *why = "no such day in that month";
        else
                return s + 10;
        return NULL;
}

/* Parses HH:MM:SS[.fraction] at [s, end). Returns the end of the time, or NULL with the reason
 * in *why when malformed or out of range (a leap second :60 is allowed). */
static const char *scan_time(const char *s, const char *end, const char **why) {
        int h = -1, m = -1, sec = -1;
        if (end - s >= 8 && s[2] == ':' && s[5] == ':') {
                h = read_digits(s, 2);
                m = read_digits(s + 3, 2);
                sec = read_digits(s + 6, 2);
        }
        if (h < 0 || m < 0 || sec < 0)
                *why = "a time is HH:MM:SS, seconds included";
        else if (h > 23)
                *why = "hour out of range 00-23";
        else if (m > 59)
                *why = "minute out of range 00-59";
        else if (sec > 60)
                *why = "second out of range 00-60";
        else {
                s += 8;
                if (s < end && *s == '.') {
                        const char *digits = ++s;
                        while (s < end && *s >= '0' && *s <= '9') s++;
                        if (s == digits) {
                                *why = "a '.' in a time needs digits after it";
                                return NULL;
                        }
                }
                return s;
        }
        return NULL;
}

/* Parses the date/time token [s, end) (with 'T', 't' or ' ' between date and time). Returns 0
 * with a new value holding its normalized text in *ret, or -EINVAL when malformed. */
static int parse_datetime(struct parser *p, size_t pos, const char *s, const char *end, struct toml_value **ret) {
        struct buf *b = scratch_reset(p);
        enum toml_type type;
        const char *why = NULL;
        const char *e = scan_date(s, end, &why);
        if (e) {
                buf_append(b, s, 10);
                type = TOML_DATE_LOCAL;
                if (e < end) {
                        if (*e != 'T' && *e != 't' && *e != ' ') {
                                why = "date and time are joined by 'T' or a space";
                                goto bad;
                        }
                        const char *t = e + 1;
                        e = scan_time(t, end, &why);
                        if (!e) goto bad;
                        buf_append(b, "T", 1);
                        buf_append(b, t, (size_t)(e - t));
                        type = TOML_DATETIME_LOCAL;
                        if (e < end && (*e == 'Z' || *e == 'z')) {
                                buf_append(b, "Z", 1);
                                e++;
                                type = TOML_DATETIME;
                        } else if (e < end && (*e == '+' || *e == '-')) {
                                int oh = end - e >= 6 ? read_digits(e + 1, 2) : -1;
                                int om = end - e >= 6 && e[3] == ':' ? read_digits(e + 4, 2) : -1;
                                if (oh < 0 || om < 0)
                                        why = "an offset is Z, +HH:MM or -HH:MM";
                                else if (oh > 23 || om > 59)
                                        why = "offset out of range";
                                if (why) goto bad;
                                buf_append(b, e, 6);
                                e += 6;
                                type = TOML_DATETIME;
                        }
                }
        } else if (!(end - s >= 5 && s[4] == '-')) {
                e = scan_time(s, end, &why);
                if (!e) goto bad;
                buf_append(b, s, (size_t)(e - s));
                type = TOML_TIME_LOCAL;
        } else
                goto bad;
        if (e != end) {
                why = "unexpected text after it";
                goto bad;
        }
        struct toml_value *v = value_new(type, 0, 0);
        v->u.str.s = scratch_take(p, &v->u.str.len);
        *ret = v;
        return 0;
bad:
        return fail_at(p, pos, "invalid date/time '%.*s': %s", (int)(end - s > 40 ? 40 : end - s), s, why);
}

/* Parses an unquoted value at the current position: boolean, number, date or time. Returns 0
 * with a new value in *ret, or -EINVAL. */
static int parse_bare_value(struct parser *p, struct toml_value **ret) {
        size_t start = p->pos;
        const char *s = p->text + start;
        while (p->pos < p->len && is_token_char((unsigned char)p->text[p->pos])) p->pos++;
        /* A local date followed by a space and a time is one date-time: 1979-05-27 07:32:00. */
        if (p->pos - start == 10 && scan_date(s, s + 10, &(const char *){ NULL }) && peek(p) == ' ' &&
            peek_at(p, 1) >= '0' && peek_at(p, 1) <= '9' && peek_at(p, 2) >= '0' && peek_at(p, 2) <= '9' &&
            peek_at(p, 3) == ':') {
                p->pos++;
                while (p->pos < p->len && is_token_char((unsigned char)p->text[p->pos])) p->pos++;
        }
        const char *end = p->text + p->pos;
        size_t n = p->pos - start;
        if (n == 0) {
                if (start >= p->len) return fail_at(p, start, "expected a value before the end of input");
                if (at_newline(p)) return fail_at(p, start, "expected a value before the end of the line");
                if (p->text[start] == '#') return fail_at(p, start, "expected a value before the comment");
                if ((unsigned char)p->text[start] >= 0x80) return fail_at(p, start, "expected a value");
                return fail_at(p, start, "expected a value, found %s", char_name(peek(p), (char[8]){ 0 }));
        }
        if ((n == 4 && memcmp(s, "true", 4) == 0) || (n == 5 && memcmp(s, "false", 5) == 0)) {
                struct toml_value *v = value_new(TOML_BOOL, 0, 0);
                v->u.b = n == 4;
                *ret = v;
                return 0;
        }
        if ((n >= 5 && s[4] == '-' && read_digits(s, 4) >= 0) || (n >= 3 && s[2] == ':' && read_digits(s, 2) >= 0))
                return parse_datetime(p, start, s, end, ret);
        if ((s[0] >= '0' && s[0] <= '9') || s[0] == '+' || s[0] == '-' || memcmp(s, "inf", n < 3 ? n : 3) == 0 ||
            memcmp(s, "nan", n < 3 ? n : 3) == 0)
                return parse_number(p, start, s, end, ret);
        return fail_at(p, start, "invalid value '%.*s' (strings need quotes; booleans are true and false)",
                       (int)(n > 40 ? 40 : n), s);
}

/* Parses an array at the current '[': values separated by commas, a trailing comma, newlines
 * and comments allowed. Returns 0 with it in *ret, or -EINVAL. */
static int parse_array(struct parser *p, unsigned depth, struct toml_value **ret) {
        size_t start = p->pos;
        struct toml_value *a = NULL;
        int r = container_new(p, start, TOML_ARRAY, depth, 0, &a);
        if (r < 0) return r;
        p->pos++;
        for (;;) {
                skip_ws_comments_newlines(p);
                if (peek(p) == ']') break;
                if (p->pos >= p->len) {
                        r = fail_at(p, start, "unterminated array: missing ']'");
                        goto fail;
                }
                struct toml_value *v = NULL;
                r = parse_value(p, depth + 1, &v);
                if (r < 0) goto fail;
                array_append(a, v);
                skip_ws_comments_newlines(p);
                if (peek(p) == ',') {
                        p->pos++;
                        continue;
                }
                if (peek(p) == ']') break;
                if (p->pos >= p->len)
                        r = fail_at(p, start, "unterminated array: missing ']'");
                else
                        r = fail_at(p, p->pos, "expected ',' or ']' in array, found %s",
                                    char_name(peek(p), (char[8]){ 0 }));
                goto fail;
        }
        p->pos++;
        *ret = a;
        return 0;
fail:
        toml_free(a);
        return r;
}

/* Parses an inline table at the current '{': key = value pairs separated by commas on one line
 * (TOML 1.0: no newlines, no trailing comma). Returns 0 with it (sealed) in *ret, or -EINVAL. */
static int parse_inline_table(struct parser *p, unsigned depth, struct toml_value **ret) {
        size_t start = p->pos;
        struct toml_value *t = NULL;
        int r = container_new(p, start, TOML_TABLE, depth, F_INLINE, &t);
        if (r < 0) return r;
        p->pos++;
        skip_ws(p);
        if (peek(p) != '}') {
                for (;;) {
                        skip_ws(p);
                        r = parse_keyval(p, t);
                        if (r < 0) goto fail;
                        skip_ws(p);
                        if (peek(p) == '}') break;
                        if (peek(p) != ',') {
                                if (p->pos >= p->len)
                                        r = fail_at(p, start, "unterminated inline table: missing '}'");
                                else if (at_newline(p))
                                        r = fail_at(p, p->pos, "an inline table must end on its line: missing '}'");
                                else
                                        r = fail_at(p, p->pos, "expected ',' or '}' in inline table, found %s",
                                                    char_name(peek(p), (char[8]){ 0 }));
                                goto fail;
                        }
                        p->pos++;
                        skip_ws(p);
                        if (peek(p) == '}') {
                                r = fail_at(p, p->pos, "trailing comma is not allowed in an inline table");
                                goto fail;
                        }
                }
        }
        p->pos++;
        *ret = t;
        return 0;
fail:
        toml_free(t);
        return r;
}

/* Parses any value at the current position; containers get the given depth. Returns 0 with a
 * new value in *ret, or -EINVAL. */
static int parse_value(struct parser *p, unsigned depth, struct toml_value **ret) {
        int c = peek(p);
        if (c == '"' || c == '\'') {
                struct buf *b = scratch_reset(p);
                int r = at_triple(p, (char)c) ? parse_multiline_string(p, b) : parse_line_string(p, b);
                if (r < 0) return r;
                struct toml_value *v = value_new(TOML_STRING, 0, 0);
                v->u.str.s = scratch_take(p, &v->u.str.len);
                *ret = v;
                return 0;
        }
        if (c == '[') return parse_array(p, depth, ret);
        if (c == '{') return parse_inline_table(p, depth, ret);
        return parse_bare_value(p, ret);
}

/* ---- tables ---- */

/* Returns what v already is, as a phrase for messages ("a value", "an inline table", ...). */
static const char *describe(const struct toml_value *v) {
        if (v->type == TOML_ARRAY) return v->flags & F_AOT ? "an array of tables" : "an array";
        if (v->type != TOML_TABLE) return "a value";
        if (v->flags & F_INLINE) return "an inline table, which cannot be extended";
        if (v->flags & F_DOTTED) return "a table made by dotted keys";
        if (v->flags & F_EXPLICIT) return "a table defined by a [header]";
        return "a table";
}

/* Hands part kp of a key to table t under a new child value. Returns nothing. */
static void table_adopt(struct toml_value *t, struct key_part *kp, struct toml_value *child) {
        table_append(t, kp->s, kp->len, child);
        kp->owned = false; /* kp->s stays readable for messages while the tree lives */
}

/* Parses "key = value" at the current position into table (the current [table], or an inline
 * table being built): dotted keys create or extend tables on the way, which must have been
 * created by dotted keys (or implicitly by a header), not defined by a header or inline.
 * Returns 0, or -EINVAL on syntax errors and redefinitions. */
static int parse_keyval(struct parser *p, struct toml_value *table) {
        struct key k = { 0 };
        char name[96];
        int r = parse_key(p, &k);
        if (r < 0) goto out;
        skip_ws(p);
        if (peek(p) != '=') {
                r = fail_at(p, p->pos, "expected '=' after key '%s', found %s", key_name(&k, k.n, name, sizeof(name)),
                            char_name(peek(p), (char[8]){ 0 }));
                goto out;
        }
        p->pos++;
        skip_ws(p);

        struct toml_value *t = table;
        for (size_t i = 0; i + 1 < k.n; i++) {
                struct key_part *kp = &k.parts[i];
                struct toml_value *child = table_lookup(t, kp->s, kp->len);
                if (!child) {
                        r = container_new(p, kp->pos, TOML_TABLE, t->depth + 1u, F_DOTTED, &child);
                        if (r < 0) goto out;
                        table_adopt(t, kp, child);
                } else if (child->type != TOML_TABLE || (child->flags & (F_INLINE | F_EXPLICIT))) {
                        r = fail_at(p, kp->pos, "cannot add keys to '%s' with a dotted key: it is already %s",
                                    key_name(&k, i + 1, name, sizeof(name)), describe(child));
                        goto out;
                } else
                        child->flags |= F_DOTTED;
                t = child;
        }
        struct key_part *last = &k.parts[k.n - 1];
        struct toml_value *old = table_lookup(t, last->s, last->len);
        if (old) {
                r = fail_at(p, last->pos, "duplicate key '%s': it is already %s", key_name(&k, k.n, name, sizeof(name)),
                            describe(old));
                goto out;
        }
        struct toml_value *v = NULL;
        r = parse_value(p, t->depth + 1u, &v);
        if (r < 0) goto out;
        table_adopt(t, last, v);
out:
        key_clear(&k);
        return r;
}

/* Parses a [table] or [[array of tables]] header at the current '[' and makes the table it
 * names the current one. Returns 0, or -EINVAL on syntax errors and redefinitions. */
static int parse_header(struct parser *p) {
        bool aot = peek_at(p, 1) == '[';
        const char *open = aot ? "[[" : "[", *close = aot ? "]]" : "]";
        struct key k = { 0 };
        char name[96];
        int r;
        p->pos += aot ? 2 : 1;
        skip_ws(p);
        r = parse_key(p, &k);
        if (r < 0) goto out;
        skip_ws(p);
        if (peek(p) != ']' || (aot && peek_at(p, 1) != ']')) {
                r = fail_at(p, p->pos, "expected '%s' to close the header %s%s, found %s", close, open,
                            key_name(&k, k.n, name, sizeof(name)), char_name(peek(p), (char[8]){ 0 }));
                goto out;
        }
        p->pos += aot ? 2 : 1;

        struct toml_value *t = p->root;
        for (size_t i = 0; i + 1 < k.n; i++) {
                struct key_part *kp = &k.parts[i];
                struct toml_value *child = table_lookup(t, kp->s, kp->len);
                if (!child) {
                        r = container_new(p, kp->pos, TOML_TABLE, t->depth + 1u, F_IMPLICIT, &child);
                        if (r < 0) goto out;
                        table_adopt(t, kp, child);
                } else if (child->type == TOML_ARRAY && (child->flags & F_AOT))
                        child = child->u.array.items[child->u.array.n - 1];
                else if (child->type != TOML_TABLE || (child->flags & F_INLINE)) {
                        r = fail_at(p, kp->pos, "cannot define %s%s%s: '%s' is already %s", open,
                                    key_name(&k, k.n, name, sizeof(name)), close,
                                    key_name(&k, i + 1, (char[96]){ 0 }, 96), describe(child));
                        goto out;
                }
                t = child;
        }
        struct key_part *last = &k.parts[k.n - 1];
        struct toml_value *child = table_lookup(t, last->s, last->len);
        key_name(&k, k.n, name, sizeof(name));
        if (aot) {
                if (!child) {
                        r = container_new(p, last->pos, TOML_ARRAY, t->depth + 1u, F_AOT, &child);
                        if (r < 0) goto out;
                        table_adopt(t, last, child);
                } else if (child->type != TOML_ARRAY || !(child->flags & F_AOT)) {
                        r = fail_at(p, last->pos, "cannot define [[%s]]: it is already %s", name, describe(child));
                        goto out;
                }
                struct toml_value *elem = NULL;
                r = container_new(p, last->pos, TOML_TABLE, child->depth + 1u, F_EXPLICIT, &elem);
                if (r < 0) goto out;
                array_append(child, elem);
                p->cur = elem;
        } else {
                if (!child) {
                        r = container_new(p, last->pos, TOML_TABLE, t->depth + 1u, F_EXPLICIT, &child);
                        if (r < 0) goto out;
                        table_adopt(t, last, child);
                } else if (child->type == TOML_TABLE &&
                           (child->flags & (F_EXPLICIT | F_DOTTED | F_INLINE)) == F_EXPLICIT) {
                        r = fail_at(p, last->pos, "table [%s] is defined more than once", name);
                        goto out;
                } else if (child->type != TOML_TABLE || child->flags != F_IMPLICIT) {
                        r = fail_at(p, last->pos, "cannot define [%s]: it is already %s", name, describe(child));
                        goto out;
                } else
                        child->flags |= F_EXPLICIT;
                p->cur = child;
        }
out:
        key_clear(&k);
        return r;
}

/* Parses a whole document: a BOM, a byte check, then line by line headers, key/values and
 * comments. Returns 0 with the root table in *ret, or -EINVAL with *ret NULL and the first
 * error's position and message in *ret_error (see toml.h). */
int toml_parse(const char *text, size_t len, struct toml_value **ret, struct toml_error *ret_error) {
        struct parser p = { .text = text ? text : "", .len = text ? len : 0 };
        int r;

        if (ret_error) *ret_error = (struct toml_error){ 0 };
        *ret = NULL;
        if (p.len >= 3 && memcmp(p.text, "\xef\xbb\xbf", 3) == 0) p.pos = 3;
        p.root = p.cur = value_new(TOML_TABLE, 0, F_EXPLICIT);
        r = check_bytes(&p, p.pos);
        while (r >= 0) {
                skip_ws(&p);
                if (p.pos >= p.len) break;
                int c = peek(&p);
                if (c == '[') {
                        r = parse_header(&p);
                        if (r >= 0) r = expect_line_end(&p, "the table header");
                } else if (c == '#' || at_newline(&p))
                        r = expect_line_end(&p, "a comment");
                else {
                        r = parse_keyval(&p, p.cur);
                        if (r >= 0) r = expect_line_end(&p, "the value");
                }
        }
        buf_free(&p.scratch);
        if (r < 0) {
                if (ret_error) {
                        position_of(p.text, p.len, p.err_pos, &ret_error->line, &ret_error->column);
                        snprintf(ret_error->message, sizeof(ret_error->message), "%s", p.err);
                }
                toml_free(p.root);
                return -EINVAL;
        }
        *ret = p.root;
        return 0;
}

/* ---- read API ---- */

/* Returns the type of v, TOML_NONE for NULL. */
enum toml_type toml_type_of(const struct toml_value *v) {
        return v ? v->type : TOML_NONE;
}

/* Returns the toml-test name of a type, "none" for anything else. */
const char *toml_type_name(enum toml_type type) {
        switch (type) {
        case TOML_TABLE: return "table";
        case TOML_ARRAY: return "array";
        case TOML_STRING: return "string";
        case TOML_INTEGER: return "integer";
        case TOML_FLOAT: return "float";
        case TOML_BOOL: return "bool";
        case TOML_DATETIME: return "datetime";
        case TOML_DATETIME_LOCAL: return "datetime-local";
        case TOML_DATE_LOCAL: return "date-local";
        case TOML_TIME_LOCAL: return "time-local";
        default: return "none";
        }
}

/* Returns the value under key_len bytes of key in table, NULL when absent or not a table. */
const struct toml_value *toml_table_getn(const struct toml_value *table, const char *key, size_t key_len) {
        if (!table || table->type != TOML_TABLE || !key) return NULL;
        return table_lookup(table, key, key_len);
}

/* Returns the value under the NUL-terminated key in table, NULL when absent or not a table. */
const struct toml_value *toml_table_get(const struct toml_value *table, const char *key) {
        return key ? toml_table_getn(table, key, strlen(key)) : NULL;
}

/* Returns the number of keys of a table, 0 for anything else. */
size_t toml_table_size(const struct toml_value *table) {
        return table && table->type == TOML_TABLE ? table->u.table.n : 0;
}

/* Returns the i-th key of a table in document order, NULL when out of range. */
const char *toml_table_key_at(const struct toml_value *table, size_t i) {
        return i < toml_table_size(table) ? table->u.table.items[i].key : NULL;
}

/* Returns the length of the i-th key of a table, 0 when out of range. */
size_t toml_table_key_len_at(const struct toml_value *table, size_t i) {
        return i < toml_table_size(table) ? table->u.table.items[i].key_len : 0;
}

/* Returns the i-th value of a table in document order, NULL when out of range. */
const struct toml_value *toml_table_value_at(const struct toml_value *table, size_t i) {
        return i < toml_table_size(table) ? table->u.table.items[i].value : NULL;
}

/* Returns the number of elements of an array, 0 for anything else. */
size_t toml_array_len(const struct toml_value *array) {
        return array && array->type == TOML_ARRAY ? array->u.array.n : 0;
}

/* Returns the i-th element of an array, NULL when out of range. */
const struct toml_value *toml_array_at(const struct toml_value *array, size_t i) {
        return i < toml_array_len(array) ? array->u.array.items[i] : NULL;
}

/* Returns the value at the end of a NULL-terminated key list, NULL when a step is missing. */
const struct toml_value *toml_get_pathv(const struct toml_value *root, const char *const *keys) {
        const struct toml_value *v = root;
        for (size_t i = 0; v && keys && keys[i]; i++) v = toml_table_get(v, keys[i]);
        return v;
}

/* Returns the value at the end of the NULL-terminated key arguments, NULL when a step is
 * missing. */
const struct toml_value *toml_get_path(const struct toml_value *root, ...) {
        const struct toml_value *v = root;
        va_list ap;
        va_start(ap, root);
        for (const char *key; v && (key = va_arg(ap, const char *));) v = toml_table_get(v, key);
        va_end(ap);
        return v;
}

/* Returns a string's bytes, NULL when v is not a string. */
const char *toml_string(const struct toml_value *v) {
        return v && v->type == TOML_STRING ? v->u.str.s : NULL;
}

/* Returns a string's length in bytes, 0 when v is not a string. */
size_t toml_string_len(const struct toml_value *v) {
        return v && v->type == TOML_STRING ? v->u.str.len : 0;
}

/* Returns true with an integer in *ret, false when v is not an integer. */
bool toml_int(const struct toml_value *v, int64_t *ret) {
        if (!v || v->type != TOML_INTEGER) return false;
        *ret = v->u.i;
        return true;
}

/* Returns true with a boolean in *ret, false when v is not a boolean. */
bool toml_bool(const struct toml_value *v, bool *ret) {
        if (!v || v->type != TOML_BOOL) return false;
        *ret = v->u.b;
        return true;
}

/* Returns true with a float in *ret, false when v is not a float. */
bool toml_double(const struct toml_value *v, double *ret) {
        if (!v || v->type != TOML_FLOAT) return false;
        *ret = v->u.f;
        return true;
}

/* Returns the normalized text of a date or time, NULL for other types. */
const char *toml_datetime(const struct toml_value *v) {
        if (!v) return NULL;
        switch (v->type) {
        case TOML_DATETIME:
        case TOML_DATETIME_LOCAL:
        case TOML_DATE_LOCAL:
        case TOML_TIME_LOCAL: return v->u.str.s;
        default: return NULL;
        }
}

/* ---- merge ---- */

/* Returns a deep copy of v; aborts on out-of-memory. Recursion is bounded by the depth limit
 * every parsed value respects. */
static struct toml_value *value_copy(const struct toml_value *v) {
        struct toml_value *c = value_new(v->type, v->depth, v->flags);
        switch (v->type) {
        case TOML_TABLE:
                for (size_t i = 0; i < v->u.table.n; i++) {
                        const struct toml_kv *kv = &v->u.table.items[i];
                        char *key = xmalloc(kv->key_len + 1);
                        memcpy(key, kv->key, kv->key_len + 1);
                        table_append(c, key, kv->key_len, value_copy(kv->value));
                }
                break;
        case TOML_ARRAY:
                for (size_t i = 0; i < v->u.array.n; i++) array_append(c, value_copy(v->u.array.items[i]));
                break;
        case TOML_STRING:
        case TOML_DATETIME:
        case TOML_DATETIME_LOCAL:
        case TOML_DATE_LOCAL:
        case TOML_TIME_LOCAL:
                c->u.str.s = xmalloc(v->u.str.len + 1);
                memcpy(c->u.str.s, v->u.str.s, v->u.str.len + 1);
                c->u.str.len = v->u.str.len;
                break;
        default: c->u = v->u; break;
        }
        return c;
}

/* Moves the keys of src, a table the caller owns, into table dst: tables meeting tables are
 * merged recursively, anything else replaces what dst had. What is moved is taken out of src,
 * which the caller still frees. Returns nothing; aborts on out-of-memory. */
static void merge_take(struct toml_value *dst, struct toml_value *src) {
        for (size_t i = 0; i < src->u.table.n; i++) {
                struct toml_kv *kv = &src->u.table.items[i];
                ssize_t j = table_find(dst, kv->key, kv->key_len);
                if (j < 0) {
                        table_append(dst, kv->key, kv->key_len, kv->value);
                        kv->key = NULL;
                        kv->value = NULL;
                        continue;
                }
                struct toml_value **slot = &dst->u.table.items[j].value;
                if ((*slot)->type == TOML_TABLE && kv->value->type == TOML_TABLE)
                        merge_take(*slot, kv->value);
                else {
                        toml_free(*slot);
                        *slot = TAKE_PTR(kv->value);
                }
        }
}

/* Merges a copy of table src into table dst, src winning on conflicts (see toml.h). Returns 0,
 * or -EINVAL when either is not a table. */
int toml_merge(struct toml_value *dst, const struct toml_value *src) {
        if (!dst || !src || dst->type != TOML_TABLE || src->type != TOML_TABLE) return -EINVAL;
        /* Working from a copy keeps src intact even when it lies inside dst. */
        struct toml_value *copy = value_copy(src);
        merge_take(dst, copy);
        toml_free(copy);
        return 0;
}
