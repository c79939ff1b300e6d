/* m_grpc.c: libgrpc (the C core), one unary List call on a unix socket. */
#include <stdio.h>
#include <string.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/byte_buffer.h>
int main(int argc, char **argv) {
        grpc_init();
        char target[512]; snprintf(target, sizeof target, "unix:%s", argv[1]);
        grpc_channel_credentials *cr = grpc_insecure_credentials_create();
        grpc_channel *ch = grpc_channel_create(target, cr, NULL);
        grpc_completion_queue *cq = grpc_completion_queue_create_for_next(NULL);
        gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_seconds(5, GPR_TIMESPAN));
        grpc_slice method = grpc_slice_from_static_string("/v1.PodResourcesLister/List");
        grpc_call *call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq, method, NULL, deadline, NULL);
        grpc_metadata_array imd, tmd; grpc_metadata_array_init(&imd); grpc_metadata_array_init(&tmd);
        grpc_byte_buffer *req = grpc_raw_byte_buffer_create(NULL, 0), *resp = NULL;
        grpc_status_code status; grpc_slice details;
        grpc_op ops[6]; memset(ops, 0, sizeof ops);
        ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[1].op = GRPC_OP_SEND_MESSAGE; ops[1].data.send_message.send_message = req;
        ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
        ops[3].op = GRPC_OP_RECV_INITIAL_METADATA; ops[3].data.recv_initial_metadata.recv_initial_metadata = &imd;
        ops[4].op = GRPC_OP_RECV_MESSAGE; ops[4].data.recv_message.recv_message = &resp;
        ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT; ops[5].data.recv_status_on_client.trailing_metadata = &tmd;
        ops[5].data.recv_status_on_client.status = &status; ops[5].data.recv_status_on_client.status_details = &details;
        grpc_call_start_batch(call, ops, 6, (void *)1, NULL);
        grpc_event ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        printf("event %d status %d, %zu bytes\n", ev.type, status, resp ? grpc_byte_buffer_length(resp) : 0);
        if (resp) grpc_byte_buffer_destroy(resp);
        grpc_byte_buffer_destroy(req); grpc_slice_unref(details);
        grpc_metadata_array_destroy(&imd); grpc_metadata_array_destroy(&tmd);
        grpc_call_unref(call); grpc_channel_destroy(ch); grpc_channel_credentials_release(cr);
        grpc_completion_queue_shutdown(cq);
        while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type != GRPC_QUEUE_SHUTDOWN) {}
        grpc_completion_queue_destroy(cq);
        grpc_shutdown();
        return status == 0 ? 0 : 1;
}
