// voxtral_stream.h - Voxtral Realtime per-stream state and the incremental pipeline (pull-style: feed / finish / reset).
//
// PCM (16 kHz mono float) goes in; log-mel frames are computed once each as soon as their window
// is complete; every full token's worth of frames (8 mel frames = 80 ms) goes through the conv stem,
// the encoder (sliding-window KV ring) and the projector in batches; the decoder prefills the prompt
// [BOS] + [STREAMING_PAD] x (n_left_pad + d) as soon as its audio exists, then steps one position
// per 80 ms token. Nothing already computed is recomputed, and PCM, mel frames and audio embeddings
// are released as soon as they are consumed, so memory is constant however long the stream runs.
//
// finish() appends the reference's right padding and decodes to the end, so feed(all) + finish()
// equals the reference's offline generate. A stream is owned by one thread at a time.
//
// On the device: the delay's ada scales, the audio embeddings between encoder and decoder (a ring
// of slots; the encoder waits when the decoder is that far behind) and the decoder step's mask. The
// one-position decoder step graph is built once per attention width (the cache view grows in steps
// of 256 slots until the ring is full) and recomputed with its cache writes re-pointed; a step sends
// the token id, the embedding slot, the position and the changed mask entries, and reads back one
// token id. The audio batch graph (conv stem + encoder + projector) is kept the same way for the
// last batch size. CAPTIONIST_NO_GRAPH_REUSE=1 rebuilds them every time (same numbers). The silent
// start (the left padding's audio tokens and the prompt positions that read only them) is copied
// from the model once its first stream has computed it (voxtral_silence.h).
#pragma once

#include "graph_runner.h"
#include "kv_ring.h"
#include "persistent_tensors.h"
#include "tekken_vocab.h"
#include "voxtral_decoder.h"
#include "voxtral_encoder.h"
#include "voxtral_mel.h"

#include <captionist/engine.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace captionist {

struct voxtral_model;

struct voxtral_timings {
    double mel_ms = 0;     // log-mel frames (host)
    double audio_ms = 0;   // conv stem + encoder + projector graphs
    double decoder_ms = 0; // decoder graphs (prefill and steps)
    int64_t n_mel_frames = 0;
    int64_t n_audio_batches = 0;
    int64_t n_flash_audio_batches = 0; // of which read with flash attention (attention_choice::batch_flash)
    int64_t n_audio_tokens = 0;
    int64_t n_decoder_calls = 0;
    int64_t n_decoder_positions = 0;
    int64_t n_draft_positions = 0; // guessed positions verified (speculative decoding)
    int64_t n_draft_accepted = 0;  // of which taken
    int64_t n_silence_tokens_restored = 0;    // silent audio tokens copied from the model (voxtral_silence.h)
    int64_t n_silence_positions_restored = 0; // silent decoder positions copied likewise
};

class voxtral_stream : public stream {
public:
    static constexpr int N_DRAFT_SIZES = 4; // speculative drafts of 1, 3, 7 or 15 guesses

    voxtral_stream(std::shared_ptr<const voxtral_model> m, const stream_options & opts);
    voxtral_stream(const voxtral_stream &) = delete;
    voxtral_stream & operator=(const voxtral_stream &) = delete;

    stream_result feed(const float * pcm, size_t n) override;
    stream_result finish() override;
    // latency_ms 0 keeps the current delay; Voxtral takes no language.
    void reset(const stream_options & opts) override;

    // Teacher forcing (tests): decoder input after output j is forced[j] instead of the argmax.
    void set_forced_tokens(std::vector<int32_t> forced) override { forced_ = std::move(forced); }

