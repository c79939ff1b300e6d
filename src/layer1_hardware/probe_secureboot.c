/* probe_secureboot.c: Secure Boot, kernel lockdown and kernel headers for driver builds. */
#include "facts/node.h"
#include "basic/hostfs.h"
#include "basic/kfmt.h"

#define SECUREBOOT_VAR "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
#define LOCKDOWN_FILE  "/sys/kernel/security/lockdown"

void probe_secureboot(struct secureboot_facts *ret) {
        *ret = (struct secureboot_facts){ .secure_boot = -1, .headers_rc = -ENOENT };
        _cleanup_free_ char *var = NULL;
        size_t len = 0;
        /* An efivar is 4 attribute bytes followed by the data: one byte, 1 = enabled. */
        ret->efi_rc = hostfs_read(SECUREBOOT_VAR, 4096, &var, &len);
        if (ret->efi_rc == 0) ret->secure_boot = kfmt_efivar_bool(var, len) < 0 ? -1 : kfmt_efivar_bool(var, len);

        _cleanup_free_ char *lockdown = NULL;
        if (hostfs_read_line(LOCKDOWN_FILE, &lockdown) == 0) ret->lockdown = kfmt_lockdown(lockdown);

        if (hostfs_read_line("/proc/sys/kernel/osrelease", &ret->kernel_release) == 0 && *ret->kernel_release &&
            !strchr(ret->kernel_release, '/')) {
                _cleanup_free_ char *build = xasprintf("/lib/modules/%s/build", ret->kernel_release);
                struct stat st;
                ret->headers_rc = hostfs_stat(build, &st);
                if (ret->headers_rc == 0 && !S_ISDIR(st.st_mode)) ret->headers_rc = -ENOTDIR;
        }
}

void secureboot_facts_free(struct secureboot_facts *f) {
        free(f->lockdown);
        free(f->kernel_release);
        *f = (struct secureboot_facts){ 0 };
}
