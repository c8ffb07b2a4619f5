// fc_decoder.h - the RNN-T prediction and joint networks as one graph.
//
// Optionally one prediction step first (token -> embedding -> LSTM layers -> dec.proj, updating
// fc_state's LSTM state and prediction output in place), then the joint network of the current
// prediction output with each of n encoder frames: argmax(joint.out(act(f_t + pred))). Only the n
// token ids (and, for tests, the logits) come back to the host.
#pragma once

#include <ggml.h>

namespace captionist {

struct fc_model;
class fc_state;

struct fc_joint_graph {
    ggml_tensor * token = nullptr;  // in  I32 [1]       with_step only: the token the prediction network reads
    ggml_tensor * frames = nullptr; // in  F32 [J, n]    encoder projections of the frames to score
    ggml_tensor * best = nullptr;   // out I32 [n]       argmax per frame (ggml keeps the last of exactly equal maxima; torch the first)
    ggml_tensor * logits = nullptr; // out F32 [V, n]    when capture
};

fc_joint_graph build_fc_joint_graph(ggml_context * ctx, ggml_cgraph * gf, const fc_model & m, const fc_state & state,
                                    bool with_step, int n, bool capture);

} // namespace captionist
