/* deviceplugin_pb.c: protoc-c's code for deviceplugin.proto, built for a libprotobuf-c loaded with dlopen. */
#include "basic/dl_protobuf_c.h"

/* Defined once, in kube/podresources_pb.c. */
extern const char gpunode_protobuf_c_empty_string[];
#define protobuf_c_empty_string gpunode_protobuf_c_empty_string

#include "deviceplugin.pb-c.c"
