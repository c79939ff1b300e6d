/* podresources_pb.c: protoc-c's code for podresources.proto, compiled so that libprotobuf-c is loaded with dlopen. */
/*
 * protoc-c's code calls five libprotobuf-c functions (pack, unpack, free and their helpers):
 * dl_protobuf_c.h turns each call into one through the dlopen table. Its descriptors also take
 * the address of libprotobuf-c's protobuf_c_empty_string, a data symbol only a link against the
 * library could resolve; libprotobuf-c itself only ever compares a string with the default its
 * field's descriptor points at, never with its own copy, so an empty string of gpunode's serves.
 * Built through this file (never on its own) so that both hold.
 */
#include "basic/dl_protobuf_c.h"

extern const char gpunode_protobuf_c_empty_string[];
#define protobuf_c_empty_string gpunode_protobuf_c_empty_string

#include "podresources.pb-c.c"

const char gpunode_protobuf_c_empty_string[] = "";
