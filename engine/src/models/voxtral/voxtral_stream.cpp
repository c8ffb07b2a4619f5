#include "voxtral_stream.h"

#include "env_flag.h"
#include "graph_attention.h"
#include "stream_guard.h"
#include "voxtral_encoder.h"
#include "voxtral_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace captionist {

namespace {

constexpr int MAX_DELAY_TOKENS = 30;     // 2400 ms
constexpr int TOKEN_MS = 80;
constexpr int MAX_BATCH_TOKENS = 32;     // encoder batch: 32 tokens = 128 encoder frames = 2.56 s
constexpr int64_t PCM_RELEASE_CHUNK = 16000;
constexpr int QUIET_TOKENS_FOR_REANCHOR = 12; // ~1 s without text counts as a pause
constexpr int64_t EMBED_SLOTS = 128;        // audio embeddings the encoder may run ahead (10 s)
constexpr int STEP_KV_PAD = 256;            // decoder step graphs attend over a multiple of this
constexpr int DEC_RING_FIRST_SLOTS = 512;   // the decoder cache's first allocation (41 s of a stream)
constexpr int SLOT_STEP = 1;                // graph slot of the kept decoder step
constexpr int SLOT_AUDIO = 2;               // graph slot of the kept audio batch
constexpr int SLOT_VERIFY = 3;              // graph slots of the kept draft verifications, one per size:
constexpr int DRAFT_SIZES[voxtral_stream::N_DRAFT_SIZES] = {1, 3, 7, 15}; // guesses verified with the known input
constexpr int MAX_DRAFT = DRAFT_SIZES[voxtral_stream::N_DRAFT_SIZES - 1];

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void append_capture(stream_capture & cap, const char * name, const float * data, size_t n, int64_t cols) {
    stream_capture_array & a = cap[name];
    a.cols = cols;
    a.data.insert(a.data.end(), data, data + n);
}

void check_no_language(const stream_options & opts) {
    if (!opts.language.empty()) {
        throw std::invalid_argument("this model recognises the language itself; it takes no language (got '" +
                                    opts.language + "')");
    }
}

// DEC_RING_FIRST_SLOTS, or CAPTIONIST_DEC_CACHE_SLOTS (0: the whole window at once).
int first_decoder_slots() {
    const char * e = std::getenv("CAPTIONIST_DEC_CACHE_SLOTS");
    if (!e || !*e) return DEC_RING_FIRST_SLOTS;
    return std::max(0, std::atoi(e));
}

} // namespace

voxtral_stream::voxtral_stream(std::shared_ptr<const voxtral_model> m, const stream_options & opts)
    : m_(std::move(m)), opts_(opts), runner_(*m_), mel_(*m_) {
    check_no_language(opts);
    const int delay = m_->delay_tokens_for(opts.latency_ms);
    const model_hparams & hp = m_->hp;
    max_batch_tokens_ = MAX_BATCH_TOKENS;
    const int enc_frames_batch = max_batch_tokens_ * (int) hp.downsample_factor;
    const bool flash = m_->flash_attn;
    // a multiple of 96 frames: batches of 1, 2, 3, 4, 6 or 8 tokens never straddle the ring's end,
    // so their kept graph is not rebuilt when the ring wraps
    const int enc_cap = ((int) hp.enc_sliding_window + enc_frames_batch + 95) / 96 * 96;
    enc_ring_.init(runner_.weights_buft(), m_->kv_type, (int) hp.enc_n_layer, (int) hp.enc_n_head,
                   (int) hp.enc_head_dim, (int) hp.enc_sliding_window, enc_cap, flash);
    const int prompt_max = 1 + (int) hp.n_left_pad_tokens + MAX_DELAY_TOKENS;
    dec_ring_.init(runner_.weights_buft(), m_->kv_type, (int) hp.dec_n_layer, (int) hp.dec_n_head_kv,
                   (int) hp.dec_head_dim, (int) hp.dec_sliding_window, (int) hp.dec_sliding_window + prompt_max, flash,
                   first_decoder_slots());
    dstate_.ada = dev_.add(GGML_TYPE_F32, hp.dec_n_embd, hp.dec_n_layer, "ada_scales");
    dstate_.audio_embeds = dev_.add(GGML_TYPE_F32, hp.dec_n_embd, (int64_t) hp.n_left_pad_tokens + EMBED_SLOTS, "audio_embeds");
    step_mask_ = dev_.add(GGML_TYPE_F16, dec_ring_.capacity(), 1, "step_mask");
    dev_.alloc(runner_.weights_buft());
    reuse_graphs_ = !env_flag("CAPTIONIST_NO_GRAPH_REUSE");
    speculate_ = !env_flag("CAPTIONIST_NO_SPECULATION");
    reuse_silence_ = !env_flag("CAPTIONIST_NO_SILENCE_CACHE");
    n_silent_ = silent_tokens(hp);
    delay_ = 0;
    restart(delay);
}

