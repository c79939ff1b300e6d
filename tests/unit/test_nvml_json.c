/* test_nvml_json.c: nvml_facts_from_json against the probe through the fake NVML, and round trips through nvml_facts_to_json. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <inttypes.h>
#include <jansson.h>

#include "nvml/nvml_facts_json.h"
#include "nvml/nvml_lib.h"
#include "nvml/nvml_probe.h"
#include "basic/util.h"

#ifndef FAKE_NVML_LIBRARY
#define FAKE_NVML_LIBRARY "./libnvidia-ml.so.1"
#endif
#ifndef NVML_TESTDATA
#define NVML_TESTDATA "tests/fake-nvml/testdata"
#endif

/* Reads a whole file. Returns a malloc'd NUL-terminated buffer; fails the test otherwise. */
static char *slurp(const char *path, size_t *ret_len) {
        FILE *f = fopen(path, "re");
        if (!f) fail_msg("cannot open %s", path);
        struct buf b = {0};
        char chunk[8192];
        size_t n;
        while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_append(&b, chunk, n);
        fclose(f);
        if (!b.data) buf_append(&b, "", 0);
        *ret_len = b.len;
        return b.data;
}

/* Zeroes the padding inside each {rc, value} fact of g (struct assignment leaves it unspecified). */
static void normalize(struct nvml_gpu_facts *g) {
#define FACT_PTR(member, ...) &g->member,
        struct nvml_fact_u64 *u[] = { NVML_GPU_FACTS(FACT_PTR, NVML_FACT_NO_HOOK) };
#undef FACT_PTR
        for (size_t i = 0; i < ELEMENTSOF(u); i++) {
                struct nvml_fact_u64 f = *u[i];
                memset(u[i], 0, sizeof *u[i]);
                u[i]->rc = f.rc;
                u[i]->value = f.value;
        }
}

/* Asserts that two fact sets are equal field by field (library path and timeout bound aside). */
static void assert_facts_equal(struct nvml_facts *a, struct nvml_facts *b, const char *what) {
        struct nvml_facts x = *a, y = *b;
        x.library_path = y.library_path = NULL;
        x.gpus = y.gpus = NULL;
        x.timeout_ms = y.timeout_ms = 0;
        assert_int_equal(a->n_gpus, b->n_gpus);
        memset(&x.cuda_driver_version, 0, sizeof x.cuda_driver_version);
        memset(&y.cuda_driver_version, 0, sizeof y.cuda_driver_version);
        assert_int_equal(a->cuda_driver_version.rc, b->cuda_driver_version.rc);
        assert_int_equal(a->cuda_driver_version.value, b->cuda_driver_version.value);
        if (memcmp(&x, &y, sizeof x) != 0) fail_msg("%s: system facts differ", what);
        for (unsigned i = 0; i < a->n_gpus; i++) {
                normalize(&a->gpus[i]);
                normalize(&b->gpus[i]);
        }
        for (unsigned i = 0; i < a->n_gpus; i++)
                if (memcmp(&a->gpus[i], &b->gpus[i], sizeof a->gpus[i]) != 0) {
                        const unsigned char *p = (const void *)&a->gpus[i], *q = (const void *)&b->gpus[i];
                        size_t off = 0;
                        while (p[off] == q[off]) off++;
                        fail_msg("%s: GPU %u facts differ at byte %zu of %zu", what, i, off, sizeof a->gpus[i]);
                }
}

/* For every description: the loader gives what the probe gathers through the fake, and
 * to_json(from_json(to_json(probe))) == to_json(probe). */
