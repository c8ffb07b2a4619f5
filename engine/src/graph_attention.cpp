#include "graph_attention.h"

#include "column_products.h"
#include "kv_ring.h"

#include "env_flag.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace captionist {

ggml_tensor * build_ring_attention(ggml_context * ctx, ggml_cgraph * gf, const kv_ring & ring, int il,
                                   ggml_tensor * q, ggml_tensor * k, ggml_tensor * v, ggml_tensor * mask,
                                   int64_t pos0, std::vector<ggml_tensor *> * writes, bool from_row_copy,
                                   const column_kernel_set * kernels) {
    const int64_t head_dim = q->ne[0], n_head = q->ne[1], n = q->ne[2];
    const int n_kv = (int) mask->ne[0];
    ggml_tensor * k2 = ggml_reshape_2d(ctx, k, k->ne[0] * k->ne[1], n);
    ring.store(ctx, gf, il, k2, v, pos0, writes);

    ggml_tensor * keys = ring.keys(ctx, il, n_kv);     // [head_dim, n_kv, n_head_kv]
    const bool flash = ring.value_rows() || from_row_copy;
    ggml_tensor * values = from_row_copy ? ring.value_rows_copy(ctx, il, n_kv) : ring.values(ctx, il, n_kv);
    ggml_tensor * qp = ggml_permute(ctx, q, 0, 2, 1, 3); // [head_dim, n, n_head]
    const float scale = 1.0f / std::sqrt((float) head_dim);
    if (flash) { // flash attention: one fused kernel, result already [head_dim, n_head, n]
        ggml_tensor * fa = ggml_flash_attn_ext(ctx, qp, keys, values, mask, scale, 0.0f, 0.0f);
        ggml_flash_attn_ext_set_prec(fa, GGML_PREC_F32);
        return ggml_reshape_2d(ctx, fa, head_dim * n_head, n);
    }
    ggml_tensor * kq = build_weight_product(ctx, kernels, keys, qp); // [n_kv, n, n_head]
    if (kq->op == GGML_OP_MUL_MAT) ggml_mul_mat_set_prec(kq, GGML_PREC_F32);
    kq = ggml_soft_max_ext(ctx, kq, mask, scale, 0.0f);
    ggml_tensor * kqv = build_weight_product(ctx, kernels, values, kq); // [head_dim, n, n_head]
    kqv = ggml_permute(ctx, kqv, 0, 2, 1, 3);             // [head_dim, n_head, n]
    return ggml_cont_2d(ctx, kqv, head_dim * n_head, n);
}

namespace {

bool flash_supported(ggml_backend_dev_t dev, int head_dim, int n_head, int n_head_kv, ggml_type kv_type) {
    ggml_init_params p = {ggml_tensor_overhead() * 8, nullptr, /*no_alloc =*/true};
    ggml_context * ctx = ggml_init(p);
    if (!ctx) return false;
    const int64_t n_kv = 256;
    ggml_tensor * q = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, head_dim, 1, n_head);
    ggml_tensor * k = ggml_new_tensor_3d(ctx, kv_type, head_dim, n_kv, n_head_kv);
    ggml_tensor * v = ggml_new_tensor_3d(ctx, kv_type, head_dim, n_kv, n_head_kv);
    ggml_tensor * mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, n_kv, 1);
    ggml_tensor * fa = ggml_flash_attn_ext(ctx, q, k, v, mask, 1.0f, 0.0f, 0.0f);
    ggml_flash_attn_ext_set_prec(fa, GGML_PREC_F32);
    const bool ok = ggml_backend_dev_supports_op(dev, fa);
    ggml_free(ctx);
    return ok;
}

} // namespace

attention_choice choose_attention(ggml_backend_dev_t dev, int head_dim, int n_head, int n_head_kv, ggml_type preferred) {
    attention_choice c;
    c.kv_type = preferred;
    if (const char * e = std::getenv("CAPTIONIST_KV_TYPE"); e && *e) {
        if (std::strcmp(e, "f16") == 0) c.kv_type = GGML_TYPE_F16;
        else if (std::strcmp(e, "f32") == 0) c.kv_type = GGML_TYPE_F32;
        else throw std::invalid_argument(std::string("CAPTIONIST_KV_TYPE must be f16 or f32, got '") + e + "'");
    }
    const char * fe = std::getenv("CAPTIONIST_FLASH_ATTN");
    const bool is_cpu = ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU;
    const bool want = fe && *fe ? env_flag("CAPTIONIST_FLASH_ATTN") : !is_cpu;
    if (!want) {
        c.batch_flash = is_cpu && !(fe && *fe) && c.kv_type == GGML_TYPE_F16 &&
                        flash_supported(dev, head_dim, n_head, n_head_kv, GGML_TYPE_F16);
        return c;
    }
    if (flash_supported(dev, head_dim, n_head, n_head_kv, c.kv_type)) {
        c.flash = true;
    } else if (c.kv_type != GGML_TYPE_F16 && flash_supported(dev, head_dim, n_head, n_head_kv, GGML_TYPE_F16)) {
        c.flash = true;
        c.kv_type = GGML_TYPE_F16;
    }
    return c;
}

ggml_tensor * build_rope_neox(ggml_context * ctx, ggml_tensor * x, ggml_tensor * pos, int head_dim, float theta) {
    return ggml_rope_ext(ctx, x, pos, nullptr, head_dim, GGML_ROPE_TYPE_NEOX, 0, theta, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f);
}

ggml_tensor * build_rms_norm(ggml_context * ctx, ggml_tensor * x, ggml_tensor * weight, float eps) {
    return ggml_mul(ctx, ggml_rms_norm(ctx, x, eps), weight);
}

} // namespace captionist