void voxtral_stream::reset(const stream_options & opts) {
    stream_guard guard(busy_);
    check_no_language(opts);
    const int delay = opts.latency_ms == 0 ? delay_ : m_->delay_tokens_for(opts.latency_ms);
    opts_.stop_at_end_of_utterance = opts.stop_at_end_of_utterance;
    opts_.capture = opts.capture;
    restart(delay);
}

int voxtral_stream::latency_ms() const {
    return delay_ * TOKEN_MS;
}

std::map<std::string, double> voxtral_stream::timings() const {
    const voxtral_timings & t = timings_;
    std::map<std::string, double> out = {{"mel_ms", t.mel_ms},
                                         {"audio_ms", t.audio_ms},
                                         {"decoder_ms", t.decoder_ms},
                                         {"n_mel_frames", (double) t.n_mel_frames},
                                         {"n_audio_batches", (double) t.n_audio_batches},
                                         {"n_flash_audio_batches", (double) t.n_flash_audio_batches},
                                         {"n_audio_tokens", (double) t.n_audio_tokens},
                                         {"n_decoder_calls", (double) t.n_decoder_calls},
                                         {"n_decoder_positions", (double) t.n_decoder_positions},
                                         {"n_draft_positions", (double) t.n_draft_positions},
                                         {"n_draft_accepted", (double) t.n_draft_accepted},
                                         {"n_silence_tokens_restored", (double) t.n_silence_tokens_restored},
                                         {"n_silence_positions_restored", (double) t.n_silence_positions_restored}};
    runner_.add_counters(out);
    return out;
}

void voxtral_stream::restart(int num_delay_tokens) {
    if (num_delay_tokens < 1 || num_delay_tokens > MAX_DELAY_TOKENS) {
        throw std::invalid_argument("num_delay_tokens must be between 1 and " + std::to_string(MAX_DELAY_TOKENS) +
                                    ", got " + std::to_string(num_delay_tokens));
    }
    const model_hparams & hp = m_->hp;
    const bool new_delay = num_delay_tokens != delay_;
    delay_ = num_delay_tokens;
    prompt_len_ = 1 + (int) hp.n_left_pad_tokens + delay_;
    if (new_delay) compute_ada_scales();

    pcm_.clear();
    pcm_base_ = (int64_t) hp.n_left_pad_tokens * hp.samples_per_token();
    samples_received_ = 0;
    right_pad_ = 0;
    mel_next_ = 0;
    mel_pending_.clear();
    mel_prev_.assign(2 * (size_t) hp.n_mel, 0.0f);
    conv1_prev_.assign(hp.enc_n_embd, 0.0f);
    enc_pos_ = 0;
    enc_ring_.clear();
    dec_ring_.clear();
    n_audio_ = 0;
    embeds_base_ = 0;
    dec_pos_ = 0;
    anchor_shift_ = 0;
    quiet_run_ = 0;
    next_input_ = -1;
    draft_ = 1;
    generated_.clear();
    n_outputs_ = 0;
    finished_ = false;
    ended_ = false;
    cap_.clear();
    timings_ = voxtral_timings();
    text_.clear();
    broken_ = false;
    restore_encoder_silence();
}

bool voxtral_stream::silence_reusable() const {
    return reuse_silence_ && !opts_.capture && n_silent_ > 0;
}

// The silent tokens' encoder cache slots, audio embeddings and conv-stem state, as the model's first
// stream left them (nothing when none has yet).
void voxtral_stream::restore_encoder_silence() {
    if (!silence_reusable()) return;
    const std::shared_ptr<const encoder_silence> s = m_->silence.encoder();
    if (!s) return;
    const auto t0 = std::chrono::steady_clock::now();
    enc_ring_.claim(0, s->slots.n_positions);
    runner_.run_once([&](ggml_context * ctx, ggml_cgraph * gf) {
        enc_ring_.restore_slots(ctx, gf, 0, s->slots.k, s->slots.v);
        ggml_tensor * dst = dstate_.audio_embeds; // the silent tokens' slots are 0.. (embed_slot)
        ggml_tensor * slots = ggml_view_2d(ctx, dst, dst->ne[0], s->n_tokens, dst->nb[1], 0);
        ggml_build_forward_expand(gf, ggml_cpy(ctx, s->embeds, slots));
    });
    mel_next_ = (int64_t) s->n_tokens * m_->hp.mel_frames_per_token;
    mel_prev_ = s->mel_prev;
    conv1_prev_ = s->conv1_prev;
    enc_pos_ = s->slots.n_positions;
    n_audio_ = s->n_tokens;
    timings_.audio_ms += ms_since(t0);
    timings_.n_silence_tokens_restored += s->n_tokens;
}