static void test_every_testdata(void **state) {
        (void)state;
        struct nvml_lib *lib = NULL;
        _cleanup_free_ char *err = NULL;
        if (nvml_lib_open(FAKE_NVML_LIBRARY, &lib, &err) < 0) fail_msg("cannot load the fake: %s", err);
        DIR *d = opendir(NVML_TESTDATA);
        assert_non_null(d);
        struct dirent *de;
        unsigned files = 0;
        while ((de = readdir(d))) {
                size_t n = strlen(de->d_name);
                if (n < 6 || !streq(de->d_name + n - 5, ".json")) continue;
                _cleanup_free_ char *path = xasprintf("%s/%s", NVML_TESTDATA, de->d_name);
                setenv("GPUNODE_FAKE_NVML", path, 1);
                bool blocked = strstr(de->d_name, "blocked") != NULL;
                struct nvml_facts *probed = NULL;
                assert_int_equal(nvml_probe_run(lib, blocked ? 300 : 10000, &probed), 0);
                _cleanup_free_ char *j1 = NULL, *j2 = NULL, *text = NULL, *e = NULL;
                assert_int_equal(nvml_facts_to_json(probed, &j1), 0);
                struct nvml_facts *loaded = NULL, *again = NULL;
                assert_int_equal(nvml_facts_from_json(j1, strlen(j1), &again, &e), 0);
                assert_int_equal(nvml_facts_to_json(again, &j2), 0);
                if (!streq(j1, j2)) fail_msg("%s: round trip differs:\n%s\n---\n%s", de->d_name, j1, j2);
                if (!probed->timed_out) {
                        size_t len;
                        text = slurp(path, &len);
                        assert_int_equal(nvml_facts_from_json(text, len, &loaded, &e), 0);
                        assert_facts_equal(probed, loaded, de->d_name);
                        assert_facts_equal(probed, again, de->d_name);
                }
                nvml_facts_free(probed);
                nvml_facts_free(loaded);
                nvml_facts_free(again);
                files++;
        }
        closedir(d);
        assert_true(files >= 5);
        nvml_lib_unref(lib);
}

static void test_bad_input(void **state) {
        (void)state;
        static const char *const bad[] = {"", "[]", "{", "{\"gpus\": 3}", "{\"gpus\": [1]}", "nul\0", "{\"a\":1,\"a\":2}"};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                struct nvml_facts *f = NULL;
                char *err = NULL;
                assert_int_equal(nvml_facts_from_json(bad[i], strlen(bad[i]), &f, &err), -EINVAL);
                assert_non_null(err);
                assert_null(f);
                free(err);
        }
        /* An init error gives that error and nothing else, as the probe does. */
        const char *ie = "{\"init_error\": 18, \"gpus\": [{\"name\": \"x\"}]}";
        struct nvml_facts *f = NULL;
        assert_int_equal(nvml_facts_from_json(ie, strlen(ie), &f, NULL), 0);
        assert_int_equal(f->init_rc, 18);
        assert_string_equal(f->init_error, "Driver/library version mismatch");
        assert_int_equal(f->n_gpus, 0);
        assert_int_equal(f->device_count_rc, NVML_FACT_NOT_QUERIED);
        nvml_facts_free(f);
}

/* Returns a description of n GPUs, each with a name and a UUID. Free with free(). */
static char *many_gpus(size_t n) {
        struct buf b = {0};
        buf_puts(&b, "{\"driver_version\": \"580.65.06\", \"gpus\": [");
        for (size_t i = 0; i < n; i++)
                buf_printf(&b, "%s{\"name\": \"NVIDIA H200\", \"uuid\": \"GPU-%08zx-0000-0000-0000-000000000000\"}", i ? ", " : "", i);
        buf_puts(&b, "]}");
        return b.data;
}

/* More than 1024 GPUs is refused with the count; 1024 load. The refusal used to read the array after
 * releasing the document that held it (a use after free inside libjansson, where AddressSanitizer
 * does not look): the meson test nvml-json-valgrind runs this file under valgrind. */
static void test_too_many_gpus(void **state) {
        (void)state;
        for (size_t n = 1025; n <= 4096; n *= 4) {
                _cleanup_free_ char *text = many_gpus(n);
                struct nvml_facts *f = NULL;
                char *err = NULL;
                assert_int_equal(nvml_facts_from_json(text, strlen(text), &f, &err), -EINVAL);
                assert_null(f);
                _cleanup_free_ char *want = xasprintf("NVML description: %zu GPUs, more than 1024", n);
                assert_string_equal(err, want);
                free(err);
        }
        _cleanup_free_ char *text = many_gpus(1024);
        struct nvml_facts *f = NULL;
        assert_int_equal(nvml_facts_from_json(text, strlen(text), &f, NULL), 0);
        assert_int_equal(f->n_gpus, 1024);
        assert_string_equal(f->gpus[1023].uuid, "GPU-000003ff-0000-0000-0000-000000000000");
        nvml_facts_free(f);
}

