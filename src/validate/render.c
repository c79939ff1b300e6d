/* render.c: a gpunode.validate/v1 report as text for a terminal and as Prometheus text. */
#include "validate/validate.h"

#include "basic/util.h"

/* Appends one test line: status, id (with its direction), value and unit, expected and ratio, summary. */
static void text_test(struct buf *b, json_t *t) {
        const char *dir = json_string_value(json_object_get(t, "direction"));
        _cleanup_free_ char *id =
                xasprintf("%s%s%s", json_string_value(json_object_get(t, "id")), dir ? " " : "", dir ? dir : "");
        buf_printf(b, "  %-5s %-24s %s\n", json_string_value(json_object_get(t, "status")), id,
                   json_string_value(json_object_get(t, "summary")));
}

char *validate_render_text(const json_t *report) {
        struct buf b = { 0 };
        json_t *rep = (json_t *)report;
        buf_printf(&b, "gpunode validate on %s, level %s: %s (%.1f s)\n",
                   json_string_value(json_object_get(rep, "node")), json_string_value(json_object_get(rep, "level")),
                   json_string_value(json_object_get(rep, "verdict")),
                   json_number_value(json_object_get(rep, "duration_s")));
        size_t i, j;
        json_t *g, *t;
        json_array_foreach(json_object_get(rep, "gpus"), i, g) {
                buf_printf(&b, "\nGPU %lld  %s  %s  %s: %s\n",
                           (long long)json_integer_value(json_object_get(g, "index")),
                           json_string_value(json_object_get(g, "name")), json_string_value(json_object_get(g, "uuid")),
                           json_string_value(json_object_get(g, "pci_bus_id")),
                           json_string_value(json_object_get(g, "verdict")));
                const char *why = json_string_value(json_object_get(g, "refused"));
                if (why) buf_printf(&b, "  refused: %s\n", why);
                json_array_foreach(json_object_get(g, "tests"), j, t) text_test(&b, t);
        }
        json_array_foreach(json_object_get(rep, "pairs"), i, g) {
                buf_printf(&b, "\npair GPU %lld - GPU %lld (%s): %s\n",
                           (long long)json_integer_value(json_object_get(g, "a")),
                           (long long)json_integer_value(json_object_get(g, "b")),
                           json_string_value(json_object_get(g, "link")),
                           json_string_value(json_object_get(g, "verdict")));
                json_array_foreach(json_object_get(g, "tests"), j, t) text_test(&b, t);
        }
        json_t *errs = json_object_get(rep, "errors");
        if (json_array_size(errs)) buf_puts(&b, "\nerrors:\n");
        json_array_foreach(errs, i, t) buf_printf(&b, "  %s: %s\n", json_string_value(json_object_get(t, "source")),
                                                  json_string_value(json_object_get(t, "error")));
        if (!b.data) buf_puts(&b, "");
        return b.data;
}

/* Appends s as a Prometheus label value (backslash, quote and newline escaped). */
static void label(struct buf *b, const char *s) {
        for (; s && *s; s++) {
                if (*s == '\\' || *s == '"') buf_append(b, "\\", 1);
                if (*s == '\n') {
                        buf_puts(b, "\\n");
                        continue;
                }
                buf_append(b, s, 1);
        }
}

/* Returns the number a status stands for in gpunode_validate_test_status. */
static int status_number(const char *s) {
        static const char *const names[] = { "pass", "warn", "fail", "skip", "info" };
        for (int i = 0; i < 5; i++)
                if (streq_ptr(s, names[i])) return i;
        return 2;
}

/* Returns the number a verdict stands for (pass 0, degraded 1, fail 2, refused 3, error 4). */
static int verdict_number(const char *s) {
        static const char *const names[] = { "pass", "degraded", "fail", "refused", "error" };
        for (int i = 0; i < 5; i++)
                if (streq_ptr(s, names[i])) return i;
        return 4;
}

