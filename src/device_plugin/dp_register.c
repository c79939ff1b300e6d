/* dp_register.c: the Register call to the kubelet: a RegisterRequest packed by protoc-c, sent with grpc_unary. */
#include "device_plugin/dp_register.h"
#include "basic/util.h"
#include "grpc/grpc_client.h"

#include "device_plugin/dp_pb.h"

int dp_register(const char *kubelet_socket, const char *resource_name, const char *endpoint, unsigned timeout_ms,
                char **ret_error) {
        int r = dl_protobuf_c_open(ret_error);
        if (r < 0) return r;
        V1beta1__DevicePluginOptions opts = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
        opts.get_preferred_allocation_available = true;
        V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;
        req.version = (char *)DP_API_VERSION;
        req.endpoint = (char *)endpoint;
        req.resource_name = (char *)resource_name;
        req.options = &opts;
        size_t n = protobuf_c_message_get_packed_size(&req.base);
        _cleanup_free_ uint8_t *buf = xmalloc(n ? n : 1);
        protobuf_c_message_pack(&req.base, buf);
        _cleanup_(grpc_channel_freep) struct grpc_channel *ch =
                grpc_channel_new(kubelet_socket, "the kubelet's registration socket", 1 << 20);
        _cleanup_free_ uint8_t *answer = NULL;
        size_t alen = 0;
        /* The answer is Empty: its bytes are not looked at. */
        return grpc_unary(ch, "/v1beta1.Registration/Register", buf, n, timeout_ms, &answer, &alen, NULL, ret_error);
}
