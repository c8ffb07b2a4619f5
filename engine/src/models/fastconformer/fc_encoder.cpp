#include "fc_encoder.h"

#include "column_products.h"
#include "fc_model.h"
#include "fc_state.h"
#include "graph_copy.h"
#include "graph_runner.h"

#include <ggml-backend.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace captionist {

namespace {

ggml_tensor * layer_norm(ggml_context * ctx, ggml_tensor * x, ggml_tensor * w, ggml_tensor * b, float eps) {
    return ggml_add(ctx, ggml_mul(ctx, ggml_norm(ctx, x, eps), w), b);
}

// W · x, through our few-column kernels where they apply (column_products.h). Otherwise two
// columns (the 160 ms chunks) go as a batch of two single columns: ggml's CPU backend hands every
// product of 2 or more columns to llamafile's tinyBLAS, which is slower than ggml's own dot-product
// loop at 2 columns (0.6B F16, 160 ms, 1 thread: 115 vs 88 ms per chunk), while the batch form
// takes that loop and still reads each weight row once for both columns.
ggml_tensor * matmul(ggml_context * ctx, const fc_model & m, ggml_tensor * w, ggml_tensor * x) {
    const bool plain = w->buffer == nullptr || ggml_backend_buffer_is_host(w->buffer); // not repacked, not a GPU
    if (!column_kernels_apply(m.column_kernels, w, x) && plain && x->ne[1] == 2 && x->ne[2] == 1 && x->ne[3] == 1 &&
        ggml_is_contiguous(x)) {
        ggml_tensor * y = ggml_mul_mat(ctx, w, ggml_reshape_3d(ctx, x, x->ne[0], 1, 2));
        return ggml_reshape_2d(ctx, y, y->ne[0], 2);
    }
    return build_weight_product(ctx, m, w, x);
}

ggml_tensor * linear(ggml_context * ctx, const fc_model & m, ggml_tensor * w, ggml_tensor * b, ggml_tensor * x) {
    return ggml_add(ctx, matmul(ctx, m, w, x), b);
}

// FFN = down(silu(up(x)))
ggml_tensor * feed_forward(ggml_context * ctx, const fc_model & m, ggml_tensor * x, ggml_tensor * up_w,
                           ggml_tensor * up_b, ggml_tensor * down_w, ggml_tensor * down_b) {
    return linear(ctx, m, down_w, down_b, ggml_silu(ctx, linear(ctx, m, up_w, up_b, x)));
}

// Subsampling of the mel window to [C*F', n] frames (before the linear layer). Activations stay
// channels-first, [C, F, T]: the 1x1 convs are then plain products, and ggml's depthwise conv takes
// its vectorised channels-contiguous path.
ggml_tensor * subsample(ggml_context * ctx, const fc_model & m, fc_encoder_graph & g,
                        const std::vector<fc_sub_range> & ranges) {
    const fc_hparams & hp = m.hp;
    const int s = (int) hp.sub_stride;
    const int64_t C = hp.sub_channels;
    ggml_tensor * x = nullptr;
    for (uint32_t st = 0; st < hp.sub_stages(); ++st) {
        const fc_sub_stage & w = m.w.sub[st];
        ggml_tensor * bias = ggml_reshape_3d(ctx, w.dw_b, C, 1, 1);
        if (st == 0) {
            // 1 -> C channels: im2col patches [9, F1, T1] times the [9, C] kernel, both padded to 16
            // taps so the product takes the blocked F32 kernel (the mel window carries the
            // frequency padding)
            ggml_tensor * cols = ggml_im2col(ctx, w.dw_w, g.mel, s, s, 0, 0, 1, 1, true, GGML_TYPE_F32);
            const int64_t taps = cols->ne[0], F1 = cols->ne[1], T1 = cols->ne[2];
            const int64_t pad = (16 - taps % 16) % 16;
            ggml_tensor * kern = ggml_reshape_2d(ctx, w.dw_w, taps, C);
            ggml_tensor * cols2 = ggml_reshape_2d(ctx, cols, taps, F1 * T1);
            if (pad) {
                kern = ggml_pad(ctx, kern, (int) pad, 0, 0, 0);
                cols2 = ggml_pad(ctx, cols2, (int) pad, 0, 0, 0);
            }
            x = ggml_reshape_3d(ctx, ggml_mul_mat(ctx, kern, cols2), C, F1, T1);
            x = ggml_add(ctx, x, bias);
        } else {
            // depthwise k x k, stride s, causal frequency padding (k-1 low, s-1 high) done as a
            // symmetric k-1 whose extra last column (odd widths) is dropped: the columns kept
            // read the same inputs
            const int64_t F = x->ne[1];
            const int64_t F_out = (F + (hp.sub_kernel - 1) + (s - 1) - hp.sub_kernel) / s + 1;
            ggml_tensor * kern = ggml_cont(ctx, ggml_permute(ctx, w.dw_w, 2, 3, 1, 0)); // [C, 1, kw, kh]
            kern = ggml_permute(ctx, kern, 3, 2, 0, 1);                                  // [kw, kh, 1, C] view
            ggml_tensor * xin = ggml_permute(ctx, x, 2, 0, 1, 3);                       // [F, T, C] view
            ggml_tensor * y = ggml_conv_2d_dw_direct(ctx, kern, xin, s, s, (int) hp.sub_kernel - 1, 0, 1, 1);
            y = ggml_permute(ctx, y, 1, 2, 0, 3); // [C, F', T] (contiguous)
            if (y->ne[1] != F_out) y = ggml_view_3d(ctx, y, C, F_out, y->ne[2], y->nb[1], y->nb[2], 0);
            y = ggml_add(ctx, y, bias);
            x = ggml_reshape_3d(ctx, linear(ctx, m, w.pw_w, w.pw_b, ggml_reshape_2d(ctx, y, C, F_out * y->ne[2])), C,
                                F_out, y->ne[2]);
        }
        ggml_tensor * mask = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 1, 1, ranges[st + 1].count);
        ggml_set_input(mask);
        g.sub_masks.push_back(mask);
        x = ggml_relu(ctx, ggml_mul(ctx, x, mask));
    }
    // [C, F', n] -> [F', C, n] -> [C*F', n] with feature index c*F' + f
    const int64_t F = x->ne[1], n = x->ne[2];
    x = ggml_cont(ctx, ggml_permute(ctx, x, 1, 0, 2, 3));
    return ggml_reshape_2d(ctx, x, F * C, n);
}