/* The description a real H200 node gave (tests/fake-nvml/testdata/h200-real.json, as gpunode wrote it)
 * reads and writes back byte for byte: the key order of the contract. */
static void test_real_node_byte_identical(void **state) {
        (void)state;
        size_t len;
        _cleanup_free_ char *text = slurp(NVML_TESTDATA "/h200-real.json", &len);
        struct nvml_facts *f = NULL;
        _cleanup_free_ char *back = NULL;
        assert_int_equal(nvml_facts_from_json(text, len, &f, NULL), 0);
        assert_int_equal(f->n_gpus, 1);
        assert_int_equal(nvml_facts_to_json(f, &back), 0);
        assert_true(len > 0 && text[len - 1] == '\n');
        text[len - 1] = 0;
        assert_string_equal(back, text);
        nvml_facts_free(f);
}

/* One row of the fact list, as the test sees it. */
struct row {
        size_t offset; /* in struct nvml_gpu_facts */
        enum nvml_fact_conv conv;
        const char *member, *group, *key, *call;
};
#define GPU_ROW(m, conv, group, key, call)    { offsetof(struct nvml_gpu_facts, m), conv, #m, group, key, call },
#define HEALTH_ROW(m, conv, group, key, call) { offsetof(struct nvml_gpu_facts, health.m), conv, #m, group, key, call },
static const struct row rows[] = { NVML_GPU_FACTS(GPU_ROW, NVML_FACT_NO_HOOK)
                                           NVML_HEALTH_FACTS(HEALTH_ROW, NVML_FACT_NO_HOOK) };
#undef GPU_ROW
#undef HEALTH_ROW

/* Writes f, parses the text back with jansson and loads it again. Returns the parsed description
 * (json_decref it) and the facts loaded in *ret (nvml_facts_free them); fails the test otherwise. */
static json_t *write_and_load(const struct nvml_facts *f, struct nvml_facts **ret) {
        _cleanup_free_ char *text = NULL;
        assert_int_equal(nvml_facts_to_json(f, &text), 0);
        json_t *d = json_loads(text, 0, NULL);
        assert_non_null(d);
        assert_int_equal(nvml_facts_from_json(text, strlen(text), ret, NULL), 0);
        return d;
}

/* Every scalar row of the list, on the real H200's facts: a value is written under its group and key
 * and read back as its conversion says (an unsigned int keeps 32 bits, a flag 0 or 1); an error is
 * recorded under "errors" for its call and read back as that error. */
