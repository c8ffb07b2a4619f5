// fc_model.h - the immutable FastConformer RNN-T model: hyper-parameters, weights, vocabulary.
//
// Architecture (Nemotron Speech Streaming 0.6B, Nemotron 3.5 ASR 0.6B, Parakeet-EOU 120M):
//   16 kHz PCM -> pre-emphasis -> log-mel (n_fft 512, window 400, hop 160, 128 bins, natural log)
//   -> causal depthwise-striding subsampling (3 stride-2 conv2d stages, 8x: one frame per 80 ms)
//   -> FastConformer layers (½FFN, rel-pos MHSA with chunked-limited context, causal conv module,
//      ½FFN, LayerNorm) -> [Nemotron 3.5: language-prompt MLP] -> encoder projection
//   -> RNN-T: LSTM prediction network + joint network, greedy decoding.
// The computation contract (what each tensor is, the masks, the decoding rule) is engine/GGUF.md.
//
// A model is loaded once and never modified afterwards; per-stream state lives in fc_stream.h.
#pragma once

#include "fc_vocab.h"
#include "model_base.h"

#include <ggml.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace captionist {

enum class fc_conv_norm { FC_CONV_NORM_LAYER, FC_CONV_NORM_BATCH };
enum class fc_activation { FC_ACTIVATION_RELU, FC_ACTIVATION_TANH, FC_ACTIVATION_SIGMOID };

struct fc_hparams {
    // audio frontend
    uint32_t sample_rate = 16000;
    uint32_t n_fft = 512;
    uint32_t win_length = 400;
    uint32_t hop_length = 160;
    uint32_t n_mel = 128;
    float preemphasis = 0.97f;
    float log_guard = 5.9604645e-08f; // 2^-24

    // encoder
    uint32_t n_embd = 0;
    uint32_t n_layer = 0;
    uint32_t n_head = 0;
    uint32_t n_ff = 0;
    uint32_t conv_kernel = 9;
    fc_conv_norm conv_norm = fc_conv_norm::FC_CONV_NORM_LAYER;
    float norm_eps = 1e-5f;
    float xscale = 1.0f;
    uint32_t sub_factor = 8;
    uint32_t sub_channels = 0;
    uint32_t sub_kernel = 3;
    uint32_t sub_stride = 2;
    uint32_t left_context = 70;
    std::vector<uint32_t> lookaheads; // trained right contexts, the default first

    // decoder and joint
    uint32_t dec_n_embd = 0;
    uint32_t dec_n_layer = 0;
    uint32_t joint_n_embd = 0;
    fc_activation joint_act = fc_activation::FC_ACTIVATION_RELU;
    uint32_t n_vocab = 0;
    uint32_t blank_id = 0;
    uint32_t max_symbols = 10;

    // Nemotron 3.5 language prompt (n_prompts == 0: none)
    uint32_t n_prompts = 0;
    uint32_t prompt_n_ff = 0;
    uint32_t prompt_default = 0;
    std::vector<std::string> prompt_names;
    std::vector<uint32_t> prompt_ids;

    // derived
    uint32_t sub_stages() const;        // log2(sub_factor)
    uint32_t sub_freq_out() const;      // mel bins after the subsampling stages (F')
    uint32_t head_dim() const { return n_embd / n_head; }
    uint32_t frame_ms() const { return hop_length * sub_factor * 1000 / sample_rate; } // 80
    // Valid length after one subsampling stage (the reference's formula).
    int64_t sub_stage_length(int64_t len) const;
};

struct fc_layer {
    ggml_tensor * ffn1_norm_w = nullptr; // F32 [E]            norm_feed_forward1.weight
    ggml_tensor * ffn1_norm_b = nullptr; // F32 [E]            norm_feed_forward1.bias
    ggml_tensor * ffn1_up_w = nullptr;   // [E, n_ff]          feed_forward1.linear1.weight
    ggml_tensor * ffn1_up_b = nullptr;   // F32 [n_ff]
    ggml_tensor * ffn1_down_w = nullptr; // [n_ff, E]          feed_forward1.linear2.weight
    ggml_tensor * ffn1_down_b = nullptr; // F32 [E]
    ggml_tensor * attn_norm_w = nullptr; // F32 [E]            norm_self_att
    ggml_tensor * attn_norm_b = nullptr;
    ggml_tensor * wq = nullptr;          // [E, E]             self_attn.q_proj / linear_q
    ggml_tensor * bq = nullptr;          // F32 [E]
    ggml_tensor * wk = nullptr;          // [E, E]             self_attn.k_proj / linear_k
    ggml_tensor * bk = nullptr;
    ggml_tensor * wv = nullptr;          // [E, E]             self_attn.v_proj / linear_v
    ggml_tensor * bv = nullptr;
    ggml_tensor * wo = nullptr;          // [E, E]             self_attn.o_proj / linear_out
    ggml_tensor * bo = nullptr;
    ggml_tensor * wpos = nullptr;        // [E, E]             self_attn.relative_k_proj / linear_pos
    ggml_tensor * pos_bias_u = nullptr;  // F32 [head_dim, n_head]  bias_u / pos_bias_u
    ggml_tensor * pos_bias_v = nullptr;  // F32 [head_dim, n_head]  bias_v / pos_bias_v
    ggml_tensor * conv_norm_w = nullptr; // F32 [E]            norm_conv
    ggml_tensor * conv_norm_b = nullptr;
    ggml_tensor * conv_pw1_w = nullptr;  // [E, 2E]            conv.pointwise_conv1
    ggml_tensor * conv_pw1_b = nullptr;  // F32 [2E]
    ggml_tensor * conv_dw_w = nullptr;   // F32 [kernel, E]    conv.depthwise_conv.weight
    ggml_tensor * conv_dw_b = nullptr;   // F32 [E]
    ggml_tensor * conv_dw_norm_w = nullptr; // F32 [E]         conv.norm (LayerNorm) or folded batch norm scale
    ggml_tensor * conv_dw_norm_b = nullptr; // F32 [E]         ... or folded batch norm shift
    ggml_tensor * conv_pw2_w = nullptr;  // [E, E]             conv.pointwise_conv2
    ggml_tensor * conv_pw2_b = nullptr;
    ggml_tensor * ffn2_norm_w = nullptr; // F32 [E]            norm_feed_forward2
    ggml_tensor * ffn2_norm_b = nullptr;
    ggml_tensor * ffn2_up_w = nullptr;   // [E, n_ff]          feed_forward2.linear1
    ggml_tensor * ffn2_up_b = nullptr;
    ggml_tensor * ffn2_down_w = nullptr; // [n_ff, E]          feed_forward2.linear2
    ggml_tensor * ffn2_down_b = nullptr;
    ggml_tensor * out_norm_w = nullptr;  // F32 [E]            norm_out
    ggml_tensor * out_norm_b = nullptr;
};