// Called right after the batch of the silent tokens (tokens 0..n_silent_-1, alone in their batch).
// Saving is an optimisation: when the device has no room for the copy, nothing is saved and the
// next stream computes its start again; this stream goes on either way.
void voxtral_stream::save_encoder_silence() {
    if (!silence_reusable() || m_->silence.encoder()) return;
    try {
        const int n_positions = n_silent_ * (int) m_->hp.downsample_factor;
        auto s = std::make_shared<encoder_silence>(enc_ring_, runner_.weights_buft(), n_positions, n_silent_,
                                                   (int64_t) m_->hp.dec_n_embd);
        runner_.run_once([&](ggml_context * ctx, ggml_cgraph * gf) {
            enc_ring_.save_slots(ctx, gf, 0, s->slots.k, s->slots.v);
            ggml_tensor * src = dstate_.audio_embeds;
            ggml_tensor * slots = ggml_view_2d(ctx, src, src->ne[0], n_silent_, src->nb[1], 0);
            ggml_build_forward_expand(gf, ggml_cpy(ctx, slots, s->embeds));
        });
        s->mel_prev = mel_prev_;
        s->conv1_prev = conv1_prev_;
        m_->silence.put(std::move(s));
    } catch (const std::exception &) { // reads the caches only: the stream's state is untouched
    }
}

// The decoder cache's positions 0..n-1 at this delay (they read the silent tokens only), as the
// first stream at this delay left them; false when none has.
bool voxtral_stream::restore_decoder_silence(int n) {
    if (!silence_reusable()) return false;
    const std::shared_ptr<const decoder_silence> s = m_->silence.decoder(delay_);
    if (!s || s->slots.n_positions != n) return false;
    const auto t0 = std::chrono::steady_clock::now();
    grow_decoder_ring(0, n);
    dec_ring_.claim(0, n);
    runner_.run_once(
        [&](ggml_context * ctx, ggml_cgraph * gf) { dec_ring_.restore_slots(ctx, gf, 0, s->slots.k, s->slots.v); });
    dec_pos_ = n;
    timings_.decoder_ms += ms_since(t0);
    timings_.n_silence_positions_restored += n;
    return true;
}

void voxtral_stream::save_decoder_silence(int n) {
    if (!silence_reusable() || m_->silence.decoder(delay_)) return;
    try { // as save_encoder_silence()
        auto s = std::make_shared<decoder_silence>(dec_ring_, runner_.weights_buft(), n, delay_);
        runner_.run_once(
            [&](ggml_context * ctx, ggml_cgraph * gf) { dec_ring_.save_slots(ctx, gf, 0, s->slots.k, s->slots.v); });
        m_->silence.put(std::move(s));
    } catch (const std::exception &) {
    }
}

void voxtral_stream::compute_ada_scales() {
    ggml_context * ctx = runner_.begin();
    ggml_cgraph * gf = runner_.new_graph(ctx);
    ada_graph g = build_ada_graph(ctx, gf, *m_, dstate_.ada);
    runner_.alloc(gf);
    const std::vector<float> t = delay_time_embedding(*m_, delay_);
    runner_.set(g.t_cond, t.data(), t.size() * sizeof(float));
    runner_.compute(gf);
}

stream_result voxtral_stream::feed(const float * pcm, size_t n) {
    stream_guard guard(busy_);
    stream_check_feed(pcm, n, finished_);
    pcm_.insert(pcm_.end(), pcm, pcm + n);
    samples_received_ += (int64_t) n;
    stream_result out;
    pump(out);
    return out;
}

stream_result voxtral_stream::finish() {
    stream_guard guard(busy_);
    stream_result out;
    if (finished_) {
        out.audio_ms_received = ms_received();
        out.audio_ms_decoded = ms_decoded();
        return out;
    }
    const model_hparams & hp = m_->hp;
    const int64_t spt = hp.samples_per_token();
    right_pad_ = (spt - samples_received_ % spt) % spt + (int64_t) (delay_ + 1 + hp.n_right_pad_extra_tokens) * spt;
    finished_ = true;
    pump(out);
    out.text_tail = text_.flush();
    ended_ = true;
    add_event(out, stream_event_type::STREAM_EVENT_FINISHED);
    return out;
}

void voxtral_stream::pump(stream_result & out) {
    if (broken_) {
        throw std::runtime_error("the stream failed earlier; call reset() to start again");
    }
    try {
        compute_mel_frames();
        while (true) { // the encoder runs at most EMBED_SLOTS tokens ahead of the decoder
            const int64_t encoded = n_audio_;
            run_audio_batches();
            run_decoder(out);
            release_consumed();
            if (n_audio_ == encoded) break;
        }
    } catch (...) {
        broken_ = true; // caches may hold a half-written batch
        throw;
    }
    out.audio_ms_received = ms_received();
    out.audio_ms_decoded = ms_decoded();
}

int64_t voxtral_stream::mel_frames_total() const {
    if (!finished_) return -1;
    const model_hparams & hp = m_->hp;
    const int64_t padded = (int64_t) hp.n_left_pad_tokens * hp.samples_per_token() + samples_received_ + right_pad_;
    return padded / hp.hop_length;
}