static void test_every_scalar_row(void **state) {
        (void)state;
        size_t len;
        _cleanup_free_ char *text = slurp(NVML_TESTDATA "/h200-real.json", &len);
        unsigned checked = 0;
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                const struct row *r = &rows[i];
                if (r->conv == NVML_FACT_OWN) continue;
                struct nvml_facts *f = NULL, *g = NULL;
                assert_int_equal(nvml_facts_from_json(text, len, &f, NULL), 0);
                struct nvml_fact_u64 *fact = (struct nvml_fact_u64 *)((char *)&f->gpus[0] + r->offset);
                uint64_t v = (UINT64_C(1) << 32) + 1000 + i, want = v;
                if (r->conv == NVML_FACT_U32 || r->conv == NVML_FACT_TEMP) want = (uint32_t)v;
                if (r->conv == NVML_FACT_FLAG || r->conv == NVML_FACT_BOOL) v = want = 1;
                fact->rc = NVML_SUCCESS;
                fact->value = v;
                json_t *d = write_and_load(f, &g);
                const json_t *o = json_array_get(json_object_get(d, "gpus"), 0);
                const json_t *at = json_object_get(r->group ? json_object_get(o, r->group) : o, r->key);
                if (r->conv == NVML_FACT_BOOL)
                        assert_true(json_is_true(at));
                else
                        assert_int_equal(json_integer_value(at), v);
                const struct nvml_fact_u64 *back = (const void *)((const char *)&g->gpus[0] + r->offset);
                if (back->rc != NVML_SUCCESS || back->value != want)
                        fail_msg("%s: read back rc %d value %" PRIu64 ", want %" PRIu64, r->member, back->rc,
                                 back->value, want);
                json_decref(d);
                nvml_facts_free(g);

                fact->rc = NVML_ERROR_UNKNOWN;
                fact->value = 0;
                d = write_and_load(f, &g);
                o = json_array_get(json_object_get(d, "gpus"), 0);
                assert_null(json_object_get(r->group ? json_object_get(o, r->group) : o, r->key));
                assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "errors"), r->call)),
                                 NVML_ERROR_UNKNOWN);
                back = (const void *)((const char *)&g->gpus[0] + r->offset);
                if (back->rc != NVML_ERROR_UNKNOWN) fail_msg("%s: error read back as %d", r->member, back->rc);
                json_decref(d);
                nvml_facts_free(g);
                nvml_facts_free(f);
                checked++;
        }
        assert_true(checked >= 25);
}

/* An 18-link GPU asked by a library built for 36 links answers NOT_SUPPORTED at link 18: the
 * description keeps the 18 links and that end, and reads back as the live walk saw it (before, it
 * wrote no "nvlinks" at all and the replay could not tell the NVLink state). */
static void test_nvlinks_not_supported_past_last_link(void **state) {
        (void)state;
        size_t len;
        _cleanup_free_ char *text = slurp(NVML_TESTDATA "/h200-real.json", &len);
        struct nvml_facts *f = NULL, *g = NULL;
        assert_int_equal(nvml_facts_from_json(text, len, &f, NULL), 0);
        struct nvml_health_facts *h = &f->gpus[0].health;
        h->n_links = 18;
        for (unsigned l = 0; l < 18; l++) {
                h->links[l].active = true;
                for (unsigned c = 0; c < NVML_LINK_COUNTERS; c++)
                        h->links[l].errors[c] = (struct nvml_fact_u64){ .rc = NVML_SUCCESS, .value = l };
        }
        h->nvlink_rc = NVML_ERROR_NOT_SUPPORTED;
        json_t *d = write_and_load(f, &g);
        const json_t *links = json_object_get(json_array_get(json_object_get(d, "gpus"), 0), "nvlinks");
        assert_int_equal(json_array_size(links), 19);
        assert_int_equal(json_integer_value(json_object_get(json_array_get(links, 18), "error")),
                         NVML_ERROR_NOT_SUPPORTED);
        const struct nvml_health_facts *back = &g->gpus[0].health;
        assert_int_equal(back->n_links, 18);
        assert_int_equal(back->nvlink_rc, NVML_ERROR_NOT_SUPPORTED);
        assert_true(back->links[17].active);
        assert_int_equal(back->links[17].errors[0].value, 17);
        json_decref(d);
        nvml_facts_free(g);

        /* NOT_SUPPORTED at link 0 is still no NVLink at all. */
        h->n_links = 0;
        d = write_and_load(f, &g);
        assert_null(json_object_get(json_array_get(json_object_get(d, "gpus"), 0), "nvlinks"));
        assert_int_equal(g->gpus[0].health.n_links, 0);
        assert_int_equal(g->gpus[0].health.nvlink_rc, NVML_ERROR_NOT_SUPPORTED);
        json_decref(d);
        nvml_facts_free(g);
        nvml_facts_free(f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_every_testdata),
                cmocka_unit_test(test_bad_input),
                cmocka_unit_test(test_too_many_gpus),
                cmocka_unit_test(test_real_node_byte_identical),
                cmocka_unit_test(test_every_scalar_row),
                cmocka_unit_test(test_nvlinks_not_supported_past_last_link),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