struct fc_sub_stage {
    ggml_tensor * dw_w = nullptr; // F32 [k, k, 1, C]  stage 0: full conv 1->C; else depthwise C->C
    ggml_tensor * dw_b = nullptr; // F32 [C]
    ggml_tensor * pw_w = nullptr; // F32 [C, C]        pointwise 1x1 (stages >= 1 only)
    ggml_tensor * pw_b = nullptr; // F32 [C]
};

struct fc_lstm_layer {
    ggml_tensor * w_ih = nullptr; // [H, 4H]  weight_ih_lN (gate rows i, f, g, o)
    ggml_tensor * w_hh = nullptr; // [H, 4H]  weight_hh_lN
    ggml_tensor * b_ih = nullptr; // F32 [4H]
    ggml_tensor * b_hh = nullptr; // F32 [4H]
};

struct fc_weights {
    std::vector<fc_sub_stage> sub;
    ggml_tensor * sub_out_w = nullptr;    // [C*F', E]       subsampling linear / pre_encode.out
    ggml_tensor * sub_out_b = nullptr;    // F32 [E]
    std::vector<fc_layer> layers;
    ggml_tensor * prompt_fc1_w = nullptr; // [E, prompt_n_ff]          3.5: linear_1 columns 0..E-1
    ggml_tensor * prompt_fc1_lang = nullptr; // F32 [prompt_n_ff, n_prompts]  3.5: linear_1 one-hot columns
    ggml_tensor * prompt_fc1_b = nullptr; // F32 [prompt_n_ff]
    ggml_tensor * prompt_fc2_w = nullptr; // [prompt_n_ff, E]
    ggml_tensor * prompt_fc2_b = nullptr; // F32 [E]
    ggml_tensor * enc_proj_w = nullptr;   // [E, J]          encoder_projector / joint.enc
    ggml_tensor * enc_proj_b = nullptr;   // F32 [J]
    ggml_tensor * dec_embd = nullptr;     // [H, V]          decoder embedding (blank row included)
    std::vector<fc_lstm_layer> lstm;
    ggml_tensor * dec_proj_w = nullptr;   // [H, J]          decoder_projector / joint.pred
    ggml_tensor * dec_proj_b = nullptr;   // F32 [J]
    ggml_tensor * joint_out_w = nullptr;  // [J, V]          joint.head / joint_net.2
    ggml_tensor * joint_out_b = nullptr;  // F32 [V]
};

struct fc_model : public model_base {
    fc_hparams hp;
    fc_weights w;
    fc_vocab voc;
    std::vector<float> mel_filters; // host F32 [n_fft/2+1][n_mel] (row = frequency bin)  audio.mel_filters
    std::vector<float> window;      // host F32 [win_length]                              audio.window
    ggml_type kv_type = GGML_TYPE_F32; // F32 for F32 models (exactness), F16 otherwise

    std::string token_bytes(int32_t id) const override { return voc.token_bytes(id); }
    bool is_control(int32_t id) const override { return voc.is_control(id); }
    std::unique_ptr<stream> new_stream(const stream_options & opts) const override;

    // The right context (encoder frames) of a latency; 0 ms = the default. Throws std::invalid_argument.
    uint32_t lookahead_for(int latency_ms) const;
    // The prompt slot of a language; "" = the default. -1 for models without a prompt (only "" allowed).
    int32_t prompt_for(const std::string & language) const;
    int latency_ms_of(uint32_t lookahead) const { return (int) ((lookahead + 1) * hp.frame_ms()); }
};

class gguf_file;
class hparam_reader;

// Every hyper-parameter and tokenizer rule of fc_model_load() on the keys alone (no tensors).
void fc_metadata_check(const hparam_reader & r);

// Reads a `fastconformer_rnnt` file (engine/GGUF.md): hyper-parameters, vocabulary, weights.
std::shared_ptr<const model> fc_model_load(gguf_file & f, const model_load_options & opts);

} // namespace captionist
