/* probe_nvml_replay.c: NVML facts recorded on a node (a snapshot), handed to the checks as if NVML had answered. */
#include "facts/node.h"
#include "nvml/nvml_facts.h"

/* Returns a deep copy of f (NULL for NULL). Never fails (allocation failure aborts). */
static struct nvml_facts *nvml_facts_copy(const struct nvml_facts *f) {
        if (!f) return NULL;
        struct nvml_facts *c = xmalloc(sizeof *c);
        *c = *f;
        c->library_path = f->library_path ? xstrdup(f->library_path) : NULL;
        c->gpus = NULL;
        if (f->n_gpus > 0) {
                c->gpus = xcalloc(f->n_gpus, sizeof *c->gpus);
                memcpy(c->gpus, f->gpus, f->n_gpus * sizeof *c->gpus);
        }
        return c;
}

void probe_nvml_replay(const char *library, const struct nvml_facts *facts, int load_rc, const char *load_error,
                       struct nvml_state *ret) {
        *ret = (struct nvml_state){ .library = xstrdup(library ? library : "libnvidia-ml.so.1") };
        if (facts) {
                ret->facts = nvml_facts_copy(facts);
                return;
        }
        ret->load_rc = load_rc < 0 ? load_rc : -ENOENT;
        ret->load_error =
                xstrdup(load_error ? load_error : "NVML did not load on the node (no NVML answers in the snapshot)");
}
