// voxtral_model.h - the immutable Voxtral Realtime model: hyper-parameters, weights, vocabulary, device.
//
// Architecture (Voxtral Mini 4B Realtime 2602):
//   16 kHz PCM -> log-mel (128 bins, hop 160, fixed global max) -> causal conv stem (k3 s1, k3 s2, GELU)
//   -> causal sliding-window encoder (RMSNorm pre-norm, NeoX RoPE, q/v/o biases, SwiGLU with down bias)
//   -> projector (4 frames -> 1 audio embedding) -> Ministral decoder with additive audio fusion at
//   every position, a delay-conditioned scale on the FFN input, GQA, sliding window, tied head.
//
// A model is loaded once and never modified afterwards (but for the silent start its first stream
// saves for the others, under a lock): any number of streams on any threads may share it. Per-stream state (caches, backends, schedulers) lives in stream.h.
#pragma once

#include "model_base.h"
#include "tekken_vocab.h"
#include "voxtral_silence.h"

#include <ggml-backend.h>
#include <ggml.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace captionist {

struct model_hparams {
    // audio frontend
    uint32_t sample_rate = 16000;
    uint32_t n_fft = 400;
    uint32_t hop_length = 160;
    uint32_t n_mel = 128;
    float global_log_mel_max = 1.5f;
    uint32_t mel_frames_per_token = 8;
    uint32_t downsample_factor = 4;
    uint32_t n_left_pad_tokens = 32;
    uint32_t n_right_pad_extra_tokens = 10;
    uint32_t default_num_delay_tokens = 6;
    float time_embedding_theta = 10000.0f;

    // encoder
    uint32_t enc_n_embd = 0;
    uint32_t enc_n_layer = 0;
    uint32_t enc_n_head = 0;
    uint32_t enc_head_dim = 0;
    uint32_t enc_n_ff = 0;
    float enc_rms_eps = 1e-5f;
    float enc_rope_theta = 1e6f;
    uint32_t enc_sliding_window = 0;

    // decoder
    uint32_t dec_n_embd = 0;
    uint32_t dec_n_layer = 0;
    uint32_t dec_n_head = 0;
    uint32_t dec_n_head_kv = 0;
    uint32_t dec_head_dim = 0;
    uint32_t dec_n_ff = 0;
    float dec_rms_eps = 1e-5f;
    float dec_rope_theta = 1e6f;
    uint32_t dec_sliding_window = 0;
    uint32_t dec_max_position = 0;
    uint32_t dec_n_vocab = 0;
    uint32_t dec_ada_dim = 0;

    // derived
    uint32_t samples_per_token() const { return hop_length * mel_frames_per_token; }
    uint32_t enc_frames_per_token() const { return mel_frames_per_token / 2; }
};

struct encoder_layer {
    ggml_tensor * attn_norm = nullptr; // F32 [enc_n_embd]                  self_attn_layer_norm.weight
    ggml_tensor * wq = nullptr;        // [enc_n_embd, n_head*head_dim]     self_attn.q_proj.weight
    ggml_tensor * bq = nullptr;        // F32 [n_head*head_dim]             self_attn.q_proj.bias
    ggml_tensor * wk = nullptr;        // [enc_n_embd, n_head*head_dim]     self_attn.k_proj.weight (no bias)
    ggml_tensor * wv = nullptr;        // [enc_n_embd, n_head*head_dim]     self_attn.v_proj.weight
    ggml_tensor * bv = nullptr;        // F32 [n_head*head_dim]             self_attn.v_proj.bias
    ggml_tensor * wo = nullptr;        // [n_head*head_dim, enc_n_embd]     self_attn.o_proj.weight
    ggml_tensor * bo = nullptr;        // F32 [enc_n_embd]                  self_attn.o_proj.bias
    ggml_tensor * ffn_norm = nullptr;  // F32 [enc_n_embd]                  final_layer_norm.weight
    ggml_tensor * w_gate = nullptr;    // [enc_n_embd, enc_n_ff]            mlp.gate_proj.weight
    ggml_tensor * w_up = nullptr;      // [enc_n_embd, enc_n_ff]            mlp.up_proj.weight
    ggml_tensor * w_down = nullptr;    // [enc_n_ff, enc_n_embd]            mlp.down_proj.weight
    ggml_tensor * b_down = nullptr;    // F32 [enc_n_embd]                  mlp.down_proj.bias
};

