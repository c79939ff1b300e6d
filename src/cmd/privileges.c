/* privileges.c: when and how the exporter and the agent give up the privileges they started with. */
#include "cmd/privileges.h"
#include "basic/caps.h"
#include "exporter/exporter.h"

#include <linux/capability.h>

bool privileges_can_drop(struct exporter *e, const struct timespec *started, const struct timespec *now,
                         unsigned sample_timeout_ms) {
        struct exp_page *p = exporter_page(e);
        bool tried = p->have_sample || p->nvml_up;
        exp_page_unref(p);
        return tried || exp_seconds_between(started, now) * 1000.0 >= sample_timeout_ms;
}

void privileges_drop(const char *who, bool keep_syslog) {
        uint64_t keep = keep_syslog ? CAP_BIT(CAP_SYSLOG) : 0;
        unsigned pending = 0;
        int r = caps_restrict_process(keep, 2000, &pending);
        if (r == -ETIMEDOUT)
                fprintf(stderr, "gpunode %s: %u thread(s) busy in a call keep their capabilities until it returns\n", who,
                        pending);
        else if (r < 0)
                fprintf(stderr, "gpunode %s: cannot drop capabilities: %s\n", who, strerror(-r));
        else
                fprintf(stderr, "gpunode %s: capabilities dropped (kept: %s), no_new_privs set\n", who,
                        keep_syslog ? "cap_syslog, for the diagnosis's /dev/kmsg" : "none");
}