int64_t voxtral_stream::audio_tokens_total() const {
    const int64_t t = mel_frames_total();
    return t < 0 ? -1 : t / m_->hp.mel_frames_per_token;
}

void voxtral_stream::compute_mel_frames() {
    const model_hparams & hp = m_->hp;
    const int64_t hop = hp.hop_length, half = hp.n_fft / 2;
    const int64_t left = (int64_t) hp.n_left_pad_tokens * hp.samples_per_token();
    const int64_t audio_end = left + samples_received_; // padded index one past the last real sample
    const int64_t total = mel_frames_total();
    std::vector<float> frame(hp.n_fft), out(hp.n_mel);
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t first = mel_next_;
    while (true) {
        const int64_t f = mel_next_;
        if (total >= 0 ? f >= total : f * hop + half > audio_end) break;
        const int64_t start = f * hop - half;
        for (int64_t i = 0; i < (int64_t) hp.n_fft; ++i) {
            const int64_t s = start + i;
            frame[i] = (s >= left && s < audio_end) ? pcm_[(size_t) (s - pcm_base_)] : 0.0f;
        }
        mel_.compute(frame.data(), out.data());
        mel_pending_.insert(mel_pending_.end(), out.begin(), out.end());
        if (opts_.capture) append_capture(cap_, "mel", out.data(), out.size(), hp.n_mel);
        ++mel_next_;
    }
    timings_.mel_ms += ms_since(t0);
    timings_.n_mel_frames += mel_next_ - first;
}

// Slot of an audio token's embedding: the left-pad (silent) tokens keep theirs for re-anchoring,
// the others go round a ring of EMBED_SLOTS.
int64_t voxtral_stream::embed_slot(int64_t a) const {
    const int64_t n_left = m_->hp.n_left_pad_tokens;
    return a < n_left ? a : n_left + (a - n_left) % EMBED_SLOTS;
}

void voxtral_stream::store_embeds(ggml_context * ctx, ggml_cgraph * gf, ggml_tensor * embeds, int64_t a0, int k,
                                  std::vector<ggml_tensor *> & writes) const {
    ggml_tensor * dst = dstate_.audio_embeds;
    for (int i = 0; i < k;) {
        const int64_t slot = embed_slot(a0 + i);
        int run = 1;
        while (i + run < k && embed_slot(a0 + i + run) == slot + run) ++run;
        ggml_tensor * src = ggml_view_2d(ctx, embeds, embeds->ne[0], run, embeds->nb[1], (size_t) i * embeds->nb[1]);
        ggml_tensor * d = ggml_view_2d(ctx, dst, dst->ne[0], run, dst->nb[1], (size_t) slot * dst->nb[1]);
        ggml_tensor * w = ggml_cpy(ctx, src, d);
        ggml_build_forward_expand(gf, w);
        writes.insert(writes.end(), {d, w});
        i += run;
    }
}

// Whether the encoder ring has the row copy of its values that flash attention reads (model
// permitting), adding and filling it on first use: 126 MB for the full model's F16 caches, only in
// streams that get a large batch. When it cannot be allocated the batches use the products.
bool voxtral_stream::encoder_row_copy() {
    if (!m_->encoder_batch_flash || row_copy_failed_) return false;
    if (enc_ring_.has_row_copy()) return true;
    if (!enc_ring_.add_row_copy(runner_.weights_buft())) {
        row_copy_failed_ = true;
        return false;
    }
    runner_.run_once([&](ggml_context * ctx, ggml_cgraph * gf) { enc_ring_.fill_row_copy(ctx, gf); });
    return true;
}

// The decoder cache starts with DEC_RING_FIRST_SLOTS slots and doubles, before the positions
// pos0..pos0+n-1 need more, up to its capacity (kv_ring growing): a file or a short stream holds
// what it uses (54 MB for the full model's first 512 positions at F16 instead of 0.9 GB), and a new
// stream starts sooner (less to allocate and clear). Kept graphs built on the old tensors are rebuilt.
void voxtral_stream::grow_decoder_ring(int64_t pos0, int n) {
    if (dec_ring_.fits(pos0, n)) return;
    if (!dec_ring_.begin_grow(runner_.weights_buft(), (int) (pos0 + n), STEP_KV_PAD)) {
        throw std::runtime_error("not enough memory for the decoder's cache (" +
                                 std::to_string(2 * dec_ring_.allocated()) + " positions)");
    }
    try {
        runner_.run_once([&](ggml_context * ctx, ggml_cgraph * gf) { dec_ring_.copy_grown(ctx, gf); });
    } catch (...) {
        dec_ring_.finish_grow();
        throw;
    }
    dec_ring_.finish_grow();
}

