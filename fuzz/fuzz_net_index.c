/* fuzz_net_index.c: libFuzzer target for api/INDEX.json's parser (hostile snapshots): bytes in, a log or a clear refusal out; a log written back parses again. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/net_replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct net_log *log = NULL;
        char *err = NULL;
        int r = net_log_from_index((const char *)data, size, &log, &err);
        if (r < 0) {
                if (!err || log || strncmp(err, "api/INDEX.json: ", 16) != 0) abort();
                free(err);
                return 0;
        }
        /* what was accepted is only names below api/ and known classes: it must round-trip */
        for (size_t i = 0; i < log->n; i++) {
                const char *m = log->v[i].member;
                if (m && (strncmp(m, "api/", 4) != 0 || strstr(m, "..") || strchr(m + 4, '/'))) abort();
                if (log->v[i].rc > 0 || (log->v[i].rc == 0 && !m)) abort();
        }
        char *text = NULL;
        if (net_log_to_index(log, &text) < 0) abort();
        struct net_log *again = NULL;
        if (net_log_from_index(text, strlen(text), &again, &err) < 0 || again->n != log->n) abort();
        for (size_t i = 0; i < log->n; i++)
                if (again->v[i].rc != log->v[i].rc || strcmp(again->v[i].request, log->v[i].request) != 0) abort();
        net_log_free(again);
        net_log_free(log);
        free(text);
        return 0;
}
