/* diagnosis_series.c: the exporter's sink of the daemon's diagnosis loop: the report's series on the page. */
#include "exporter/exporter_internal.h"
#include "daemon/diagnosis.h"
#include "output/output.h"

_Static_assert((int)DIAGNOSIS_OK == (int)EXP_CHECK_OK && (int)DIAGNOSIS_TIMEOUT == (int)EXP_CHECK_TIMEOUT &&
                       (int)DIAGNOSIS_FAILED == (int)EXP_CHECK_FAILED &&
                       (int)DIAGNOSIS_INVALID == (int)EXP_CHECK_INVALID && (int)DIAGNOSIS_BUSY == (int)EXP_CHECK_BUSY &&
                       (int)DIAGNOSIS_N_RESULTS == (int)EXP_CHECK_N_RESULTS,
               "the diagnosis results and the exporter's check results are one list");

/* Renders the report's series (as `gpunode check --output prometheus` writes them). Returns them
 * malloc'd, or NULL when the memory stream fails. */
static char *report_series(const struct report *r) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f) return NULL;
        int k = output_prometheus(f, r);
        if (fclose(f) != 0 || k < 0) {
                free(text);
                return NULL;
        }
        return text;
}

/* One run of the diagnosis: its series (when it succeeded) and its outcome onto the page. Returns nothing. */
static void on_round(void *userdata, const struct diagnosis_round *round) {
        struct exporter *e = userdata;
        char *series = round->result == DIAGNOSIS_OK ? report_series(round->report) : NULL;
        enum exp_check_result result =
                round->result == DIAGNOSIS_OK && !series ? EXP_CHECK_FAILED : (enum exp_check_result)round->result;
        pthread_mutex_lock(&e->publish_lock);
        struct exp_check_status *cs = &e->check_status;
        cs->last = result;
        cs->runs_total[result]++;
        if (result != EXP_CHECK_BUSY) cs->duration_seconds = round->duration_seconds;
        if (series) {
                free(e->check_series);
                e->check_series = series;
        }
        /* The last good diagnosis (its age says how old) and how the latest run went. */
        struct buf b = { 0 };
        if (e->check_series) buf_puts(&b, e->check_series);
        exp_render_check_status(&b, cs);
        free(e->check_text);
        e->check_text = b.data;
        pthread_mutex_unlock(&e->publish_lock);
        if (series) {
                pthread_mutex_lock(&e->lock);
                e->have_check = true;
                e->check_time = now_mono();
                pthread_mutex_unlock(&e->lock);
        }
        exporter_publish(e);
}

void exporter_diagnosis_sink(struct exporter *e, struct diagnosis_sink *ret) {
        *ret = (struct diagnosis_sink){ .on_round = on_round, .userdata = e };
}
