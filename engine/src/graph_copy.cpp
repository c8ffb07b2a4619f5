#include "graph_copy.h"

#include <ggml-backend.h>

namespace captionist {

ggml_tensor * copy_into_view(ggml_context * ctx, ggml_tensor * src, ggml_tensor * dst) {
    const ggml_tensor * base = dst;
    while (base->view_src) base = base->view_src;
    if (base->buffer == nullptr || ggml_backend_buffer_is_host(base->buffer) || ggml_nelements(src) < 2) {
        return ggml_cpy(ctx, src, dst);
    }
    ggml_tensor * flat = ggml_reshape_1d(ctx, ggml_cont(ctx, src), ggml_nelements(src));
    return ggml_cpy(ctx, flat, dst);
}

} // namespace captionist
