// fc_stream.h - FastConformer RNN-T per-stream state and the incremental pipeline.
//
// PCM goes in; log-mel frames are computed once each as soon as their window is complete
// (fc_frontend); as soon as a whole attention chunk of encoder frames (lookahead + 1 frames of
// 80 ms) has its audio, the chunk goes through subsampling and the conformer layers against the
// cached left context (fc_state), and greedy RNN-T decoding consumes its frames. Several waiting
// chunks go through in one graph. finish() decodes the final partial chunk with the reference's
// end-of-signal masks, so feed(any split) + finish() gives exactly the reference's offline result
// for the same lookahead. Nothing is recomputed and everything consumed is released: memory and
// per-chunk cost stay constant however long the stream runs.
//
// Live rule: an end of utterance (<EOU>) is reported as an event and decoding goes on; with
// stop_at_end_of_utterance the first one ends decoding. A stream is owned by one thread at a time.
#pragma once

#include "fc_decoder.h"
#include "fc_encoder.h"
#include "fc_frontend.h"
#include "fc_state.h"
#include "graph_runner.h"

#include <captionist/engine.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace captionist {

struct fc_model;

struct fc_timings {
    double mel_ms = 0;     // frontend (host)
    double encoder_ms = 0; // subsampling + conformer graphs
    double decoder_ms = 0; // prediction + joint graphs
    double graph_ms = 0;   // of encoder_ms + decoder_ms: building and allocating graphs
    int64_t n_mel_frames = 0;
    int64_t n_encoder_frames = 0;
    int64_t n_encoder_batches = 0;
    int64_t n_joint_calls = 0;
    int64_t n_tokens = 0;
};

class fc_stream : public stream {
public:
    fc_stream(std::shared_ptr<const fc_model> m, const stream_options & opts);
    fc_stream(const fc_stream &) = delete;
    fc_stream & operator=(const fc_stream &) = delete;

    stream_result feed(const float * pcm, size_t n) override;
    stream_result finish() override;
    void reset(const stream_options & opts) override;

    int latency_ms() const override;
    std::string language() const override { return language_; }
    const std::vector<int32_t> & token_ids() const override { return generated_; }
    bool finished() const override { return finished_; }
    size_t state_bytes() const override;
    std::map<std::string, double> timings() const override;
    const stream_capture & captured() const override { return cap_; }
    void set_forced_tokens(std::vector<int32_t> forced) override;

private:
    void configure(const stream_options & opts); // latency, language and the geometry they imply
    void restart();
    void compute_pos_tables();
    void pump(stream_result & out);
    int64_t encoder_frames_ready() const; // frames whose audio is complete (whole chunks while streaming)
    void run_encoder_batch(int64_t p0, int n, std::vector<float> & joint_enc);
    void fill_mel_window(int64_t lo, int64_t count, std::vector<float> & out) const;
    int64_t stage_valid_length(int stage) const; // after finish: valid output frames of a subsampling stage
    void decode_frames(const std::vector<float> & joint_enc, int64_t p0, int n, stream_result & out);
    void emit(int32_t tok, int64_t frame, stream_result & out);
    std::string text_of(int32_t tok); // the text a token completes (byte-fallback runs held until they end)
    std::string flush_bytes();
    void capture_features();
    int64_t ms_received() const;
    int64_t ms_decoded() const;

    std::shared_ptr<const fc_model> m_;
    stream_options opts_;
    std::atomic<bool> busy_{false};
    graph_runner runner_;
    fc_frontend frontend_;
    fc_state state_;

    uint32_t lookahead_ = 0;
    int32_t prompt_ = -1;
    std::string language_;

    int64_t enc_next_ = 0;   // next encoder frame to encode
    int64_t dec_frame_ = 0;  // next encoder frame the decoder scores
    int sym_at_frame_ = 0;   // tokens emitted at dec_frame_
    bool need_step_ = true;  // the prediction network has not yet read last_token_
    int32_t last_token_ = 0; // blank at the start
    std::vector<int32_t> generated_;
    bool text_started_ = false;
    std::string byte_run_; // bytes of consecutive byte-fallback pieces not yet decoded
    bool finished_ = false;
    bool ended_ = false;
    bool broken_ = false;
    int64_t captured_frames_ = 0;

    // Steady-state graphs kept across batches (graph_runner slots SLOT_ENCODER, SLOT_JOINT, SLOT_JOINT_STEP): the encoder batch of one
    // chunk with a full cache, moved along the rings; the joint over one chunk of frames, with and
    // without a prediction step. Dropped whenever the geometry or language changes.
    struct kept_joint {
        ggml_cgraph * gf = nullptr;
        fc_joint_graph g;
    };
    ggml_cgraph * kept_enc_gf_ = nullptr;
    fc_encoder_graph kept_enc_;
    kept_joint kept_joint_[2]; // [with_step]
    bool reuse_graphs_ = true;
    void drop_kept_graphs();

    stream_capture cap_;
    fc_timings timings_;
};

} // namespace captionist
