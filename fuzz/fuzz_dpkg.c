/* fuzz_dpkg.c: libFuzzer target feeding arbitrary input to dpkg's status file parser, checking its invariants. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/dpkg.h"

/* Aborts (a finding for the fuzzer) when cond is false. */
static void check(int cond) {
        if (!cond) abort();
}

/* Parses the input as a status file; any broken invariant aborts. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct dpkg_status s;
        dpkg_status_parse((const char *)data, size, &s);
        check(s.rc == 0);
        check(s.n_packages <= size / 9 + 1); /* "Package:x" at the least */
        size_t total = 0;
        for (size_t i = 0; i < s.n_packages; i++) {
                const struct dpkg_package *p = &s.packages[i];
                check(p->name && *p->name && !strchr(p->name, '\n'));
                check(p->name[0] != ' ' && p->name[strlen(p->name) - 1] != ' ');
                total += strlen(p->name);
                if (p->version) {
                        check(!strchr(p->version, '\n'));
                        total += strlen(p->version);
                }
                const struct dpkg_package *q = dpkg_status_installed(&s, p->name);
                if (q) check(q->installed && q->version && *q->version && strcmp(q->name, p->name) == 0);
                if (p->installed && p->version && *p->version) check(q && q <= p); /* the first one installed */
        }
        check(total <= size);
        dpkg_status_free(&s);
        check(s.n_packages == 0 && !s.packages);
        return 0;
}