void voxtral_stream::run_audio_batches() {
    const model_hparams & hp = m_->hp;
    const int64_t n_mel = hp.n_mel, E = hp.enc_n_embd, D = hp.dec_n_embd;
    const int fpt = (int) hp.mel_frames_per_token, epf = (int) hp.downsample_factor;
    const int64_t n_left = hp.n_left_pad_tokens;
    while (true) {
        const int k_avail = (int) (mel_pending_.size() / (size_t) n_mel / fpt);
        if (k_avail == 0) break;
        int k = std::min(k_avail, max_batch_tokens_);
        const int64_t a0 = n_audio_;
        if (a0 < n_silent_) k = std::min<int>(k, n_silent_ - (int) a0); // the silent tokens: a batch of their own
        if (!ended_) { // never overwrite an embedding the decoder has yet to read
            const int64_t limit = std::max(n_left, embeds_base_) + EMBED_SLOTS;
            k = (int) std::min<int64_t>(k, limit - a0);
            if (k <= 0) break;
        }
        const int64_t n_frames = (int64_t) k * fpt, n_enc = (int64_t) k * epf, T_in = 2 + n_frames;
        const auto t0 = std::chrono::steady_clock::now();

        enc_ring_.claim(enc_pos_, (int) n_enc);
        const int n_kv = enc_ring_.padded_n_kv(STEP_KV_PAD);
        // a large batch of real audio (offline, or a stream catching up) may use flash attention;
        // the silent start never does, so its bits are the same whoever computes it
        const bool flash_rows = n_enc >= CPU_FLASH_TILE_QUERIES && a0 >= n_silent_ && encoder_row_copy();
        const int64_t e0 = embed_slot(a0);
        const bool one_run = embed_slot(a0 + k - 1) == e0 + k - 1; // the embedding writes do not wrap
        int graph_slot = SLOT_AUDIO;
        ggml_cgraph * gf = nullptr;
        if (reuse_graphs_ && audio_.gf && audio_.k == k && audio_.n_kv == n_kv && audio_.flash_rows == flash_rows &&
            one_run && enc_ring_.move_writes(audio_.g.writes, enc_pos_, (int) n_enc)) {
            gf = audio_.gf;
            for (ggml_tensor * t : audio_.embed_writes) move_view(t, (size_t) e0 * t->view_src->nb[1]);
        } else {
            const int cap = enc_ring_.capacity();
            const bool keep = one_run && enc_pos_ % cap + n_enc <= cap;
            graph_slot = keep ? SLOT_AUDIO : 0;
            if (keep) audio_.gf = nullptr; // begin() frees its graph: never left dangling if the build throws
            kept_audio fresh;
            ggml_context * ctx = runner_.begin(graph_slot);
            gf = runner_.new_graph(ctx);
            fresh.cg = build_conv_graph(ctx, gf, *m_, k);
            fresh.g = build_encoder_graph(ctx, gf, *m_, enc_ring_, k, enc_pos_, n_kv, fresh.cg.frames, flash_rows);
            store_embeds(ctx, gf, fresh.g.embeds, a0, k, fresh.embed_writes);
            runner_.alloc(gf, graph_slot);
            fresh.gf = gf;
            fresh.k = k;
            fresh.n_kv = n_kv;
            fresh.flash_rows = flash_rows;
            if (keep) {
                audio_ = std::move(fresh);
            } else {
                scratch_audio_ = std::move(fresh);
            }
        }
        const conv_graph & cg = graph_slot == SLOT_AUDIO ? audio_.cg : scratch_audio_.cg;
        const encoder_graph & g = graph_slot == SLOT_AUDIO ? audio_.g : scratch_audio_.g;

        std::vector<float> mel_in((size_t) (T_in * n_mel));
        for (int64_t c = 0; c < n_mel; ++c) {
            float * col = &mel_in[(size_t) (c * T_in)];
            col[0] = mel_prev_[(size_t) c];
            col[1] = mel_prev_[(size_t) (n_mel + c)];
            for (int64_t t = 0; t < n_frames; ++t) col[2 + t] = mel_pending_[(size_t) (t * n_mel + c)];
        }
        runner_.set(cg.mel_in, mel_in.data(), mel_in.size() * sizeof(float));
        runner_.set(cg.conv1_prev, conv1_prev_.data(), conv1_prev_.size() * sizeof(float));
        std::vector<int32_t> pos((size_t) n_enc);
        for (int64_t i = 0; i < n_enc; ++i) pos[(size_t) i] = (int32_t) (enc_pos_ + i);
        runner_.set(g.pos, pos.data(), pos.size() * sizeof(int32_t));
        std::vector<ggml_fp16_t> mask((size_t) n_kv * n_enc);
        enc_ring_.fill_mask(enc_pos_, (int) n_enc, n_kv, mask.data());
        runner_.set(g.mask, mask.data(), mask.size() * sizeof(ggml_fp16_t));

        runner_.compute(gf, graph_slot);
        if (flash_rows) ++timings_.n_flash_audio_batches;

        runner_.get(cg.conv1_last, conv1_prev_.data(), conv1_prev_.size() * sizeof(float));
        if (opts_.capture) {
            std::vector<float> eo((size_t) (E * n_enc)), emb((size_t) (D * k));
            runner_.get(g.enc_out, eo.data(), eo.size() * sizeof(float));
            runner_.get(g.embeds, emb.data(), emb.size() * sizeof(float));
            append_capture(cap_, "enc_out", eo.data(), eo.size(), E);
            append_capture(cap_, "embeds", emb.data(), emb.size(), D);
        }
        std::copy(mel_pending_.begin() + (n_frames - 2) * n_mel, mel_pending_.begin() + n_frames * n_mel,
                  mel_prev_.begin());
        mel_pending_.erase(mel_pending_.begin(), mel_pending_.begin() + n_frames * n_mel);
        enc_pos_ += n_enc;
        n_audio_ += k;
        timings_.audio_ms += ms_since(t0);
        timings_.n_audio_batches += 1;
        timings_.n_audio_tokens += k;
        if (a0 == 0 && k == n_silent_) save_encoder_silence();
    }
}

