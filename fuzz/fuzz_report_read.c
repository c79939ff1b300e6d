/* fuzz_report_read.c: libFuzzer target for the one reader of gpunode.report/v1 (report_read.c) and what the agent
 * hands its result to: the node conditions and the status page. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "agent/conditions.h"
#include "agent/status_page.h"
#include "output/output.h"
#include "output/report_read.h"

/* Returns 0 always: libFuzzer's contract; crashes and sanitizer reports are the findings. The input is a report's
 * text as an agent's diagnosis child writes it; a report it accepts is written back as JSON, turned into the four
 * conditions and rendered as the status page, whose HTML must be valid UTF-8. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct report r;
        char *err = NULL;
        if (report_from_text((const char *)data, size, &r, &err) < 0) {
                if (!err) abort();
                free(err);
                return 0;
        }
        json_t *again = report_to_json(&r);
        if (!again) abort();
        json_decref(again);
        struct agent_condition c[AGENT_N_LAYERS];
        if (agent_conditions_from_report(&r, c) < 0) abort();
        char *html = status_page_html(&r, NULL);
        if (utf8_valid_prefix(html, strlen(html)) != strlen(html)) abort();
        free(html);
        report_read_free(&r);
        return 0;
}
