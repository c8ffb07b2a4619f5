#include "graph_attention.h"

#include "kv_ring.h"

#include <cmath>

namespace captionist {

ggml_tensor * build_ring_attention(ggml_context * ctx, ggml_cgraph * gf, const kv_ring & ring, int il,
                                   ggml_tensor * q, ggml_tensor * k, ggml_tensor * v, ggml_tensor * mask,
                                   int64_t pos0) {
    const int64_t head_dim = q->ne[0], n_head = q->ne[1], n = q->ne[2];
    ggml_tensor * k2 = ggml_reshape_2d(ctx, k, k->ne[0] * k->ne[1], n);
    ring.store(ctx, gf, il, k2, v, pos0);

    ggml_tensor * keys = ring.keys(ctx, il);     // [head_dim, n_kv, n_head_kv]
    ggml_tensor * values = ring.values(ctx, il); // [n_kv, head_dim, n_head_kv]
    ggml_tensor * qp = ggml_permute(ctx, q, 0, 2, 1, 3); // [head_dim, n, n_head]
    ggml_tensor * kq = ggml_mul_mat(ctx, keys, qp);      // [n_kv, n, n_head]
    ggml_mul_mat_set_prec(kq, GGML_PREC_F32);
    kq = ggml_soft_max_ext(ctx, kq, mask, 1.0f / std::sqrt((float) head_dim), 0.0f);
    ggml_tensor * kqv = ggml_mul_mat(ctx, values, kq);    // [head_dim, n, n_head]
    kqv = ggml_permute(ctx, kqv, 0, 2, 1, 3);             // [head_dim, n_head, n]
    return ggml_cont_2d(ctx, kqv, head_dim * n_head, n);
}

ggml_tensor * build_rope_neox(ggml_context * ctx, ggml_tensor * x, ggml_tensor * pos, int head_dim, float theta) {
    return ggml_rope_ext(ctx, x, pos, nullptr, head_dim, GGML_ROPE_TYPE_NEOX, 0, theta, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
}

ggml_tensor * build_rms_norm(ggml_context * ctx, ggml_tensor * x, ggml_tensor * weight, float eps) {
    return ggml_mul(ctx, ggml_rms_norm(ctx, x, eps), weight);
}

} // namespace captionist
