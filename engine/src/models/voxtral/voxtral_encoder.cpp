#include "voxtral_encoder.h"

#include "column_products.h"
#include "graph_attention.h"
#include "kv_ring.h"
#include "voxtral_model.h"

namespace captionist {

namespace {

// Valid (unpadded) 1-D convolution of time-major `x` [T, C_in] with kernel [K, C_in, C_out],
// computed in F32 through im2col. Returns [C_out, T_out] (channel-major, ready for matmuls).
ggml_tensor * conv1d_valid(ggml_context * ctx, const voxtral_model & m, ggml_tensor * kernel, ggml_tensor * x,
                           int stride) {
    ggml_tensor * cols = ggml_im2col(ctx, kernel, x, stride, 0, 0, 0, 1, 0, false, GGML_TYPE_F32); // [K*C_in, T_out]
    ggml_tensor * kr = ggml_reshape_2d(ctx, kernel, kernel->ne[0] * kernel->ne[1], kernel->ne[2]);
    ggml_tensor * out = build_weight_product(ctx, m, kr, ggml_reshape_2d(ctx, cols, cols->ne[0], cols->ne[1]));
    return out; // [C_out, T_out]
}

} // namespace

conv_graph build_conv_graph(ggml_context * ctx, ggml_cgraph * gf, const voxtral_model & m, int n_tokens) {
    const model_hparams & hp = m.hp;
    const model_weights & w = m.w;
    const int64_t E = hp.enc_n_embd;
    const int64_t n_mel_new = (int64_t) n_tokens * hp.mel_frames_per_token;
    conv_graph g;
    g.mel_in = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 2 + n_mel_new, hp.n_mel);
    ggml_set_input(g.mel_in);
    g.conv1_prev = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 1, E);
    ggml_set_input(g.conv1_prev);

    // conv1: k3 s1, causal (the 2 previous mel frames are the left context) -> [E, 8k]
    ggml_tensor * c1 = conv1d_valid(ctx, m, w.conv1_w, g.mel_in, 1);
    c1 = ggml_gelu_erf(ctx, ggml_add(ctx, c1, w.conv1_b));
    ggml_tensor * c1_t = ggml_cont(ctx, ggml_transpose(ctx, c1)); // [8k, E] time-major
    g.conv1_last = ggml_cont(ctx, ggml_view_2d(ctx, c1_t, 1, E, c1_t->nb[1], (n_mel_new - 1) * c1_t->nb[0]));
    ggml_set_output(g.conv1_last);
    ggml_build_forward_expand(gf, g.conv1_last);

    // conv2: k3 s2, causal (1 previous conv1 frame) -> [E, 4k]
    ggml_tensor * c2_in = ggml_concat(ctx, g.conv1_prev, c1_t, 0); // [1 + 8k, E]
    ggml_tensor * x = conv1d_valid(ctx, m, w.conv2_w, c2_in, 2);
    g.frames = ggml_gelu_erf(ctx, ggml_add(ctx, x, w.conv2_b));
    ggml_set_output(g.frames);
    ggml_build_forward_expand(gf, g.frames);
    return g;
}

encoder_graph build_encoder_graph(ggml_context * ctx, ggml_cgraph * gf, const voxtral_model & m, const kv_ring & ring,
                                  int n_tokens, int64_t enc_pos0, int n_kv, ggml_tensor * frames, bool flash_rows) {
    const model_hparams & hp = m.hp;
    const model_weights & w = m.w;
    const int64_t E = hp.enc_n_embd;
    const int64_t n_enc = (int64_t) n_tokens * hp.downsample_factor;
    encoder_graph g;
    g.frames = frames;
    if (!g.frames) {
        g.frames = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, E, n_enc);
        ggml_set_input(g.frames);
    }
    g.pos = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, n_enc);
    ggml_set_input(g.pos);
    g.mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, n_kv, n_enc);
    ggml_set_input(g.mask);

    ggml_tensor * x = g.frames;
    const int hd = (int) hp.enc_head_dim, nh = (int) hp.enc_n_head;
    for (uint32_t il = 0; il < hp.enc_n_layer; ++il) {
        const encoder_layer & l = w.enc[il];
        ggml_tensor * h = build_rms_norm(ctx, x, l.attn_norm, hp.enc_rms_eps);
        ggml_tensor * q = ggml_add(ctx, build_weight_product(ctx, m, l.wq, h), l.bq);
        ggml_tensor * k = build_weight_product(ctx, m, l.wk, h);
        ggml_tensor * v = ggml_add(ctx, build_weight_product(ctx, m, l.wv, h), l.bv);
        q = build_rope_neox(ctx, ggml_reshape_3d(ctx, q, hd, nh, n_enc), g.pos, hd, hp.enc_rope_theta);
        k = build_rope_neox(ctx, ggml_reshape_3d(ctx, k, hd, nh, n_enc), g.pos, hd, hp.enc_rope_theta);
        ggml_tensor * att = build_ring_attention(ctx, gf, ring, (int) il, q, k, v, g.mask, enc_pos0, &g.writes,
                                                 flash_rows, m.column_kernels);
        x = ggml_add(ctx, x, ggml_add(ctx, build_weight_product(ctx, m, l.wo, att), l.bo));

        h = build_rms_norm(ctx, x, l.ffn_norm, hp.enc_rms_eps);
        ggml_tensor * gate = ggml_silu(ctx, build_weight_product(ctx, m, l.w_gate, h));
        ggml_tensor * up = build_weight_product(ctx, m, l.w_up, h);
        ggml_tensor * ff = ggml_add(ctx, build_weight_product(ctx, m, l.w_down, ggml_mul(ctx, gate, up)), l.b_down);
        x = ggml_add(ctx, x, ff);
    }
    g.enc_out = build_rms_norm(ctx, x, w.enc_norm, hp.enc_rms_eps); // [E, 4k]
    ggml_set_output(g.enc_out);

    // projector: group `downsample_factor` consecutive frames -> [4E, k] -> linear, GELU, linear
    ggml_tensor * grouped = ggml_reshape_2d(ctx, g.enc_out, E * hp.downsample_factor, n_tokens);
    ggml_tensor * p = ggml_gelu_erf(ctx, build_weight_product(ctx, m, w.proj_1, grouped));
    g.embeds = build_weight_product(ctx, m, w.proj_2, p);
    ggml_set_output(g.embeds);
    ggml_build_forward_expand(gf, g.embeds);
    return g;
}

} // namespace captionist
