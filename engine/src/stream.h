// stream.h - per-stream state and the incremental pipeline (pull-style: feed / finish / reset).
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
#pragma once

#include "audio_mel.h"
#include "graph_runner.h"
#include "kv_ring.h"
#include "vocab.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace captionist {

struct model;

struct stream_token {
    int32_t id;        // token id (control tokens included)
    int64_t time_ms;   // audio time of the 80 ms slot this token belongs to
    std::string piece; // text this token completed ('' while a character is split across tokens)
};

struct stream_result {
    std::vector<stream_token> new_tokens; // tokens committed by this call (EOS excluded)
    std::vector<std::string> events;      // "end_of_utterance", "reanchor", "finished"
    std::vector<size_t> event_at;         // for each event: how many new_tokens preceded it
    int64_t audio_ms_received = 0;        // real audio fed so far
    int64_t audio_ms_decoded = 0;         // real audio whose embeddings the decoder has consumed
    std::string text_tail;                // finish(): held-back bytes of a split character, decoded
};

struct stream_options {
    int num_delay_tokens = 0;   // 0 = the model's default
    bool eos_ends = false;      // true: EOS ends decoding (reference offline); false: live rule
    bool capture = false;       // keep mel, encoder output, embeddings and logits for inspection
};

struct stream_timings {
    double mel_ms = 0;     // log-mel frames (host)
    double conv_ms = 0;    // conv stem graphs
    double audio_ms = 0;   // encoder + projector graphs
    double decoder_ms = 0; // decoder graphs (prefill and steps)
    int64_t n_mel_frames = 0;
    int64_t n_audio_batches = 0;
    int64_t n_audio_tokens = 0;
    int64_t n_decoder_calls = 0;
    int64_t n_decoder_positions = 0;
};

struct stream_capture {
    std::vector<float> mel;     // [T_mel][n_mel]
    std::vector<float> enc_out; // [T_enc][enc_n_embd]
    std::vector<float> embeds;  // [n_audio][dec_n_embd]
    std::vector<std::vector<float>> logits; // one [n_vocab] per decoder output
};

class stream {
public:
    stream(std::shared_ptr<const model> m, const stream_options & opts);
    stream(const stream &) = delete;
    stream & operator=(const stream &) = delete;

    // Append samples (any count, may be 0). Throws std::invalid_argument on NaN/Inf and
    // std::logic_error after finish(). Returns what became committed.
    stream_result feed(const float * pcm, size_t n);
    // End of input: right-pad and decode to the end. A second call returns an empty result.
    stream_result finish();
    // Start over, optionally with another delay (0 = keep the current one); keeps allocations.
    void reset(int num_delay_tokens);

    // Teacher forcing (tests): decoder input after output j is forced[j] instead of the argmax.
    void set_forced_tokens(std::vector<int32_t> forced) { forced_ = std::move(forced); }

    int num_delay_tokens() const { return delay_; }
    const std::vector<int32_t> & token_ids() const { return generated_; }
    const stream_capture & capture() const { return cap_; }
    const stream_timings & timings() const { return timings_; }
    bool finished() const { return finished_; }
    size_t state_bytes() const;

private:
    void compute_ada_scales();
    void pump(stream_result & out);
    void compute_mel_frames();
    void run_audio_batches();
    std::vector<float> run_conv_stem(int k);
    void run_decoder(stream_result & out);
    void decode_positions(int64_t pos0, int n, const std::vector<int32_t> & ids, stream_result & out);
    int64_t mel_frames_total() const;  // -1 until finish()
    int64_t audio_tokens_total() const; // -1 until finish()
    int64_t audio_index(int64_t pos) const; // audio token consumed by decoder position `pos`
    void prefill(stream_result & out);
    static void add_event(stream_result & out, const char * name);
    bool reanchor_due() const;
    void reanchor(stream_result & out);
    int64_t ms_received() const;
    int64_t ms_decoded() const;
    void release_consumed();

    std::shared_ptr<const model> m_;
    stream_options opts_;
    graph_runner runner_;
    mel_frontend mel_;
    kv_ring enc_ring_;
    kv_ring dec_ring_;
    int max_batch_tokens_ = 0;

    int delay_ = 0;
    int prompt_len_ = 0;
    std::vector<float> ada_scales_; // [dec_n_layer][dec_n_embd]

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
    std::deque<std::vector<float>> embeds_; // audio embeddings not yet consumed
    int64_t embeds_base_ = 0;               // audio token index of embeds_.front()
    std::vector<std::vector<float>> silence_embeds_; // embeddings of the n_left_pad silent tokens
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
    stream_timings timings_;
};

} // namespace captionist
