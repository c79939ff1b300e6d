/* fuzz_fmlog.c: libFuzzer target feeding arbitrary input to the fabric manager log scanner and the dpkg status scanner, checking their invariants. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "facts/layer1_hardware.h"

/* Aborts (a finding for the fuzzer) when cond is false. */
static void check(int cond) {
        if (!cond) abort();
}

/* Checks that a kept string is terminated and printable ASCII. */
static void check_text(const char *t, size_t cap) {
        check(memchr(t, 0, cap) != NULL);
        for (const unsigned char *p = (const unsigned char *)t; *p; p++) check(*p >= 0x20 && *p < 0x7f);
}

/* Scans the input both ways; any broken invariant aborts. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct fabric_manager_facts f = { 0 };
        fm_log_scan((const char *)data, size, &f.log);
        struct fm_log_facts *l = &f.log;
        check(l->lines <= size + 1);
        check(l->n_kept <= FM_LOG_KEPT && l->n_kept <= l->errors);
        check(l->start_lineno <= l->lines && (l->starts == 0) == (l->running_version == NULL));
        uint64_t sum = 0;
        for (int k = 0; k < _FM_LOG_KIND_MAX; k++) sum += l->kind_count[k];
        check(sum == l->errors);
        for (size_t i = 0; i < l->n_kept; i++) {
                check(l->kept[i].kind < _FM_LOG_KIND_MAX && l->kept[i].lineno > l->start_lineno);
                check(l->kept[i].lineno <= l->lines);
                if (i > 0) check(l->kept[i - 1].lineno < l->kept[i].lineno);
                check_text(l->kept[i].text, sizeof l->kept[i].text);
        }
        if (l->running_version) check_text(l->running_version, strlen(l->running_version) + 1);
        if (l->mismatch_fm) check(l->kind_count[FM_LOG_VERSION_MISMATCH] > 0);

        struct dpkg_status dpkg;
        dpkg_status_parse((const char *)data, size, &dpkg);
        fm_package_find(&dpkg, &f.package);
        dpkg_status_free(&dpkg);
        struct fm_package_facts *p = &f.package;
        check((p->name == NULL) == (p->version == NULL) && (p->name == NULL) == (p->raw_version == NULL));
        if (p->name) {
                check(strncmp(p->name, "nvidia-fabricmanager", 20) == 0);
                check(strlen(p->version) <= strlen(p->raw_version));
        }
        fabric_manager_facts_free(&f);
        return 0;
}