struct decoder_layer {
    ggml_tensor * attn_norm = nullptr; // F32 [dec_n_embd]                  input_layernorm.weight
    ggml_tensor * wq = nullptr;        // [dec_n_embd, n_head*head_dim]     self_attn.q_proj.weight
    ggml_tensor * wk = nullptr;        // [dec_n_embd, n_head_kv*head_dim]  self_attn.k_proj.weight
    ggml_tensor * wv = nullptr;        // [dec_n_embd, n_head_kv*head_dim]  self_attn.v_proj.weight
    ggml_tensor * wo = nullptr;        // [n_head*head_dim, dec_n_embd]     self_attn.o_proj.weight
    ggml_tensor * ffn_norm = nullptr;  // F32 [dec_n_embd]                  post_attention_layernorm.weight
    ggml_tensor * ada_1 = nullptr;     // F32 [dec_n_embd, ada_dim]         ada_rms_norm.linear1.weight
    ggml_tensor * ada_2 = nullptr;     // F32 [ada_dim, dec_n_embd]         ada_rms_norm.linear2.weight
    ggml_tensor * w_gate = nullptr;    // [dec_n_embd, dec_n_ff]            mlp.gate_proj.weight
    ggml_tensor * w_up = nullptr;      // [dec_n_embd, dec_n_ff]            mlp.up_proj.weight
    ggml_tensor * w_down = nullptr;    // [dec_n_ff, dec_n_embd]            mlp.down_proj.weight
};

struct model_weights {
    ggml_tensor * conv1_w = nullptr;   // [3, n_mel, enc_n_embd]            embedder.conv1.weight
    ggml_tensor * conv1_b = nullptr;   // F32 [enc_n_embd]                  embedder.conv1.bias
    ggml_tensor * conv2_w = nullptr;   // [3, enc_n_embd, enc_n_embd]       embedder.conv2.weight
    ggml_tensor * conv2_b = nullptr;   // F32 [enc_n_embd]                  embedder.conv2.bias
    std::vector<encoder_layer> enc;
    ggml_tensor * enc_norm = nullptr;  // F32 [enc_n_embd]                  audio_tower.norm.weight
    ggml_tensor * proj_1 = nullptr;    // [4*enc_n_embd, dec_n_embd]        multi_modal_projector.linear_1.weight
    ggml_tensor * proj_2 = nullptr;    // [dec_n_embd, dec_n_embd]          multi_modal_projector.linear_2.weight
    ggml_tensor * token_embd = nullptr; // [dec_n_embd, n_vocab]            embed_tokens.weight (tied head)
    ggml_tensor * head = nullptr;       // the output head's products: token_embd, or its repacked twin
    std::vector<decoder_layer> dec;
    ggml_tensor * dec_norm = nullptr;  // F32 [dec_n_embd]                  language_model.model.norm.weight
};

struct voxtral_model : public model_base {
    model_hparams hp;
    model_weights w;
    tekken_vocab voc;
    std::string name;

    std::vector<float> mel_filters; // host F32 [n_fft/2+1][n_mel] (row = frequency bin)  audio.mel_filters
    std::vector<float> window;      // host F32 [n_fft]                                     audio.window
    ggml_type kv_type = GGML_TYPE_F32; // F32 for F32 models (exactness), F16 otherwise (choose_attention)
    bool flash_attn = false;           // attention through ggml_flash_attn_ext (non-CPU backends)
    bool encoder_batch_flash = false;  // large encoder batches may use it (attention_choice::batch_flash)
    mutable silence_cache silence;     // every stream's silent start, saved by the first (voxtral_silence.h)

    std::string token_bytes(int32_t id) const override { return voc.token_bytes(id); }
    bool is_control(int32_t id) const override { return voc.is_control(id); }
    std::unique_ptr<stream> new_stream(const stream_options & opts) const override;

    // Delay in tokens for a latency in ms (80 ms per token); throws std::invalid_argument for an
    // unsupported latency. 0 ms = the model's default.
    int delay_tokens_for(int latency_ms) const;
};

class gguf_file;
class hparam_reader;

// Every hyper-parameter and tokenizer rule of voxtral_model_load() on the keys alone (no tensors).
void voxtral_metadata_check(const hparam_reader & r);

// Reads a `voxtral_realtime` file (engine/GGUF.md): hyper-parameters, vocabulary, weights.
std::shared_ptr<const model> voxtral_model_load(gguf_file & f, const model_load_options & opts);

} // namespace captionist