// Relative-position self-attention of the batch against the ring window [p0 - n_cache, p0 + n).
ggml_tensor * self_attention(ggml_context * ctx, ggml_cgraph * gf, const fc_model & m, const fc_state & state, int il,
                             ggml_tensor * h, ggml_tensor * mask, int64_t p0, int n, int n_cache,
                             std::vector<fc_ring_view> & views) {
    using R = fc_ring_role;
    const fc_hparams & hp = m.hp;
    const fc_layer & l = m.w.layers[il];
    const fc_geometry & geo = state.geo;
    const int64_t E = hp.n_embd, hd = hp.head_dim(), nh = hp.n_head;
    const int64_t cap = geo.cap, W = n_cache + n;

    ggml_tensor * q = ggml_reshape_3d(ctx, linear(ctx, m, l.wq, l.bq, h), hd, nh, n);
    ggml_tensor * k = linear(ctx, m, l.wk, l.bk, h); // [E, n]
    ggml_tensor * v = linear(ctx, m, l.wv, l.bv, h); // [E, n]

    // store the batch's keys/values at their slots and at the mirrored slots
    ggml_tensor * kc = state.k[il];
    ggml_tensor * vc = state.v[il];
    for (int64_t done = 0; done < n;) {
        const int64_t slot = (p0 + done) % cap;
        const int64_t cnt = std::min<int64_t>(n - done, cap - slot);
        ggml_tensor * ks = ggml_view_2d(ctx, k, E, cnt, k->nb[1], done * k->nb[1]);
        ggml_tensor * vs = ggml_transpose(ctx, ggml_view_2d(ctx, v, E, cnt, v->nb[1], done * v->nb[1]));
        for (int mi = 0; mi < 2; ++mi) {
            const int64_t mirror = slot + mi * cap;
            ggml_tensor * kd = ggml_view_2d(ctx, kc, E, cnt, kc->nb[1], mirror * kc->nb[1]);
            ggml_tensor * kw = ggml_cpy(ctx, ks, kd);
            ggml_build_forward_expand(gf, kw);
            ggml_tensor * vd = ggml_view_2d(ctx, vc, cnt, E, vc->nb[1], mirror * ggml_element_size(vc));
            ggml_tensor * vw = copy_into_view(ctx, vs, vd); // transposed into columns: see graph_copy.h
            ggml_build_forward_expand(gf, vw);
            for (ggml_tensor * t : {kd, kw}) views.push_back({t, R::FC_RING_K_WRITE, mi});
            for (ggml_tensor * t : {vd, vw}) views.push_back({t, R::FC_RING_V_WRITE, mi});
        }
        done += cnt;
    }
    const int64_t a = ((p0 - n_cache) % cap + cap) % cap; // first slot of the window
    ggml_tensor * keys = ggml_view_3d(ctx, kc, hd, nh, W, ggml_row_size(kc->type, hd), kc->nb[1], a * kc->nb[1]);
    views.push_back({keys, R::FC_RING_K_WINDOW, 0});
    keys = ggml_permute(ctx, keys, 0, 2, 1, 3); // [hd, W, nh]
    views.push_back({keys, R::FC_RING_K_WINDOW, 0});
    ggml_tensor * values = ggml_view_3d(ctx, vc, W, hd, nh, vc->nb[1], vc->nb[1] * hd, a * ggml_element_size(vc));
    views.push_back({values, R::FC_RING_V_WINDOW, 0});
    if (!ggml_backend_buffer_is_host(vc->buffer)) {
        // GPU backends read a product's operands from offsets aligned to the device's storage
        // alignment (Vulkan asserts it); the window starts at any slot, so it is copied first
        keys = ggml_cont(ctx, keys);
        values = ggml_cont(ctx, values);
    }

    ggml_tensor * qu = ggml_permute(ctx, ggml_add(ctx, q, ggml_reshape_3d(ctx, l.pos_bias_u, hd, nh, 1)), 0, 2, 1, 3);
    ggml_tensor * qv = ggml_permute(ctx, ggml_add(ctx, q, ggml_reshape_3d(ctx, l.pos_bias_v, hd, nh, 1)), 0, 2, 1, 3);
    // with an F16 cache on the CPU, a chunk's few queries go through our column kernels
    ggml_tensor * ac = build_weight_product(ctx, m, keys, qu); // [W, n, nh]
    if (ac->op == GGML_OP_MUL_MAT) ggml_mul_mat_set_prec(ac, GGML_PREC_F32);

    // position term: offsets n_cache + i - j for query i, key j; the table holds offsets rel_top down
    const int64_t n_rel = W + n - 1;
    const int64_t col0 = geo.rel_top - (n_cache + n - 1);
    ggml_tensor * pt = state.pos[il];
    ggml_tensor * pv = ggml_view_3d(ctx, pt, hd, nh, n_rel, ggml_row_size(pt->type, hd), pt->nb[1], col0 * pt->nb[1]);
    pv = ggml_permute(ctx, pv, 0, 2, 1, 3);       // [hd, n_rel, nh]
    ggml_tensor * bd = ggml_mul_mat(ctx, pv, qv); // [n_rel, n, nh]: row i, column m = offset (n_cache+n-1) - m
    // element (i, j) needs column n - 1 - i + j: a view whose row stride is one element short
    bd = ggml_view_3d(ctx, bd, W, n, nh, (n_rel - 1) * sizeof(float), bd->nb[2], (size_t) (n - 1) * sizeof(float));
    ggml_tensor * scores = ggml_add(ctx, ac, ggml_cont(ctx, bd));
    ggml_tensor * attn = ggml_soft_max_ext(ctx, scores, mask, 1.0f / std::sqrt((float) hd), 0.0f);
    ggml_tensor * out = build_weight_product(ctx, m, values, attn); // [hd, n, nh]
    out = ggml_cont_2d(ctx, ggml_permute(ctx, out, 0, 2, 1, 3), E, n);
    return linear(ctx, m, l.wo, l.bo, out);
}