void voxtral_stream::add_event(stream_result & out, stream_event_type type) {
    out.events.push_back({type, out.new_tokens.size()});
}

int64_t voxtral_stream::audio_index(int64_t pos) const {
    return pos < (int64_t) m_->hp.n_left_pad_tokens ? pos : pos + anchor_shift_;
}

void voxtral_stream::prefill(stream_result & out) {
    const tekken_vocab & voc = m_->voc;
    std::vector<int32_t> prompt((size_t) prompt_len_, voc.streaming_pad_id);
    prompt[0] = voc.bos_id;
    // the positions that read only silent tokens: a batch of their own, or copied (voxtral_silence.h)
    const int n0 = std::min(n_silent_, prompt_len_ - 1);
    if (n0 > 0 && !restore_decoder_silence(n0)) {
        run_positions(0, n0, std::vector<int32_t>(prompt.begin(), prompt.begin() + n0), false);
        save_decoder_silence(n0);
    }
    decode_positions(n0, prompt_len_ - n0, std::vector<int32_t>(prompt.begin() + n0, prompt.end()), out);
}

// Positions are limited (RoPE, max_position). Before reaching the limit, at a pause if one comes,
// else at the limit itself, the decoder starts over with a fresh prompt: silence for the left pad
// and the last d+1 audio embeddings, so its next output is the token that was due anyway.
int64_t voxtral_stream::reanchor_soft_limit() const {
    const int64_t limit = m_->hp.dec_max_position;
    return limit - std::max<int64_t>(1, std::min<int64_t>(4096, limit / 4));
}

bool voxtral_stream::reanchor_due() const {
    return dec_pos_ >= m_->hp.dec_max_position ||
           (dec_pos_ >= reanchor_soft_limit() && quiet_run_ >= QUIET_TOKENS_FOR_REANCHOR);
}

void voxtral_stream::reanchor(stream_result & out) {
    const int64_t next_audio = audio_index(dec_pos_);
    anchor_shift_ = next_audio - delay_ - (int64_t) m_->hp.n_left_pad_tokens;
    dec_ring_.clear();
    dec_pos_ = 0;
    quiet_run_ = 0;
    add_event(out, stream_event_type::STREAM_EVENT_REANCHOR);
    prefill(out);
}

void voxtral_stream::run_decoder(stream_result & out) {
    const int64_t n_avail = n_audio_;
    const int64_t total = audio_tokens_total();
    const int64_t last_audio = total >= 0 ? total - 2 : INT64_MAX; // reference: max_length = n_audio
    if (dec_pos_ == 0 && n_outputs_ == 0) {
        if (n_avail < prompt_len_) return;
        prefill(out);
    }
    while (!ended_ && audio_index(dec_pos_) < n_avail && audio_index(dec_pos_) <= last_audio) {
        if (reanchor_due()) {
            reanchor(out);
            continue;
        }
        // positions whose audio is here beyond this one, short of where a re-anchor could fall
        const int64_t ahead = std::min({std::min(n_avail - 1, last_audio) - audio_index(dec_pos_),
                                        reanchor_soft_limit() - 1 - dec_pos_, (int64_t) draft_});
        if (speculate_ && forced_.empty() && ahead >= 1) {
            int n_draft = DRAFT_SIZES[0]; // the largest draft size that fits: each has its kept graph
            for (int d : DRAFT_SIZES) {
                if (d <= ahead) n_draft = d;
            }
            decode_draft(n_draft, out);
        } else {
            decode_positions(dec_pos_, 1, {next_input_}, out);
        }
    }
}

