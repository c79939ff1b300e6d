/* check_gpu_clocks.c: layer 1, gpu: clock slowdowns (clock event reasons, violation times). */
#include "layer1_hardware/gpu_health.h"
#include "layer1_hardware/nvml_evidence.h"

/* Judges gpu.clock-slowdown (no hardware or thermal slowdown holds a GPU's clocks down) from the facts
 * into f; never fails: what it cannot read, it says. */
static void run_clock_slowdown(const struct node_facts *facts, struct finding *f) {
        const struct nvml_facts *n = nvml_initialised(facts);
        if (!n) {
                finding_skip(f, "NVML did not initialise");
                return;
        }
        unsigned known = 0, sustained = 0, transient = 0, thermal = 0, capped = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                const struct nvml_health_facts *h = &g->health;
                if (g->clocks_event_reasons.rc != NVML_SUCCESS) {
                        _cleanup_free_ char *label = nvml_gpu_label(g);
                        gpu_fact_error_evidence(f, label, "clock event reasons", g->clocks_event_reasons.rc);
                        continue;
                }
                known++;
                uint64_t r1 = g->clocks_event_reasons.value;
                bool again = h->clocks_event_reasons_again.rc == NVML_SUCCESS;
                uint64_t r2 = again ? h->clocks_event_reasons_again.value : 0;
                enum check_status s = gpu_slowdown_judge(r1, again, r2);
                uint64_t all = r1 | r2;
                _cleanup_free_ char *label = nvml_gpu_label(g);
                char t1[160], t2[160];
                if (all & ~(GPU_REASON_IDLE)) {
                        if (again && r2 != r1)
                                finding_evidence(f, "%s: clock event reasons 0x%llx (%s), then 0x%llx (%s)", label,
                                                 (unsigned long long)r1, gpu_clock_reasons_text(r1, t1, sizeof t1),
                                                 (unsigned long long)r2, gpu_clock_reasons_text(r2, t2, sizeof t2));
                        else
                                finding_evidence(f, "%s: clock event reasons 0x%llx (%s)%s", label,
                                                 (unsigned long long)r1, gpu_clock_reasons_text(r1, t1, sizeof t1),
                                                 again ? " in both readings" : "");
                }
                if (s == CHECK_FAIL)
                        sustained++;
                else if (s == CHECK_WARN && (all & GPU_REASONS_HW))
                        transient++;
                else if (s == CHECK_WARN)
                        thermal++;
                if (all & GPU_REASON_SW_POWER_CAP) capped++;
                /* cumulative since the driver loaded: evidence, not a verdict (it may be old) */
                if ((h->violation_power_ns.rc == NVML_SUCCESS && h->violation_power_ns.value) ||
                    (h->violation_thermal_ns.rc == NVML_SUCCESS && h->violation_thermal_ns.value))
                        finding_evidence(
                                f,
                                "%s: held below application clocks since the driver loaded: %.1f s by power, %.1f s by "
                                "temperature (nvmlDeviceGetViolationStatus)",
                                label, h->violation_power_ns.value / 1e9, h->violation_thermal_ns.value / 1e9);
        }
        if (known == 0) {
                finding_skip(f, "NVML does not report clock event reasons here");
        } else if (sustained) {
                finding_fail(f, "hardware slowdown holds the clocks of %u GPU(s) down (set in both readings)",
                             sustained);
                finding_remedy(
                        f,
                        "HW slowdown halves the clocks or worse: check cooling (inlet temperature, fans, airflow, "
                        "liquid "
                        "loop), the power supply (HW power brake: PSU/PDU alarms in the BMC log) and `nvidia-smi -q -d "
                        "PERFORMANCE`; drain the node meanwhile. A GPU that keeps slowing down at normal temperatures "
                        "is an "
                        "RMA candidate");
        } else if (transient || thermal) {
                finding_warn(f,
                             "%u GPU(s) slowed down: %u by a hardware slowdown in one reading, %u by software thermal "
                             "slowdown",
                             transient + thermal, transient, thermal);
                finding_remedy(f, "watch the clock event reasons (`nvidia-smi -q -d PERFORMANCE`, "
                                  "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS): "
                                  "a slowdown that stays is a cooling or power fault; software thermal slowdown means "
                                  "the GPU or its "
                                  "memory is above its maximum operating temperature");
        } else if (capped) {
                finding_pass(f, "no clock slowdown on %u GPU(s); %u at their power cap (as configured, not a fault)",
                             known, capped);
        } else {
                finding_pass(f, "no clock slowdown on %u GPU(s)", known);
        }
}

const struct check_def check_gpu_clock_slowdown = {
        .id = "gpu.clock-slowdown",
        .action = ACTION_CONTACT_SUPPORT,
        .layer = 1,
        .component = "gpu",
        .title = "no hardware or thermal slowdown holds a GPU's clocks down",
        .reads = "nvmlDeviceGetCurrentClocksEventReasons (twice per GPU, around the other health queries), "
                 "nvmlDeviceGetViolationStatus (power, thermal)",
        .outcomes =
                "pass: no slowdown, or only a power cap (the GPU runs at its configured limit); warn: software thermal "
                "slowdown, or a hardware slowdown in one of the two readings; fail: HW slowdown, HW thermal or HW "
                "power "
                "brake slowdown in both readings (sustained). Violation times since the driver loaded are evidence",
        .remedy = "cooling (inlet air, fans, liquid loop) and power supply (power brake) first; `nvidia-smi -q -d "
                  "PERFORMANCE`",
        .depends = { "driver.nvml-init" },
        .run = run_clock_slowdown,
};
