/* toml.h: a TOML 1.0 parser (containerd and nvidia-container-runtime configs) and a small read API. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Deepest nesting of tables and arrays a document may have (the root table is depth 0). */
#define TOML_MAX_DEPTH 128

enum toml_type {
        TOML_NONE = -1, /* only returned by toml_type_of(NULL) */
        TOML_TABLE = 0,
        TOML_ARRAY,
        TOML_STRING,
        TOML_INTEGER,
        TOML_FLOAT,
        TOML_BOOL,
        TOML_DATETIME,       /* offset date-time: 1979-05-27T07:32:00Z, ...-07:00 */
        TOML_DATETIME_LOCAL, /* 1979-05-27T07:32:00 */
        TOML_DATE_LOCAL,     /* 1979-05-27 */
        TOML_TIME_LOCAL,     /* 07:32:00.999 */
};

/* A parsed value; a document is a TOML_TABLE. Opaque: read it with the functions below. */
struct toml_value;

/* Where and why parsing failed: line and column are 1-based, the column counts characters. */
struct toml_error {
        int line, column;
        char message[200];
};

/* Parses len bytes of text (need not be NUL-terminated; a leading UTF-8 BOM is skipped).
 * Returns 0 and the document (a table) in *ret, to be freed with toml_free(); or -EINVAL for
 * any input that is not valid TOML 1.0 (syntax, invalid UTF-8, control characters, redefined
 * keys or tables, nesting deeper than TOML_MAX_DEPTH), with *ret set to NULL and, when
 * ret_error is not NULL, its position and message there (zeroed on success). Never prints. */
int toml_parse(const char *text, size_t len, struct toml_value **ret, struct toml_error *ret_error);

/* Frees a value and everything under it; NULL is fine. Returns nothing, cannot fail. */
void toml_free(struct toml_value *v);

/* Frees *v; for _cleanup_toml_ variables. */
static inline void toml_freep(struct toml_value **v) {
        toml_free(*v);
}
#define _cleanup_toml_ __attribute__((cleanup(toml_freep)))

/* Returns the type of v, or TOML_NONE when v is NULL. */
enum toml_type toml_type_of(const struct toml_value *v);

/* Returns a static lower-case name for a type ("table", "datetime-local", ...), "none" for others. */
const char *toml_type_name(enum toml_type type);

/* Returns the value stored under key (one key: dots are part of it), or NULL when table is
 * NULL, not a table, or has no such key. Large tables are hashed, so lookups are O(1). */
const struct toml_value *toml_table_get(const struct toml_value *table, const char *key);

/* Returns the value under the key_len bytes at key (keys may contain NUL); NULL as above. */
const struct toml_value *toml_table_getn(const struct toml_value *table, const char *key, size_t key_len);

/* Returns the number of keys of table, or 0 when it is NULL or not a table. */
size_t toml_table_size(const struct toml_value *table);

/* Returns the i-th key of table in document order (NUL-terminated), or NULL when out of range
 * or not a table. toml_table_key_len_at() returns its length in bytes (0 when out of range). */
const char *toml_table_key_at(const struct toml_value *table, size_t i);
size_t toml_table_key_len_at(const struct toml_value *table, size_t i);

/* Returns the i-th value of table in document order, or NULL when out of range or not a table. */
const struct toml_value *toml_table_value_at(const struct toml_value *table, size_t i);

/* Returns the number of elements of array, or 0 when it is NULL or not an array. */
size_t toml_array_len(const struct toml_value *array);

/* Returns the i-th element of array, or NULL when out of range or not an array. */
const struct toml_value *toml_array_at(const struct toml_value *array, size_t i);

/* Follows a NULL-terminated list of keys through nested tables, each key taken whole (so
 * "io.containerd.grpc.v1.cri" is one key). Returns the value at the end, or NULL when a key is
 * missing or a step is not a table. With no keys, returns root. */
const struct toml_value *toml_get_pathv(const struct toml_value *root, const char *const *keys);

/* Same as toml_get_pathv() with the keys as arguments, ending with NULL:
 * toml_get_path(doc, "plugins", "io.containerd.grpc.v1.cri", "enable_cdi", NULL). */
const struct toml_value *toml_get_path(const struct toml_value *root, ...) __attribute__((sentinel));

/* Returns the string's bytes (NUL-terminated), or NULL when v is not a string. A string may
 * contain NUL (written "\u0000"); toml_string_len() gives its length (0 when not a string). */
const char *toml_string(const struct toml_value *v);
size_t toml_string_len(const struct toml_value *v);

/* Stores an integer's value in *ret and returns true; returns false (and leaves *ret) when v is
 * not an integer. */
bool toml_int(const struct toml_value *v, int64_t *ret);

/* Stores a boolean in *ret and returns true; returns false when v is not a boolean. */
bool toml_bool(const struct toml_value *v, bool *ret);

/* Stores a float (inf and nan included) in *ret and returns true; returns false when v is not
 * a float (integers are not converted). */
bool toml_double(const struct toml_value *v, double *ret);

/* Returns the text of any of the four date/time kinds, normalized: "T" between date and time,
 * "Z" upper-case, the fraction of seconds and the offset as written
 * ("1979-05-27T00:32:00.999999-07:00"); NULL when v is not a date or time. */
const char *toml_datetime(const struct toml_value *v);

/* Merges src into dst, both tables, the way a drop-in overrides a main config: for every key
 * of src, when both sides hold a table the two are merged recursively; otherwise (a leaf, an
 * array, or a table against a non-table) dst's value is replaced by a copy of src's. Arrays are
 * replaced, not concatenated. Keys new to dst are appended in src's order; replaced keys keep
 * their place. src is left untouched and may be any table, even one inside dst. Returns 0, or
 * -EINVAL when either is not a table. */
int toml_merge(struct toml_value *dst, const struct toml_value *src);