/* Appends one test's series of family f (0 status, 1 value, 2 ratio) with the labels prefix (`gpu="0",UUID="..."`). */
static void prom_test(struct buf *b, const char *labels, json_t *t, int f) {
        const char *dir = json_string_value(json_object_get(t, "direction"));
        struct buf l = { 0 };
        buf_puts(&l, labels);
        buf_puts(&l, ",test=\"");
        label(&l, json_string_value(json_object_get(t, "id")));
        buf_puts(&l, "\"");
        if (dir) {
                buf_puts(&l, ",direction=\"");
                label(&l, dir);
                buf_puts(&l, "\"");
        }
        if (f == 0)
                buf_printf(b, "gpunode_validate_test_status{%s} %d\n", l.data,
                           status_number(json_string_value(json_object_get(t, "status"))));
        json_t *v = json_object_get(t, "value");
        if (f == 1 && json_is_number(v)) {
                buf_printf(b, "gpunode_validate_test_value{%s,unit=\"", l.data);
                label(b, json_string_value(json_object_get(t, "unit")));
                buf_printf(b, "\"} %.17g\n", json_number_value(v));
        }
        json_t *r = json_object_get(t, "ratio");
        if (f == 2 && json_is_number(r))
                buf_printf(b, "gpunode_validate_test_ratio{%s} %.17g\n", l.data, json_number_value(r));
        buf_free(&l);
}

char *validate_render_prometheus(const json_t *report) {
        json_t *rep = (json_t *)report;
        struct buf b = { 0 };
        struct buf node = { 0 };
        buf_puts(&node, "node=\"");
        label(&node, json_string_value(json_object_get(rep, "node")));
        buf_puts(&node, "\"");
        buf_puts(&b,
                 "# HELP gpunode_validate_verdict The last validation's verdict: 0 pass, 1 degraded, 2 fail, 4 error.\n"
                 "# TYPE gpunode_validate_verdict gauge\n");
        buf_printf(&b, "gpunode_validate_verdict{%s,level=\"%s\"} %d\n", node.data,
                   json_string_value(json_object_get(rep, "level")),
                   verdict_number(json_string_value(json_object_get(rep, "verdict"))));
        buf_puts(&b, "# HELP gpunode_validate_duration_seconds How long the validation took.\n"
                     "# TYPE gpunode_validate_duration_seconds gauge\n");
        buf_printf(&b, "gpunode_validate_duration_seconds{%s} %.17g\n", node.data,
                   json_number_value(json_object_get(rep, "duration_s")));
        buf_puts(&b, "# HELP gpunode_validate_gpu_verdict Each GPU's verdict: 0 pass, 1 degraded, 2 fail, 3 refused.\n"
                     "# TYPE gpunode_validate_gpu_verdict gauge\n");
        size_t i, j;
        json_t *g, *t;
        json_array_foreach(json_object_get(rep, "gpus"), i, g) {
                buf_printf(&b, "gpunode_validate_gpu_verdict{%s,gpu=\"%lld\",UUID=\"", node.data,
                           (long long)json_integer_value(json_object_get(g, "index")));
                label(&b, json_string_value(json_object_get(g, "uuid")));
                buf_puts(&b, "\",modelName=\"");
                label(&b, json_string_value(json_object_get(g, "name")));
                buf_printf(&b, "\"} %d\n", verdict_number(json_string_value(json_object_get(g, "verdict"))));
        }
        static const char *const families[] = {
                "# HELP gpunode_validate_test_status Each test's status: 0 pass, 1 warn, 2 fail, 3 skip, 4 info.\n"
                "# TYPE gpunode_validate_test_status gauge\n",
                "# HELP gpunode_validate_test_value Each test's figure, in its unit.\n"
                "# TYPE gpunode_validate_test_value gauge\n",
                "# HELP gpunode_validate_test_ratio Each test's figure over the product's specification.\n"
                "# TYPE gpunode_validate_test_ratio gauge\n",
        };
        for (int f = 0; f < 3; f++) {
                buf_puts(&b, families[f]);
                json_array_foreach(json_object_get(rep, "gpus"), i, g) {
                        struct buf l = { 0 };
                        buf_printf(&l, "%s,gpu=\"%lld\",UUID=\"", node.data,
                                   (long long)json_integer_value(json_object_get(g, "index")));
                        label(&l, json_string_value(json_object_get(g, "uuid")));
                        buf_puts(&l, "\"");
                        json_array_foreach(json_object_get(g, "tests"), j, t) prom_test(&b, l.data, t, f);
                        buf_free(&l);
                }
                json_array_foreach(json_object_get(rep, "pairs"), i, g) {
                        struct buf l = { 0 };
                        buf_printf(&l, "%s,gpu=\"%lld\",peer=\"%lld\",link=\"", node.data,
                                   (long long)json_integer_value(json_object_get(g, "a")),
                                   (long long)json_integer_value(json_object_get(g, "b")));
                        label(&l, json_string_value(json_object_get(g, "link")));
                        buf_puts(&l, "\"");
                        json_array_foreach(json_object_get(g, "tests"), j, t) prom_test(&b, l.data, t, f);
                        buf_free(&l);
                }
        }
        buf_free(&node);
        return b.data;
}