// Speculative decoding where the audio of several positions is here (offline, or a live stream
// that fell behind): the known input plus `n_draft` guesses that the next inputs repeat it (most
// outputs are runs of [STREAMING_PAD]) go through the decoder in one batch, which costs about one
// step's weight reads; outputs are taken while each guess proves right, the rest is dropped
// from the cache. Greedy-exact: every output taken saw exactly the inputs plain steps would give
// it. The draft length doubles after a fully accepted draft and halves after a miss.
void voxtral_stream::decode_draft(int n_draft, stream_result & out) {
    const int n = 1 + n_draft;
    const int64_t p0 = dec_pos_;
    const std::vector<int32_t> ids((size_t) n, next_input_);
    const std::vector<int32_t> tok = run_positions(p0, n, ids, true);
    int used = 0;
    while (used < n) {
        take_output(p0 + used, tok[(size_t) used], (size_t) used, out);
        ++used;
        if (ended_ || next_input_ != ids[0]) break; // the next guess was wrong (or decoding ended)
    }
    if (used < n) {
        dec_ring_.rewind(p0 + used);
        dec_pos_ = p0 + used;
    }
    timings_.n_draft_positions += n_draft;
    timings_.n_draft_accepted += used - 1;
    draft_ = used == n ? std::min(MAX_DRAFT, 2 * draft_ + 1) : std::max(1, draft_ / 2); // 1, 3, 7, 15
}

// Writes the step mask's entries that differ from what the device holds.
void voxtral_stream::set_step_mask(int64_t pos0, int n_kv) {
    std::vector<ggml_fp16_t> row((size_t) n_kv);
    dec_ring_.fill_mask(pos0, 1, n_kv, row.data());
    if (step_mask_host_.size() < (size_t) n_kv) {
        runner_.set(step_mask_, row.data(), row.size() * sizeof(ggml_fp16_t));
        step_mask_host_ = row;
        return;
    }
    for (int i = 0; i < n_kv;) {
        if (row[(size_t) i] == step_mask_host_[(size_t) i]) {
            ++i;
            continue;
        }
        int j = i;
        while (j < n_kv && row[(size_t) j] != step_mask_host_[(size_t) j]) ++j;
        runner_.set(step_mask_, &row[(size_t) i], (size_t) (j - i) * sizeof(ggml_fp16_t), (size_t) i * sizeof(ggml_fp16_t));
        std::copy(row.begin() + i, row.begin() + j, step_mask_host_.begin() + i);
        i = j;
    }
}

void voxtral_stream::decode_positions(int64_t pos0, int n, const std::vector<int32_t> & ids, stream_result & out) {
    const std::vector<int32_t> tok = run_positions(pos0, n, ids, false);
    take_output(pos0 + n - 1, tok[0], 0, out);
}

// Runs the decoder over positions pos0..pos0+n-1 and returns the argmax at the last one (or at
// each, `all`). Graphs: a one-position step and a draft verification are kept (slots SLOT_STEP,
// SLOT_VERIFY + draft size) while their shape holds; the prompt is built for one compute.
std::vector<int32_t> voxtral_stream::run_positions(int64_t pos0, int n, const std::vector<int32_t> & ids, bool all) {
    const model_hparams & hp = m_->hp;
    const auto t0 = std::chrono::steady_clock::now();
    grow_decoder_ring(pos0, n);
    dec_ring_.claim(pos0, n);
    decoder_graph fresh;
    const decoder_graph * g = &fresh;
    ggml_cgraph * gf = nullptr;
    int graph_slot = 0;
    if (n == 1 || all) { // kept: moved to this position while its width still covers the ring
        int size_index = 0;
        while (n > 1 && DRAFT_SIZES[size_index] + 1 != n) ++size_index; // decode_draft uses these sizes
        kept_step & k = n == 1 ? step_ : verify_[size_index];
        graph_slot = n == 1 ? SLOT_STEP : SLOT_VERIFY + size_index;
        const int n_kv = dec_ring_.padded_n_kv(STEP_KV_PAD);
        if (reuse_graphs_ && k.gf && k.n_kv == n_kv && k.n == n && k.ring_gen == dec_ring_.generation() &&
            dec_ring_.move_writes(k.g.writes, pos0, n)) {
            gf = k.gf;
        } else {
            k.gf = nullptr;
            ggml_context * ctx = runner_.begin(graph_slot);
            gf = runner_.new_graph(ctx);
            k.g = build_decoder_graph(ctx, gf, *m_, dec_ring_, dstate_, n, pos0, n_kv, n == 1 ? step_mask_ : nullptr,
                                      all);
            runner_.alloc(gf, graph_slot);
            k.gf = gf;
            k.n_kv = n_kv;
            k.n = n;
            k.ring_gen = dec_ring_.generation();
        }
        g = &k.g;
    } else { // the prompt
        ggml_context * ctx = runner_.begin();
        gf = runner_.new_graph(ctx);
        fresh = build_decoder_graph(ctx, gf, *m_, dec_ring_, dstate_, n, pos0, dec_ring_.n_used());
        runner_.alloc(gf);
    }
    const int n_kv = (int) g->mask->ne[0];
    if (n == 1) {
        set_step_mask(pos0, n_kv);
    } else {
        std::vector<ggml_fp16_t> mask((size_t) n_kv * n);
        dec_ring_.fill_mask(pos0, n, n_kv, mask.data());
        runner_.set(g->mask, mask.data(), mask.size() * sizeof(ggml_fp16_t));
    }

    runner_.set(g->ids, ids.data(), (size_t) n * sizeof(int32_t));
    std::vector<int32_t> rows((size_t) n), pos((size_t) n);
    for (int i = 0; i < n; ++i) {
        const int64_t p = pos0 + i;
        rows[(size_t) i] = (int32_t) embed_slot(p < (int64_t) hp.n_left_pad_tokens ? p : audio_index(p));
        pos[(size_t) i] = (int32_t) p;
    }
    runner_.set(g->audio_rows, rows.data(), rows.size() * sizeof(int32_t));
    runner_.set(g->pos, pos.data(), pos.size() * sizeof(int32_t));

    runner_.compute(gf, graph_slot);

    std::vector<int32_t> tok(all ? (size_t) n : 1);
    runner_.get(g->token, tok.data(), tok.size() * sizeof(int32_t));
    if (opts_.capture) {
        last_logits_.resize(tok.size() * (size_t) hp.dec_n_vocab);
        runner_.get(g->logits, last_logits_.data(), last_logits_.size() * sizeof(float));
    }
    dec_pos_ = pos0 + n;
    timings_.decoder_ms += ms_since(t0);
    timings_.n_decoder_calls += 1;
    timings_.n_decoder_positions += n;
    return tok;
}