// Whether the causal depthwise convolution of width K runs as ggml_conv_2d_dw_direct instead of
// ggml_ssm_conv. ggml 0.20.2's CUDA backend has SSM_CONV kernels for widths 3, 4, 5, 9 and 15 only and
// aborts the process on any other, while its supports_op accepts the op; so on every non-CPU device
// (one rule for all, which keeps the graphs dumped on Vulkan the ones CUDA gets) the other widths take
// the 2-D form. The published models use 9. CAPTIONIST_FC_DEPTHWISE=conv_2d takes it everywhere, so
// that the CPU tests check it against the reference.
bool depthwise_as_conv_2d(const fc_model & m, int64_t K) {
    const char * e = std::getenv("CAPTIONIST_FC_DEPTHWISE");
    if (e && std::strcmp(e, "conv_2d") == 0) return true;
    if (ggml_backend_dev_type(m.device) == GGML_BACKEND_DEVICE_TYPE_CPU) return false;
    return K != 3 && K != 4 && K != 5 && K != 9 && K != 15;
}

// pw1 -> GLU -> causal depthwise conv (state.conv holds the previous kernel-1 inputs) -> norm -> SiLU -> pw2
ggml_tensor * conv_module(ggml_context * ctx, ggml_cgraph * gf, const fc_model & m, const fc_state & state, int il,
                          ggml_tensor * h, int n) {
    const fc_hparams & hp = m.hp;
    const fc_layer & l = m.w.layers[il];
    const int64_t E = hp.n_embd, K = hp.conv_kernel;
    ggml_tensor * x = linear(ctx, m, l.conv_pw1_w, l.conv_pw1_b, h); // [2E, n]
    ggml_tensor * xa = ggml_view_2d(ctx, x, E, n, x->nb[1], 0);
    ggml_tensor * xb = ggml_view_2d(ctx, x, E, n, x->nb[1], E * ggml_element_size(x));
    // the gate made contiguous first: GPU backends (CUDA, Vulkan) run unary ops on contiguous
    // tensors only, and on a view of half the rows the sigmoid fell back to the CPU, one graph
    // split and two copies per layer (measured on CUDA: 18 splits per encoder graph, 120M model)
    ggml_tensor * glu = ggml_mul(ctx, xa, ggml_sigmoid(ctx, ggml_cont(ctx, xb))); // [E, n]
    ggml_tensor * y;
    if (K > 1) {
        ggml_tensor * cache = state.conv[il]; // [K-1, E]
        ggml_tensor * seq = ggml_concat(ctx, cache, ggml_cont(ctx, ggml_transpose(ctx, glu)), 0); // [K-1+n, E]
        ggml_tensor * last = ggml_view_2d(ctx, seq, K - 1, E, seq->nb[1], (size_t) n * ggml_element_size(seq));
        if (depthwise_as_conv_2d(m, K)) {
            // the same sums as a 2-D depthwise convolution over [K-1+n, 1, E] (contiguous, so ggml
            // reads the kernel [K, 1, 1, E] as it is stored), then back to [E, n]
            y = ggml_conv_2d_dw_direct(ctx, ggml_reshape_4d(ctx, l.conv_dw_w, K, 1, 1, E),
                                       ggml_reshape_4d(ctx, seq, K - 1 + n, 1, E, 1), 1, 1, 0, 0, 1, 1); // [n, 1, E]
            y = ggml_cont(ctx, ggml_transpose(ctx, ggml_reshape_2d(ctx, y, n, E)));
        } else {
            y = ggml_ssm_conv(ctx, ggml_reshape_3d(ctx, seq, K - 1 + n, E, 1), l.conv_dw_w); // [E, n, 1]
            y = ggml_reshape_2d(ctx, y, E, n);
        }
        ggml_build_forward_expand(gf, y);
        ggml_build_forward_expand(gf, ggml_cpy(ctx, last, cache)); // after y: the conv read the old cache
    } else {
        y = ggml_mul(ctx, glu, ggml_reshape_1d(ctx, l.conv_dw_w, E));
    }
    y = ggml_add(ctx, y, l.conv_dw_b);
    if (hp.conv_norm == fc_conv_norm::FC_CONV_NORM_LAYER) {
        y = layer_norm(ctx, y, l.conv_dw_norm_w, l.conv_dw_norm_b, hp.norm_eps);
    } else {
        y = ggml_add(ctx, ggml_mul(ctx, y, l.conv_dw_norm_w), l.conv_dw_norm_b); // folded batch norm
    }
    return linear(ctx, m, l.conv_pw2_w, l.conv_pw2_b, ggml_silu(ctx, y));
}

} // namespace

