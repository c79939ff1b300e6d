/* fuzz_kfmt.c: libFuzzer target for the /proc and sysfs format parsers (kfmt.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/hostfs.h"
#include "basic/kfmt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = malloc(size + 1);
        if (!s) return 0;
        memcpy(s, data, size);
        s[size] = 0;
        char *text = NULL;
        (void)kfmt_numbered_state(s, &text);
        free(text);
        bool open;
        free(kfmt_driver_version(s, &open));
        free(kfmt_info_value(s, "Model"));
        free(kfmt_info_value(s, "Device Minor"));
        free(kfmt_lockdown(s));
        (void)kfmt_efivar_bool((const char *)data, size);
        char **mods;
        kfmt_proc_modules(s, &mods);
        strv_free(mods);
        free(s);
        return 0;
}