// The output `tok` at position `pos` (row `row` of the last captured logits).
void voxtral_stream::take_output(int64_t pos, int32_t tok, size_t row, stream_result & out) {
    const model_hparams & hp = m_->hp;
    const size_t j = n_outputs_++;
    // the output at position p is the token of audio token (p - d) (padded), i.e. real index below
    const int64_t audio_slot = audio_index(pos) - delay_ - (int64_t) hp.n_left_pad_tokens;
    const int64_t time_ms = audio_slot * (int64_t) hp.samples_per_token() * 1000 / hp.sample_rate;
    if (opts_.capture) {
        append_capture(cap_, "logits", last_logits_.data() + row * hp.dec_n_vocab, hp.dec_n_vocab, hp.dec_n_vocab);
    }
    const bool forced = j < forced_.size();
    const int32_t eos = m_->voc.eos_id;
    quiet_run_ = (tok == eos || m_->voc.is_control(tok)) ? quiet_run_ + 1 : 0;
    if (tok == eos) {
        if ((opts_.stop_at_end_of_utterance || finished_) && !forced) {
            ended_ = true;
            return;
        }
        if (!forced) add_event(out, stream_event_type::STREAM_EVENT_END_OF_UTTERANCE);
        next_input_ = m_->voc.streaming_pad_id;
    } else {
        generated_.push_back(tok);
        // tekken decodes each run of text tokens on its own: a control token ends the run.
        const std::string piece = m_->voc.is_control(tok) ? text_.flush() : text_.push(m_->voc.token_bytes(tok));
        out.new_tokens.push_back({tok, time_ms, piece, m_->voc.is_control(tok)});
        next_input_ = tok;
    }
    if (forced) next_input_ = forced_[j];
}

void voxtral_stream::release_consumed() {
    // keep the last d+1 consumed embeddings: a re-anchor prompt needs them
    embeds_base_ = std::max(embeds_base_, std::min(n_audio_, audio_index(dec_pos_) - delay_));
    const model_hparams & hp = m_->hp;
    const int64_t keep_from = mel_next_ * (int64_t) hp.hop_length - (int64_t) hp.n_fft / 2;
    const int64_t drop = std::min<int64_t>(keep_from - pcm_base_, (int64_t) pcm_.size());
    if (drop >= PCM_RELEASE_CHUNK || (drop > 0 && finished_)) {
        pcm_.erase(pcm_.begin(), pcm_.begin() + drop);
        pcm_base_ += drop;
    }
}

int64_t voxtral_stream::ms_received() const {
    return samples_received_ * 1000 / m_->hp.sample_rate;
}

int64_t voxtral_stream::ms_decoded() const {
    const int64_t tok_ms = (int64_t) m_->hp.samples_per_token() * 1000 / m_->hp.sample_rate;
    const int64_t ms = (audio_index(dec_pos_) - (int64_t) m_->hp.n_left_pad_tokens) * tok_ms;
    return std::max<int64_t>(0, std::min(ms, ms_received()));
}

size_t voxtral_stream::state_bytes() const {
    size_t b = enc_ring_.bytes() + dec_ring_.bytes() + dev_.bytes();
    b += pcm_.capacity() * sizeof(float) + mel_pending_.capacity() * sizeof(float);
    return b;
}

} // namespace captionist
