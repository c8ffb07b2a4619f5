#include "fc_decoder.h"

#include "column_products.h"
#include "fc_model.h"
#include "fc_state.h"

namespace captionist {

namespace {

// One LSTM layer step (torch gate order i, f, g, o); writes the new h/c into the state columns.
ggml_tensor * lstm_step(ggml_context * ctx, ggml_cgraph * gf, const fc_lstm_layer & l, const fc_state & state, int il,
                        ggml_tensor * x) {
    ggml_tensor * hs = state.lstm_h;
    ggml_tensor * cs = state.lstm_c;
    const int64_t H = hs->ne[0];
    ggml_tensor * h = ggml_view_1d(ctx, hs, H, (size_t) il * hs->nb[1]);
    ggml_tensor * c = ggml_view_1d(ctx, cs, H, (size_t) il * cs->nb[1]);
    ggml_tensor * gates = ggml_add(ctx, ggml_add(ctx, ggml_mul_mat(ctx, l.w_ih, x), l.b_ih),
                                   ggml_add(ctx, ggml_mul_mat(ctx, l.w_hh, ggml_reshape_2d(ctx, h, H, 1)), l.b_hh));
    const size_t es = ggml_element_size(gates);
    ggml_tensor * gi = ggml_sigmoid(ctx, ggml_view_1d(ctx, gates, H, 0 * H * es));
    ggml_tensor * gf_ = ggml_sigmoid(ctx, ggml_view_1d(ctx, gates, H, 1 * H * es));
    ggml_tensor * gg = ggml_tanh(ctx, ggml_view_1d(ctx, gates, H, 2 * H * es));
    ggml_tensor * go = ggml_sigmoid(ctx, ggml_view_1d(ctx, gates, H, 3 * H * es));
    ggml_tensor * c_new = ggml_add(ctx, ggml_mul(ctx, gf_, c), ggml_mul(ctx, gi, gg));
    ggml_tensor * h_new = ggml_mul(ctx, go, ggml_tanh(ctx, c_new));
    ggml_build_forward_expand(gf, ggml_cpy(ctx, c_new, c));
    ggml_build_forward_expand(gf, ggml_cpy(ctx, h_new, h));
    return ggml_reshape_2d(ctx, h_new, H, 1);
}

ggml_tensor * activation(ggml_context * ctx, fc_activation a, ggml_tensor * x) {
    switch (a) {
    case fc_activation::FC_ACTIVATION_RELU: return ggml_relu(ctx, x);
    case fc_activation::FC_ACTIVATION_TANH: return ggml_tanh(ctx, x);
    case fc_activation::FC_ACTIVATION_SIGMOID: return ggml_sigmoid(ctx, x);
    }
    return x;
}

} // namespace

fc_joint_graph build_fc_joint_graph(ggml_context * ctx, ggml_cgraph * gf, const fc_model & m, const fc_state & state,
                                    bool with_step, int n, bool capture) {
    const fc_hparams & hp = m.hp;
    const fc_weights & w = m.w;
    fc_joint_graph g;
    g.frames = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, hp.joint_n_embd, n);
    ggml_set_input(g.frames);
    ggml_tensor * pred = state.pred;
    if (with_step) {
        g.token = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 1);
        ggml_set_input(g.token);
        ggml_tensor * x = ggml_get_rows(ctx, w.dec_embd, g.token); // [H, 1]
        for (uint32_t il = 0; il < hp.dec_n_layer; ++il) x = lstm_step(ctx, gf, w.lstm[il], state, (int) il, x);
        ggml_tensor * p = ggml_add(ctx, ggml_mul_mat(ctx, w.dec_proj_w, x), w.dec_proj_b); // [J, 1]
        pred = ggml_reshape_1d(ctx, p, hp.joint_n_embd);
        ggml_build_forward_expand(gf, ggml_cpy(ctx, pred, state.pred));
    }
    ggml_tensor * z = activation(ctx, hp.joint_act, ggml_add(ctx, g.frames, pred)); // [J, n]
    ggml_tensor * logits = ggml_add(ctx, build_weight_product(ctx, m, w.joint_out_w, z), w.joint_out_b); // [V, n]
    if (capture) {
        g.logits = logits;
        ggml_set_output(logits);
    }
    g.best = ggml_argmax(ctx, logits);
    ggml_set_output(g.best);
    ggml_build_forward_expand(gf, g.best);
    return g;
}

} // namespace captionist
