/* prometheus.c: the diagnosis as Prometheus text: a series per check, per layer, the verdict. */
#include "output/output.h"

int output_prometheus(FILE *out, const struct report *r) {
        fputs("# HELP gpunode_check gpunode check result: 1 for the status the check has (pass, warn, fail, skip, "
              "blocked).\n"
              "# TYPE gpunode_check gauge\n",
              out);
        for (size_t i = 0; i < r->n_findings; i++) {
                const struct finding *f = &r->findings[i];
                fprintf(out, "gpunode_check{check=\"%s\",layer=\"%d\",component=\"%s\",status=\"%s\"} 1\n", f->def->id,
                        f->def->layer, f->def->component, check_status_name(f->status));
        }
        fputs("# HELP gpunode_layer_healthy 1 when no check of the layer failed, warned or was blocked.\n"
              "# TYPE gpunode_layer_healthy gauge\n",
              out);
        for (int layer = LAYER_MIN; layer <= LAYER_MAX; layer++) {
                enum check_status s = report_layer_status(r, layer);
                fprintf(out, "gpunode_layer_healthy{layer=\"%d\",name=\"%s\"} %d\n", layer, layer_name(layer),
                        s == CHECK_PASS || s == CHECK_SKIP);
        }
        fputs("# HELP gpunode_verdict The node's verdict: 1 for the one in force (healthy, degraded, failed).\n"
              "# TYPE gpunode_verdict gauge\n",
              out);
        for (enum verdict v = VERDICT_HEALTHY; v <= VERDICT_FAILED; v++)
                fprintf(out, "gpunode_verdict{verdict=\"%s\"} %d\n", verdict_name(v), r->verdict == v);
        fputs("# HELP gpunode_root_cause_layer The layer of the root cause, 0 when there is none.\n"
              "# TYPE gpunode_root_cause_layer gauge\n",
              out);
        fprintf(out, "gpunode_root_cause_layer %d\n", r->root_cause ? r->root_cause->def->layer : 0);
        return ferror(out) ? -EIO : 0;
}