std::vector<fc_sub_range> fc_sub_ranges(const fc_hparams & hp, int64_t t0, int64_t n) {
    const int stages = (int) hp.sub_stages();
    std::vector<fc_sub_range> r((size_t) stages + 1);
    int64_t lo = t0, hi = t0 + n - 1; // inclusive
    r[(size_t) stages] = {lo, n};
    for (int st = stages - 1; st >= 0; --st) {
        lo = lo * hp.sub_stride - (hp.sub_kernel - 1);
        hi = hi * hp.sub_stride;
        r[(size_t) st] = {lo, hi - lo + 1};
    }
    return r;
}

std::vector<float> fc_pos_embedding(const fc_model & m, int rel_top, int n_rel) {
    const int64_t E = m.hp.n_embd;
    std::vector<float> inv_freq((size_t) E / 2);
    for (int64_t i = 0; i < E / 2; ++i) inv_freq[(size_t) i] = 1.0f / std::pow(10000.0f, (float) (2 * i) / (float) E);
    std::vector<float> pe((size_t) (E * n_rel));
    for (int c = 0; c < n_rel; ++c) {
        const float pos = (float) (rel_top - c);
        for (int64_t i = 0; i < E / 2; ++i) {
            const float a = pos * inv_freq[(size_t) i];
            pe[(size_t) (c * E + 2 * i)] = std::sin(a);
            pe[(size_t) (c * E + 2 * i + 1)] = std::cos(a);
        }
    }
    return pe;
}

