/* check_gpu_temperature.c: layer 1, gpu: GPU and memory temperatures against the GPU's own thresholds. */
#include "layer1_hardware/gpu_health.h"
#include "layer1_hardware/nvml_evidence.h"

/* Returns a threshold's value, 0 when NVML did not give it. */
static unsigned threshold(const struct nvml_fact_u64 *v) {
        return v->rc == NVML_SUCCESS ? (unsigned)v->value : 0;
}

/* Judges gpu.temperature (every GPU and its memory run below their slowdown thresholds) from the facts
 * into f; never fails: what it cannot read, it says. */
static void run_temperature(const struct node_facts *facts, struct finding *f) {
        const struct nvml_facts *n = nvml_initialised(facts);
        if (!n) {
                finding_skip(f, "NVML did not initialise");
                return;
        }
        unsigned known = 0, hot = 0, near = 0, unjudged = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                const struct nvml_health_facts *h = &g->health;
                _cleanup_free_ char *label = nvml_gpu_label(g);
                if (g->temperature.rc != NVML_SUCCESS) {
                        gpu_fact_error_evidence(f, label, "temperature", g->temperature.rc);
                        continue;
                }
                known++;
                gpu_fact_error_evidence(f, label, "slowdown threshold", h->temp_slowdown.rc);
                unsigned t = (unsigned)g->temperature.value, sd = threshold(&h->temp_shutdown),
                         sl = threshold(&h->temp_slowdown), gm = threshold(&h->temp_gpu_max),
                         mm = threshold(&h->temp_mem_max);
                enum check_status s = gpu_temperature_judge(t, sd, sl, gm);
                bool mem = g->memory_temperature.rc == NVML_SUCCESS;
                unsigned mt = mem ? (unsigned)g->memory_temperature.value : 0;
                enum check_status ms = mem ? gpu_memory_temperature_judge(mt, mm) : CHECK_PASS;
                if (!sd && !sl && !gm) unjudged++;
                if (s != CHECK_PASS || ms != CHECK_PASS) {
                        char mtext[64] = "";
                        if (mem) snprintf(mtext, sizeof mtext, ", memory %u C (max operating %u C)", mt, mm);
                        finding_evidence(f, "%s: GPU %u C (slowdown %u C, shutdown %u C, max operating %u C)%s", label,
                                         t, sl, sd, gm, mtext);
                }
                if (s == CHECK_FAIL)
                        hot++;
                else if (s == CHECK_WARN || ms == CHECK_WARN)
                        near++;
        }
        if (known == 0) {
                finding_skip(f, "NVML does not report GPU temperatures here");
        } else if (hot) {
                finding_fail(f, "%u GPU(s) at or above their slowdown temperature: the hardware slows them down", hot);
                finding_remedy(
                        f,
                        "check cooling now (inlet temperature, fans, airflow, liquid loop, blanking panels); drain the "
                        "node before the GPUs reach their shutdown temperature");
        } else if (near) {
                finding_warn(
                        f, "%u GPU(s) within %u C of a slowdown threshold or above their maximum operating temperature",
                        near, GPU_TEMP_MARGIN);
                finding_remedy(
                        f,
                        "check cooling (inlet temperature, fans, airflow); `nvidia-smi -q -d TEMPERATURE` shows each "
                        "threshold");
        } else if (unjudged == known) {
                finding_skip(f, "cannot tell: %u GPU(s) report temperatures but no thresholds to judge them by", known);
        } else {
                finding_pass(f, "%u GPU(s) run below their slowdown temperatures", known);
        }
}

const struct check_def check_gpu_temperature = {
        .id = "gpu.temperature",
        .action = ACTION_CONTACT_SUPPORT,
        .layer = 1,
        .component = "gpu",
        .title = "every GPU and its memory run below their slowdown thresholds",
        .reads = "nvmlDeviceGetTemperature, NVML field 82 (memory temperature), nvmlDeviceGetTemperatureThreshold "
                 "(shutdown, "
                 "slowdown, GPU max operating, memory max operating)",
        .outcomes = "pass: below every threshold; warn: within 5 C of the slowdown threshold, above the GPU's maximum "
                    "operating "
                    "temperature, or memory within 5 C of its maximum; fail: at or above the slowdown or shutdown "
                    "threshold; skip: no "
                    "temperature, or no threshold to judge it by",
        .remedy = "cooling: inlet temperature, fans, airflow, the liquid loop; drain before the shutdown temperature",
        .depends = { "driver.nvml-init" },
        .run = run_temperature,
};
