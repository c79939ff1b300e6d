/* image-icu-stubdata.c: ICU's "stub data" library, for the image (scripts/image-rootfs.sh).
 *
 * libarchive (snapshots) links libxml2, which links ICU; ICU's data library libicudata is 31 MB of
 * tables that gpunode never reaches (libxml2 calls ICU only to convert a character set it lacks,
 * and libarchive calls libxml2 only for the xar format; snapshots are tar.gz). This is what ICU's
 * own source/stubdata/stubdata.cpp builds: the entry point ICU looks for (icudtNN_dat) holding a
 * table of contents with no entries, so the libraries load and ICU answers U_MISSING_RESOURCE_ERROR
 * for any data it is asked for. Built with -DICU_ENTRY=icudt<major>_dat and the soname
 * libicudata.so.<major> of the ICU it stands in for. */
#include <stdint.h>

#ifndef ICU_ENTRY
#error "build with -DICU_ENTRY=icudtNN_dat (NN: ICU's major version)"
#endif

/* ICU's MappedData + UDataInfo (udata.cpp, udata.h), then the TOC (ucmndata.h). */
struct icu_stub_header {
        uint16_t header_size;
        uint8_t magic1, magic2;
        uint16_t info_size, info_reserved;
        uint8_t is_big_endian, charset_family, sizeof_uchar, reserved_byte;
        uint8_t data_format[4], format_version[4], data_version[4];
        char padding[8];
        uint32_t count, reserved;
        uint32_t toc[2];
};

/* The data ICU maps: a "ToCP" (table of contents) package with count 0. Never fails: it is data. */
__attribute__((visibility("default"))) const struct icu_stub_header ICU_ENTRY = {
        .header_size = 32,
        .magic1 = 0xda,
        .magic2 = 0x27,
        .info_size = 20,
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        .is_big_endian = 1,
#endif
        .charset_family = 0, /* U_ASCII_FAMILY */
        .sizeof_uchar = 2,
        .data_format = { 0x54, 0x6f, 0x43, 0x50 }, /* "ToCP" */
        .format_version = { 1, 0, 0, 0 },
};
