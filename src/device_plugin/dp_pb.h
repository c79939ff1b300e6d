/* dp_pb.h: protoc-c's declarations for deviceplugin.proto, INIT macros naming gpunode's empty string. */
#pragma once

#include "basic/dl_protobuf_c.h"

/* The messages' INIT macros name libprotobuf-c's data symbol protobuf_c_empty_string, which only a
 * link against the library resolves; gpunode loads it with dlopen, so they name gpunode's own
 * (defined in kube/podresources_pb.c), as protoc-c's code compiled in deviceplugin_pb.c does. */
extern const char gpunode_protobuf_c_empty_string[];
#define protobuf_c_empty_string gpunode_protobuf_c_empty_string

#include "deviceplugin.pb-c.h"