    int latency_ms() const override;
    std::string language() const override { return {}; }
    const std::vector<int32_t> & token_ids() const override { return generated_; }
    const stream_capture & captured() const override { return cap_; }
    std::map<std::string, double> timings() const override;
    bool finished() const override { return finished_; }
    size_t state_bytes() const override;

private:
    void restart(int num_delay_tokens);
    void compute_ada_scales();
    void pump(stream_result & out);
    void compute_mel_frames();
    void run_audio_batches();
    void grow_decoder_ring(int64_t pos0, int n);
    bool encoder_row_copy();
    void store_embeds(ggml_context * ctx, ggml_cgraph * gf, ggml_tensor * embeds, int64_t a0, int k,
                      std::vector<ggml_tensor *> & writes) const;
    int64_t embed_slot(int64_t audio_token) const;
    void set_step_mask(int64_t pos0, int n_kv);
    void run_decoder(stream_result & out);
    void decode_positions(int64_t pos0, int n, const std::vector<int32_t> & ids, stream_result & out);
    std::vector<int32_t> run_positions(int64_t pos0, int n, const std::vector<int32_t> & ids, bool all);
    void take_output(int64_t pos, int32_t tok, size_t row, stream_result & out);
    void decode_draft(int n_draft, stream_result & out);
    int64_t reanchor_soft_limit() const;
    int64_t mel_frames_total() const;  // -1 until finish()
    int64_t audio_tokens_total() const; // -1 until finish()
    int64_t audio_index(int64_t pos) const; // audio token consumed by decoder position `pos`
    void prefill(stream_result & out);
    static void add_event(stream_result & out, stream_event_type type);
    bool reanchor_due() const;
    void reanchor(stream_result & out);
    int64_t ms_received() const;
    int64_t ms_decoded() const;
    void release_consumed();
    bool silence_reusable() const;
    void restore_encoder_silence();
    void save_encoder_silence();
    bool restore_decoder_silence(int n);
    void save_decoder_silence(int n);

    std::shared_ptr<const voxtral_model> m_;
    std::atomic<bool> busy_{false};
    stream_options opts_;
    graph_runner runner_;
    mel_frontend mel_;
    kv_ring enc_ring_;
    kv_ring dec_ring_;
    int max_batch_tokens_ = 0;
    int n_silent_ = 0;          // silent_tokens(): the first audio batch and prompt part stop there
    bool row_copy_failed_ = false; // the encoder ring's row copy could not be allocated: not tried again
    bool reuse_silence_ = true; // CAPTIONIST_NO_SILENCE_CACHE unset

    int delay_ = 0;
    int prompt_len_ = 0;

    // device state
    persistent_tensors dev_{4};
    decoder_state dstate_;              // ada scales [dec_n_embd, n_layer], embedding slots
    ggml_tensor * step_mask_ = nullptr; // F16 [dec ring capacity]
    struct kept_step {
        ggml_cgraph * gf = nullptr;
        decoder_graph g;
        int n_kv = 0;
        int n = 0;
        uint64_t ring_gen = 0; // the decoder ring's generation it was built on
    };
    kept_step step_;
    kept_step verify_[N_DRAFT_SIZES]; // per draft size (1, 3, 7, 15 guesses)
    std::vector<float> last_logits_; // capture: the last decoder call's logits
    int draft_ = 1;                  // speculative draft length
    bool speculate_ = true;
    struct kept_audio { // the last audio batch graph whose writes did not wrap
        ggml_cgraph * gf = nullptr;
        conv_graph cg;
        encoder_graph g;
        std::vector<ggml_tensor *> embed_writes;
        int k = 0;
        int n_kv = 0;
        bool flash_rows = false;
    };
    kept_audio audio_;
    kept_audio scratch_audio_; // a batch built for one compute (its writes wrap)
    std::vector<ggml_fp16_t> step_mask_host_; // what step_mask_ holds
    bool reuse_graphs_ = true;

    // audio
    std::vector<float> pcm_;       // real samples not yet released
    int64_t pcm_base_ = 0;         // padded-signal index of pcm_[0]
    int64_t samples_received_ = 0; // real samples fed
    int64_t right_pad_ = 0;        // zeros appended by finish()
    int64_t mel_next_ = 0;         // next mel frame to compute
    std::vector<float> mel_pending_; // [n][n_mel] frames not yet through the conv stem
    std::vector<float> mel_prev_;    // [2][n_mel] the two frames before mel_pending_
    std::vector<float> conv1_prev_;  // [enc_n_embd] last conv1 output frame
    int64_t enc_pos_ = 0;            // next encoder frame position

    // decoder
    int64_t n_audio_ = 0;                   // audio tokens encoded (their embeddings are in slots)
    int64_t embeds_base_ = 0;               // oldest audio token the decoder may still read
    int64_t dec_pos_ = 0;                   // next decoder position
    int64_t anchor_shift_ = 0;              // audio_index(p) - p for p >= n_left (moves at re-anchors)
    int64_t quiet_run_ = 0;                 // consecutive outputs without text
    int32_t next_input_ = -1;               // token to feed at dec_pos_ (after the prompt)
    std::vector<int32_t> generated_;
    std::vector<int32_t> forced_;
    size_t n_outputs_ = 0;                  // decoder outputs so far (EOS and replaced ones included)
    bool finished_ = false;
    bool ended_ = false;

    utf8_assembler text_;
    bool broken_ = false;
    stream_capture cap_;
    voxtral_timings timings_;
};

} // namespace captionist
