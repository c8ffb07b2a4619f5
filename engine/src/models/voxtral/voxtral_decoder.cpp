#include "voxtral_decoder.h"

#include "column_products.h"
#include "graph_attention.h"
#include "kv_ring.h"
#include "voxtral_model.h"

#include <cmath>

namespace captionist {

decoder_graph build_decoder_graph(ggml_context * ctx, ggml_cgraph * gf, const voxtral_model & m, const kv_ring & ring,
                                  const decoder_state & st, int n, int64_t pos0, int n_kv, ggml_tensor * mask_src,
                                  bool all_positions) {
    const model_hparams & hp = m.hp;
    const model_weights & w = m.w;
    const int64_t D = hp.dec_n_embd;
    const int hd = (int) hp.dec_head_dim, nh = (int) hp.dec_n_head, nkv = (int) hp.dec_n_head_kv;
    decoder_graph g;

    g.ids = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, n);
    ggml_set_input(g.ids);
    g.audio_rows = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, n);
    ggml_set_input(g.audio_rows);
    g.pos = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, n);
    ggml_set_input(g.pos);
    if (mask_src) {
        g.mask = ggml_view_2d(ctx, mask_src, n_kv, n, (size_t) n_kv * ggml_element_size(mask_src), 0);
    } else {
        g.mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, n_kv, n);
        ggml_set_input(g.mask);
    }

    ggml_tensor * audio = ggml_get_rows(ctx, st.audio_embeds, g.audio_rows);             // [D, n]
    ggml_tensor * x = ggml_add(ctx, ggml_get_rows(ctx, w.token_embd, g.ids), audio); // [D, n]
    for (uint32_t il = 0; il < hp.dec_n_layer; ++il) {
        const decoder_layer & l = w.dec[il];
        ggml_tensor * h = build_rms_norm(ctx, x, l.attn_norm, hp.dec_rms_eps);
        ggml_tensor * q = build_weight_product(ctx, m, l.wq, h);
        ggml_tensor * k = build_weight_product(ctx, m, l.wk, h);
        ggml_tensor * v = build_weight_product(ctx, m, l.wv, h);
        q = build_rope_neox(ctx, ggml_reshape_3d(ctx, q, hd, nh, n), g.pos, hd, hp.dec_rope_theta);
        k = build_rope_neox(ctx, ggml_reshape_3d(ctx, k, hd, nkv, n), g.pos, hd, hp.dec_rope_theta);
        ggml_tensor * att = build_ring_attention(ctx, gf, ring, (int) il, q, k, v, g.mask, pos0, &g.writes, false,
                                                 m.column_kernels);
        x = ggml_add(ctx, x, build_weight_product(ctx, m, l.wo, att));

        h = build_rms_norm(ctx, x, l.ffn_norm, hp.dec_rms_eps);
        ggml_tensor * scale = ggml_view_1d(ctx, st.ada, D, il * st.ada->nb[1]);
        h = ggml_mul(ctx, h, scale);
        ggml_tensor * gate = ggml_silu(ctx, build_weight_product(ctx, m, l.w_gate, h));
        ggml_tensor * up = build_weight_product(ctx, m, l.w_up, h);
        x = ggml_add(ctx, x, build_weight_product(ctx, m, l.w_down, ggml_mul(ctx, gate, up)));
    }
    ggml_tensor * last = all_positions ? x : ggml_view_2d(ctx, x, D, 1, x->nb[1], (size_t) (n - 1) * x->nb[1]);
    last = build_rms_norm(ctx, last, w.dec_norm, hp.dec_rms_eps);
    g.logits = build_weight_product(ctx, m, w.head, last); // [n_vocab, 1 or n]
    ggml_set_output(g.logits);
    g.token = ggml_argmax(ctx, g.logits);
    ggml_set_output(g.token);
    ggml_build_forward_expand(gf, g.token);
    return g;
}

ada_graph build_ada_graph(ggml_context * ctx, ggml_cgraph * gf, const voxtral_model & m, ggml_tensor * out) {
    const model_hparams & hp = m.hp;
    ada_graph g;
    g.t_cond = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, hp.dec_n_embd);
    ggml_set_input(g.t_cond);
    ggml_tensor * all = nullptr;
    for (uint32_t il = 0; il < hp.dec_n_layer; ++il) {
        const decoder_layer & l = m.w.dec[il];
        ggml_tensor * a = ggml_gelu_erf(ctx, build_weight_product(ctx, m, l.ada_1, g.t_cond));
        ggml_tensor * s = ggml_scale_bias(ctx, build_weight_product(ctx, m, l.ada_2, a), 1.0f, 1.0f); // 1 + ada(t)
        all = all ? ggml_concat(ctx, all, s, 1) : s;
    }
    ggml_build_forward_expand(gf, ggml_cpy(ctx, all, out));
    return g;
}

std::vector<float> delay_time_embedding(const voxtral_model & m, int num_delay_tokens) {
    const int D = (int) m.hp.dec_n_embd, half = D / 2;
    std::vector<float> t(D);
    const float log_theta = std::log(m.hp.time_embedding_theta);
    for (int i = 0; i < half; ++i) {
        const float inv_freq = std::exp(-log_theta * (float) i / (float) half);
        const float e = (float) num_delay_tokens * inv_freq;
        t[i] = std::cos(e);
        t[half + i] = std::sin(e);
    }
    return t;
}

} // namespace captionist
