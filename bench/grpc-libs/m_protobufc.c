/* m_protobufc.c: libprotobuf-c (linked: its generated descriptors need it at link time), one unpack of a List answer. */
#include <stdio.h>
#include <stdlib.h>
#include "podresources.pb-c.h"
int main(int argc, char **argv) {
        static uint8_t buf[1 << 20];
        FILE *f = fopen(argv[1], "rb"); size_t n = fread(buf, 1, sizeof buf, f); fclose(f);
        V1__ListPodResourcesResponse *r = v1__list_pod_resources_response__unpack(NULL, n, buf);
        if (!r) return 1;
        printf("%zu pods\n", r->n_pod_resources);
        v1__list_pod_resources_response__free_unpacked(r, NULL);
        return 0;
}
