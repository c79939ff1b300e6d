/* fuzz_cluster_objects.c: libFuzzer target for gpunode cluster's object parsers, its checks and renderers, and the
 * agent report reader. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cluster/cluster.h"
#include "output/report_read.h"

/* Returns 0 always: libFuzzer's contract; crashes and sanitizer reports are the findings. The input is
 * JSON: a document whose "items" (or the document itself) is fed to every list as the API would answer
 * it, the report of that cluster rendered both ways; and the document read as an agent's report. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        json_t *doc = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
        if (!doc) return 0;
        struct cluster_facts f = { .now = 1796126400, .stale_after_s = 900 };
        const json_t *items = json_object_get(doc, "items");
        for (int l = 0; l < CL_LIST_COUNT; l++) {
                if (json_is_array(items)) {
                        size_t i;
                        const json_t *it;
                        json_array_foreach(items, i, it)(void) cluster_facts_add(&f, (enum cl_list)l, it);
                } else
                        (void)cluster_facts_add(&f, (enum cl_list)l, doc);
                if (l == CL_LIST_NODES) cluster_facts_finish(&f);
        }
        struct cluster_report r;
        cluster_report_build(&f, &r);
        FILE *null = fopen("/dev/null", "w");
        if (null) {
                struct cl_text_options to = { .all_nodes = true, .verbose = true };
                if (cluster_render_text(null, &r, &to) < 0 || cluster_render_json(null, &r) < 0) abort();
                fclose(null);
        }
        cluster_report_free(&r);
        cluster_facts_free(&f);
        struct report rep;
        char *err = NULL;
        if (report_from_json(doc, &rep, &err) == 0) report_read_free(&rep);
        free(err);
        json_decref(doc);
        return 0;
}
