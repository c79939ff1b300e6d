/* fuzz_promtext.c: libFuzzer target for promtext: parses input, checks each sample round-trips. */
#include <math.h>

#include "basic/promtext.h"
#include "basic/util.h"

/* Writes s to b as a label value with \\, \" and \n escaped. Never fails. */
static void put_escaped(struct buf *b, const char *s) {
        for (; *s; s++) {
                if (*s == '\\') buf_puts(b, "\\\\");
                else if (*s == '"') buf_puts(b, "\\\"");
                else if (*s == '\n') buf_puts(b, "\\n");
                else buf_append(b, s, 1);
        }
}

/* Compares the re-parsed sample with the original in userdata; aborts on a difference. Returns 0. */
static int check_sample(const struct promtext_sample *s, void *userdata) {
        const struct promtext_sample *o = userdata;
        if (!streq(s->name, o->name) || s->n_labels != o->n_labels) abort();
        for (size_t i = 0; i < s->n_labels; i++)
                if (!streq(s->labels[i].name, o->labels[i].name) || !streq(s->labels[i].value, o->labels[i].value)) abort();
        if (isnan(o->value) ? !isnan(s->value) : memcmp(&s->value, &o->value, sizeof(double)) != 0) abort();
        if (s->has_timestamp != o->has_timestamp || (s->has_timestamp && s->timestamp_ms != o->timestamp_ms)) abort();
        return 0;
}

/* Serializes the sample canonically and parses it back, aborting on a mismatch. Returns 0. */
static int on_sample(const struct promtext_sample *s, void *userdata) {
        size_t *count = userdata;
        struct buf b = {};
        static const struct promtext_callbacks cb = { .sample = check_sample };

        (*count)++;
        if (s->line == 0 || s->n_labels > PROMTEXT_MAX_LABELS) abort();
        buf_puts(&b, s->name);
        buf_puts(&b, "{");
        for (size_t i = 0; i < s->n_labels; i++) {
                buf_printf(&b, "%s%s=\"", i ? "," : "", s->labels[i].name);
                put_escaped(&b, s->labels[i].value);
                buf_puts(&b, "\"");
        }
        if (isnan(s->value)) buf_puts(&b, "} NaN");
        else if (isinf(s->value)) buf_puts(&b, s->value > 0 ? "} +Inf" : "} -Inf");
        else buf_printf(&b, "} %.17g", s->value);
        if (s->has_timestamp) buf_printf(&b, " %lld", (long long)s->timestamp_ms);
        buf_puts(&b, "\n");

        struct promtext_error e;
        int r = promtext_parse(b.data, b.len, &cb, (void *)s, &e);
        if (r != 0 && r != -E2BIG) abort();
        buf_free(&b);
        return 0;
}

/* Touches the HELP text so the sanitizers see every byte. Returns 0. */
static int on_help(const char *name, const char *text, unsigned long line, void *userdata) {
        (void)userdata;
        if (!*name || line == 0) abort();
        return strlen(text) == SIZE_MAX;
}

/* Checks the TYPE value is in range. Returns 0. */
static int on_type(const char *name, enum promtext_type t, unsigned long line, void *userdata) {
        (void)userdata;
        if (!*name || line == 0 || !promtext_type_to_string(t)) abort();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libFuzzer entry: returns 0 always; aborts when an invariant breaks. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const struct promtext_callbacks cb = { .sample = on_sample, .help = on_help, .type = on_type };
        struct promtext_error e;
        size_t count = 0;
        char *copy = xmalloc(size); /* an exact-size heap copy so over-reads are caught */
        memcpy(copy, data, size);

        int r = promtext_parse(copy, size, &cb, &count, &e);
        if (r != 0 && r != -EBADMSG && r != -E2BIG) abort();
        if (r < 0 && (e.line == 0 || e.error != r || !startswith(e.message, "line "))) abort();

        struct promtext_gpu_summary s;
        int r2 = promtext_gpu_summary_parse(copy, size, &s, NULL);
        if (r2 != r) abort();
        if (r == 0 && s.n_samples != count) abort();
        size_t total = 0;
        for (size_t i = 0; i < s.n_gpus; i++) {
                if (promtext_gpu_summary_find(&s, s.gpus[i].uuid) != &s.gpus[i]) abort();
                if (s.gpus[i].n_nonzero > s.gpus[i].n_series) abort();
                total += s.gpus[i].n_series;
        }
        if (total + s.n_dcgm_no_uuid != s.n_dcgm_samples) abort();
        for (size_t i = 0; i < s.n_metrics; i++)
                if (!promtext_gpu_summary_has_metric(&s, s.metrics[i])) abort();
        promtext_gpu_summary_free(&s);
        free(copy);
        return 0;
}
