/* fuzz_daemon_json.c: libFuzzer target for Docker's daemon.json parser. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "facts/node.h"
#include "facts/layer2_container.h"

/* Returns 0 always: libFuzzer's contract; crashes and sanitizer reports are the findings. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 1 << 20) return 0;
        struct docker_facts d = {0};
        char *err = NULL;
        int r = docker_parse_daemon_json((const char *)data, size, &d, &err);
        if ((r < 0) != (err != NULL)) abort();
        free(err);
        docker_facts_free(&d);
        return 0;
}
