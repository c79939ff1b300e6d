/* render_page.c: test harness: renders a report JSON file (an expected.json's "exit N" line dropped) as the status page on stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/status_page.h"
#include "output/report_read.h"
#include "basic/util.h"

/* Returns the malloc'd contents of path with a trailing "exit N" line (tests/scenarios' expected.json
 * files end so) cut off, or NULL with errno set when it cannot be read. */
static char *read_report(const char *path) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f) return NULL;
        struct buf b = {};
        char chunk[65536];
        size_t n;
        buf_append(&b, "", 0);
        while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) buf_append(&b, chunk, n);
        if (ferror(f)) {
                buf_free(&b);
                errno = EIO;
                return NULL;
        }
        char *last = strrchr(b.data, '\n');
        while (last && last > b.data && last[1] == '\0') { /* skip trailing newlines */
                *last = '\0';
                last = strrchr(b.data, '\n');
        }
        if (last && startswith(last + 1, "exit ")) *last = '\0';
        return b.data;
}

/* usage: render_page [REPORT.json|-none] [NODE]: writes the page to stdout; "-none" renders the page
 * for "no report yet". Exits 0, or 1 when the file cannot be read, is
 * not a gpunode.report/v1 document, or stdout not written. */
int main(int argc, char **argv) {
        if (argc < 2 || argc > 3) {
                fprintf(stderr, "usage: %s REPORT.json|-none [NODE]\n", argv[0]);
                return 2;
        }
        _cleanup_free_ char *report = NULL;
        if (!streq(argv[1], "-none") && !(report = read_report(argv[1]))) {
                fprintf(stderr, "%s: %s: %m\n", argv[0], argv[1]);
                return 1;
        }
        uint64_t start = monotonic_ms();
        /* as the agent does: read once by the one reader, then rendered */
        struct report parsed;
        _cleanup_free_ char *err = NULL;
        if (report && report_from_text(report, strlen(report), &parsed, &err) < 0) {
                fprintf(stderr, "%s: %s: %s\n", argv[0], argv[1], err);
                return 1;
        }
        _cleanup_free_ char *html = status_page_html(report ? &parsed : NULL, argc > 2 ? argv[2] : NULL);
        if (report) report_read_free(&parsed);
        uint64_t took = monotonic_ms() - start;
        if (getenv("RENDER_PAGE_TIMING")) fprintf(stderr, "rendered %zu bytes in %llu ms\n", strlen(html),
                                                  (unsigned long long)took);
        if (fputs(html, stdout) < 0 || fflush(stdout) != 0) {
                fprintf(stderr, "%s: writing stdout: %m\n", argv[0]);
                return 1;
        }
        return 0;
}
