/* fuzz_toml.c: libFuzzer target for the TOML parser: parse, walk, merge and free any input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/toml.h"

/* Reads every value under v through the public API, so the sanitizers see each accessor.
 * Returns a number derived from what it read (to keep the reads from being optimized out). */
static size_t walk(const struct toml_value *v) {
        size_t n = 1;
        int64_t i;
        bool b;
        double d;
        switch (toml_type_of(v)) {
        case TOML_TABLE:
                for (size_t k = 0; k < toml_table_size(v); k++) {
                        const char *key = toml_table_key_at(v, k);
                        size_t len = toml_table_key_len_at(v, k);
                        if (toml_table_getn(v, key, len) != toml_table_value_at(v, k)) abort();
                        n += len + walk(toml_table_value_at(v, k));
                }
                break;
        case TOML_ARRAY:
                for (size_t k = 0; k < toml_array_len(v); k++) n += walk(toml_array_at(v, k));
                break;
        case TOML_STRING:
                n += toml_string_len(v) + (strlen(toml_string(v)) <= toml_string_len(v));
                break;
        case TOML_INTEGER:
                n += toml_int(v, &i) ? (size_t)(i & 1) : 0;
                break;
        case TOML_FLOAT:
                n += toml_double(v, &d) && d > 0;
                break;
        case TOML_BOOL:
                n += toml_bool(v, &b) && b;
                break;
        default:
                n += strlen(toml_datetime(v));
                break;
        }
        return n;
}

/* Parses one input; a valid document is also walked and merged. Returns 0 (aborts on a
 * broken invariant, which libFuzzer reports). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* Copy to a buffer of exactly size bytes so that reading past the end is caught. */
        char *text = malloc(size ? size : 1);
        if (!text) return 0;
        if (size) memcpy(text, data, size);
        struct toml_value *doc = NULL, *copy = NULL;
        struct toml_error err;
        if (toml_parse(text, size, &doc, &err) < 0) {
                if (doc || err.line < 1 || err.column < 1 || !err.message[0] || !memchr(err.message, 0, sizeof(err.message)))
                        abort();
        } else {
                walk(doc);
                /* Merge the document into an empty one, then over itself: both must succeed. */
                if (toml_parse("", 0, &copy, NULL) < 0) abort();
                if (toml_merge(copy, doc) < 0 || toml_merge(copy, doc) < 0) abort();
                if (toml_table_size(copy) != toml_table_size(doc)) abort();
                walk(copy);
        }
        toml_free(copy);
        toml_free(doc);
        free(text);
        return 0;
}
