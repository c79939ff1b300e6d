/* m_base.c: the baseline for measure.sh, a process that only starts and exits. */
#include <dlfcn.h>
#include <stdio.h>
int main(void) { printf("%p\n", (void *)dlopen); return 0; }