fc_pos_graph build_fc_pos_graph(ggml_context * ctx, ggml_cgraph * gf, const fc_model & m, const fc_state & state) {
    fc_pos_graph g;
    g.pe = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, m.hp.n_embd, state.geo.n_rel);
    ggml_set_input(g.pe);
    for (uint32_t il = 0; il < m.hp.n_layer; ++il) {
        ggml_tensor * p = ggml_mul_mat(ctx, m.w.layers[il].wpos, g.pe); // [E, n_rel]
        ggml_build_forward_expand(gf, ggml_cpy(ctx, p, state.pos[il]));
    }
    return g;
}

fc_encoder_graph build_fc_encoder_graph(ggml_context * ctx, ggml_cgraph * gf, const fc_model & m, const fc_state & state,
                                        int64_t p0, int n, int n_cache, int prompt, bool capture) {
    const fc_hparams & hp = m.hp;
    const fc_weights & w = m.w;
    fc_encoder_graph g;
    const std::vector<fc_sub_range> ranges = fc_sub_ranges(hp, p0, n);
    g.mel = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, hp.n_mel + hp.sub_kernel - 1 + hp.sub_stride - 1, ranges[0].count);
    ggml_set_input(g.mel);
    g.attn_mask = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, n_cache + n, n);
    ggml_set_input(g.attn_mask);

    ggml_tensor * x = linear(ctx, m, w.sub_out_w, w.sub_out_b, subsample(ctx, m, g, ranges)); // [E, n]
    x = ggml_scale(ctx, x, hp.xscale);
    if (capture) {
        g.enc_in = x;
        ggml_set_output(x);
    }
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const fc_layer & l = w.layers[il];
        ggml_tensor * h = layer_norm(ctx, x, l.ffn1_norm_w, l.ffn1_norm_b, hp.norm_eps);
        x = ggml_add(ctx, x,
                     ggml_scale(ctx, feed_forward(ctx, m, h, l.ffn1_up_w, l.ffn1_up_b, l.ffn1_down_w, l.ffn1_down_b), 0.5f));
        h = layer_norm(ctx, x, l.attn_norm_w, l.attn_norm_b, hp.norm_eps);
        x = ggml_add(ctx, x, self_attention(ctx, gf, m, state, (int) il, h, g.attn_mask, p0, n, n_cache, g.ring_views));
        h = layer_norm(ctx, x, l.conv_norm_w, l.conv_norm_b, hp.norm_eps);
        x = ggml_add(ctx, x, conv_module(ctx, gf, m, state, (int) il, h, n));
        h = layer_norm(ctx, x, l.ffn2_norm_w, l.ffn2_norm_b, hp.norm_eps);
        x = ggml_add(ctx, x,
                     ggml_scale(ctx, feed_forward(ctx, m, h, l.ffn2_up_w, l.ffn2_up_b, l.ffn2_down_w, l.ffn2_down_b), 0.5f));
        x = layer_norm(ctx, x, l.out_norm_w, l.out_norm_b, hp.norm_eps);
    }
    if (capture) {
        g.enc_out = x;
        ggml_set_output(x);
    }
    if (hp.n_prompts > 0) {
        // fc1 · [x; onehot(prompt)] = fc1_x · x + fc1_lang[prompt]
        ggml_tensor * lang = ggml_view_1d(ctx, w.prompt_fc1_lang, hp.prompt_n_ff, (size_t) prompt * w.prompt_fc1_lang->nb[1]);
        ggml_tensor * p = ggml_add(ctx, ggml_add(ctx, matmul(ctx, m, w.prompt_fc1_w, x), lang), w.prompt_fc1_b);
        x = linear(ctx, m, w.prompt_fc2_w, w.prompt_fc2_b, ggml_relu(ctx, p));
    }
    g.movable = p0 % state.geo.cap + n <= state.geo.cap;
    g.joint_enc = linear(ctx, m, w.enc_proj_w, w.enc_proj_b, x); // [J, n]
    ggml_set_output(g.joint_enc);
    ggml_build_forward_expand(gf, g.joint_enc);
    return g;
}

bool fc_move_ring_views(const fc_encoder_graph & g, const fc_state & state, int64_t p0, int n, int n_cache) {
    const int64_t cap = state.geo.cap;
    const int64_t slot = p0 % cap;
    if (!g.movable || slot + n > cap) return false;
    const int64_t a = ((p0 - n_cache) % cap + cap) % cap;
    for (const fc_ring_view & v : g.ring_views) {
        ggml_tensor * root = v.t->view_src;
        size_t offs = 0;
        switch (v.role) {
        case fc_ring_role::FC_RING_K_WRITE: offs = (size_t) (slot + v.mirror * cap) * root->nb[1]; break;
        case fc_ring_role::FC_RING_V_WRITE: offs = (size_t) (slot + v.mirror * cap) * ggml_element_size(root); break;
        case fc_ring_role::FC_RING_K_WINDOW: offs = (size_t) a * root->nb[1]; break;
        case fc_ring_role::FC_RING_V_WINDOW: offs = (size_t) a * ggml_element_size(root); break;
        }
        move_view(v.t, offs);
    }
    return true;
}

} // namespace captionist
