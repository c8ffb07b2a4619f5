#include "fc_stream.h"

#include "env_flag.h"
#include "fc_decoder.h"
#include "fc_encoder.h"
#include "fc_model.h"
#include "stream_guard.h"
#include "utf8_assembler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace captionist {

namespace {

// graph_runner slots: 0 for graphs built for one compute, then the kept ones
constexpr int SLOT_ENCODER = 1;
constexpr int SLOT_JOINT = 2;      // without a prediction step
constexpr int SLOT_JOINT_STEP = 3; // with one

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void append_capture(stream_capture & cap, const char * name, const float * data, size_t n, int64_t cols) {
    stream_capture_array & a = cap[name];
    a.cols = cols;
    a.data.insert(a.data.end(), data, data + n);
}

} // namespace

fc_stream::fc_stream(std::shared_ptr<const fc_model> m, const stream_options & opts)
    : m_(std::move(m)), opts_(opts), runner_(*m_), frontend_(*m_) {
    reuse_graphs_ = !env_flag("CAPTIONIST_NO_GRAPH_REUSE");
    configure(opts);
    restart();
}

void fc_stream::configure(const stream_options & opts) {
    const uint32_t lookahead = opts.latency_ms == 0 && state_.k.size() ? lookahead_ : m_->lookahead_for(opts.latency_ms);
    const int32_t prompt = opts.language.empty() && state_.k.size() ? prompt_ : m_->prompt_for(opts.language);
    if (!opts.language.empty()) language_ = opts.language;
    if (language_.empty()) language_ = m_->info().default_language;
    prompt_ = prompt;
    opts_.stop_at_end_of_utterance = opts.stop_at_end_of_utterance;
    opts_.capture = opts.capture;
    drop_kept_graphs(); // they hold the old geometry's tensors or the old language
    if (state_.k.empty() || lookahead != lookahead_) {
        lookahead_ = lookahead;
        state_.init(*m_, runner_.weights_buft(), fc_geometry::make((int) lookahead, (int) m_->hp.left_context));
        compute_pos_tables();
    }
}

void fc_stream::drop_kept_graphs() {
    kept_enc_gf_ = nullptr;
    kept_enc_ = fc_encoder_graph();
    for (kept_joint & k : kept_joint_) k = kept_joint();
}

void fc_stream::compute_pos_tables() {
    ggml_context * ctx = runner_.begin();
    ggml_cgraph * gf = runner_.new_graph(ctx);
    fc_pos_graph g = build_fc_pos_graph(ctx, gf, *m_, state_);
    runner_.alloc(gf);
    const std::vector<float> pe = fc_pos_embedding(*m_, state_.geo.rel_top, state_.geo.n_rel);
    runner_.set(g.pe, pe.data(), pe.size() * sizeof(float));
    runner_.compute(gf);
}

void fc_stream::restart() {
    frontend_.reset();
    state_.clear();
    enc_next_ = 0;
    dec_frame_ = 0;
    sym_at_frame_ = 0;
    need_step_ = true;
    last_token_ = (int32_t) m_->hp.blank_id;
    generated_.clear();
    text_started_ = false;
    byte_run_.clear();
    finished_ = false;
    ended_ = false;
    broken_ = false;
    captured_frames_ = 0;
    cap_.clear();
    timings_ = fc_timings();
}

void fc_stream::reset(const stream_options & opts) {
    stream_guard guard(busy_);
    configure(opts);
    restart();
}

void fc_stream::set_forced_tokens(std::vector<int32_t>) {
    throw std::invalid_argument("teacher forcing is not supported by FastConformer streams");
}

int fc_stream::latency_ms() const {
    return m_->latency_ms_of(lookahead_);
}

stream_result fc_stream::feed(const float * pcm, size_t n) {
    stream_guard guard(busy_);
    stream_check_feed(pcm, n, finished_);
    stream_result out;
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t before = frontend_.n_frames();
    frontend_.push(pcm, n);
    timings_.mel_ms += ms_since(t0);
    timings_.n_mel_frames += frontend_.n_frames() - before;
    pump(out);
    return out;
}

stream_result fc_stream::finish() {
    stream_guard guard(busy_);
    stream_result out;
    if (finished_) {
        out.audio_ms_received = ms_received();
        out.audio_ms_decoded = ms_decoded();
        return out;
    }
    const int64_t before = frontend_.n_frames();
    frontend_.finish();
    timings_.n_mel_frames += frontend_.n_frames() - before;
    finished_ = true;
    pump(out);
    out.text_tail = flush_bytes();
    out.events.push_back({stream_event_type::STREAM_EVENT_FINISHED, out.new_tokens.size()});
    return out;
}

void fc_stream::pump(stream_result & out) {
    if (broken_) {
        throw std::runtime_error("the stream failed earlier; call reset() to start again");
    }
    try {
        if (opts_.capture) capture_features();
        std::vector<float> joint_enc;
        while (true) {
            const int64_t ready = encoder_frames_ready() - enc_next_;
            const int n = (int) std::min<int64_t>(ready, state_.geo.max_batch);
            if (n <= 0) break;
            const int64_t p0 = enc_next_;
            run_encoder_batch(p0, n, joint_enc);
            enc_next_ += n;
            if (!ended_) decode_frames(joint_enc, p0, n, out);
            frontend_.release_before(fc_sub_ranges(m_->hp, enc_next_, 1)[0].lo);
        }
    } catch (...) {
        broken_ = true; // caches may hold a half-written batch
        throw;
    }
    out.audio_ms_received = ms_received();
    out.audio_ms_decoded = ms_decoded();
}

int64_t fc_stream::stage_valid_length(int stage) const {
    int64_t len = frontend_.n_valid();
    for (int s = 0; s < stage; ++s) len = m_->hp.sub_stage_length(len);
    return len;
}

int64_t fc_stream::encoder_frames_ready() const {
    if (finished_) {
        return frontend_.n_valid() > 0 ? stage_valid_length((int) m_->hp.sub_stages()) : 0;
    }
    const int64_t n_mel = frontend_.n_frames();
    if (n_mel == 0) return 0;
    const int64_t t_avail = (n_mel - 1) / m_->hp.sub_factor + 1; // frame t reads mel frames up to sub_factor * t
    const int64_t chunk = state_.geo.chunk;
    return t_avail / chunk * chunk;
}

void fc_stream::fill_mel_window(int64_t lo, int64_t count, std::vector<float> & out) const {
    const fc_hparams & hp = m_->hp;
    const int64_t n_mel = hp.n_mel, pad_lo = hp.sub_kernel - 1;
    const int64_t width = n_mel + pad_lo + hp.sub_stride - 1;
    out.assign((size_t) (width * count), 0.0f);
    for (int64_t i = 0; i < count; ++i) {
        const int64_t f = lo + i;
        if (f < 0 || f >= frontend_.n_frames()) continue; // causal padding / past the end
        const float * src = frontend_.frame(f);
        std::copy(src, src + n_mel, out.begin() + (size_t) (i * width + pad_lo));
    }
}

void fc_stream::run_encoder_batch(int64_t p0, int n, std::vector<float> & joint_enc) {
    const fc_hparams & hp = m_->hp;
    const fc_geometry & geo = state_.geo;
    const auto t0 = std::chrono::steady_clock::now();
    const int n_cache = (int) std::min<int64_t>(p0, geo.max_cache);
    // A whole chunk against a full cache is the steady state: its graph is built once and moved
    // along the rings; anything else (the first chunks, catch-up batches, the tail) is built anew.
    const bool steady = reuse_graphs_ && !opts_.capture && n == geo.chunk && n_cache == geo.max_cache;
    fc_encoder_graph fresh;
    fc_encoder_graph * gp = &fresh;
    ggml_cgraph * gf = nullptr;
    int slot = 0;
    if (steady && kept_enc_gf_ && fc_move_ring_views(kept_enc_, state_, p0, n, n_cache)) {
        gf = kept_enc_gf_;
        gp = &kept_enc_;
        slot = SLOT_ENCODER;
    } else {
        slot = steady ? SLOT_ENCODER : 0;
        if (steady) kept_enc_gf_ = nullptr; // slot 1 is rebuilt; other batches leave it kept
        ggml_context * ctx = runner_.begin(slot);
        gf = runner_.new_graph(ctx);
        *gp = build_fc_encoder_graph(ctx, gf, *m_, state_, p0, n, n_cache, prompt_, opts_.capture);
        runner_.alloc(gf, slot);
        if (steady && gp->movable) {
            kept_enc_ = *gp;
            gp = &kept_enc_;
            kept_enc_gf_ = gf;
        }
        timings_.graph_ms += ms_since(t0);
    }
    const fc_encoder_graph & g = *gp;

    const std::vector<fc_sub_range> ranges = fc_sub_ranges(hp, p0, n);
    std::vector<float> buf;
    fill_mel_window(ranges[0].lo, ranges[0].count, buf);
    runner_.set(g.mel, buf.data(), buf.size() * sizeof(float));
    for (size_t s = 0; s < g.sub_masks.size(); ++s) {
        const fc_sub_range & r = ranges[s + 1];
        const int64_t valid = finished_ ? stage_valid_length((int) s + 1) : std::numeric_limits<int64_t>::max();
        buf.assign((size_t) r.count, 0.0f);
        for (int64_t i = 0; i < r.count; ++i) buf[(size_t) i] = (r.lo + i >= 0 && r.lo + i < valid) ? 1.0f : 0.0f;
        runner_.set(g.sub_masks[s], buf.data(), buf.size() * sizeof(float));
    }
    // chunked-limited attention: a query sees keys of its own chunk and of the left_chunks before it
    const int W = n_cache + n;
    const float neg_inf = -std::numeric_limits<float>::infinity();
    buf.assign((size_t) W * n, 0.0f);
    for (int i = 0; i < n; ++i) {
        const int64_t qc = (p0 + i) / geo.chunk;
        for (int j = 0; j < W; ++j) {
            const int64_t kc = (p0 - n_cache + j) / geo.chunk;
            buf[(size_t) i * W + j] = (kc <= qc && kc >= qc - geo.left_chunks) ? 0.0f : neg_inf;
        }
    }
    runner_.set(g.attn_mask, buf.data(), buf.size() * sizeof(float));

    runner_.compute(gf, slot);

    joint_enc.resize((size_t) hp.joint_n_embd * n);
    runner_.get(g.joint_enc, joint_enc.data(), joint_enc.size() * sizeof(float));
    if (opts_.capture) {
        std::vector<float> x((size_t) hp.n_embd * n);
        runner_.get(g.enc_in, x.data(), x.size() * sizeof(float));
        append_capture(cap_, "encoder_input", x.data(), x.size(), hp.n_embd);
        runner_.get(g.enc_out, x.data(), x.size() * sizeof(float));
        append_capture(cap_, "encoder_out", x.data(), x.size(), hp.n_embd);
        append_capture(cap_, "joint_enc", joint_enc.data(), joint_enc.size(), hp.joint_n_embd);
    }
    timings_.encoder_ms += ms_since(t0);
    timings_.n_encoder_frames += n;
    timings_.n_encoder_batches += 1;
}

// Greedy RNN-T over frames [p0, p0 + n): blank moves to the next frame; a token is emitted, read by
// the prediction network, and scored again at the same frame, at most max_symbols times per frame.
void fc_stream::decode_frames(const std::vector<float> & joint_enc, int64_t p0, int n, stream_result & out) {
    const fc_hparams & hp = m_->hp;
    const int64_t J = hp.joint_n_embd, end = p0 + n;
    const auto t0 = std::chrono::steady_clock::now();
    const int width = state_.geo.chunk; // frames per kept joint graph
    std::vector<int32_t> best;
    std::vector<float> frames;
    while (!ended_) {
        if (sym_at_frame_ >= (int) hp.max_symbols) {
            ++dec_frame_;
            sym_at_frame_ = 0;
        }
        if (dec_frame_ >= end) break;
        const int n_left = (int) (end - dec_frame_);
        const bool first = opts_.capture && cap_.find("first_logits") == cap_.end();
        const float * src = joint_enc.data() + (size_t) ((dec_frame_ - p0) * J);
        int cnt = n_left;
        fc_joint_graph g;
        if (reuse_graphs_ && !first) {
            // the kept graph for this step kind scores `width` frames; the unused ones are zeros
            cnt = std::min(n_left, width);
            const int slot = need_step_ ? SLOT_JOINT_STEP : SLOT_JOINT;
            kept_joint & k = kept_joint_[need_step_ ? 1 : 0];
            if (!k.gf) {
                const auto tb = std::chrono::steady_clock::now();
                ggml_context * ctx = runner_.begin(slot);
                k.gf = runner_.new_graph(ctx);
                k.g = build_fc_joint_graph(ctx, k.gf, *m_, state_, need_step_, width, false);
                runner_.alloc(k.gf, slot);
                timings_.graph_ms += ms_since(tb);
            }
            g = k.g;
            frames.assign((size_t) width * J, 0.0f);
            std::copy(src, src + (size_t) cnt * J, frames.begin());
            if (g.token) runner_.set(g.token, &last_token_, sizeof(int32_t));
            runner_.set(g.frames, frames.data(), frames.size() * sizeof(float));
            runner_.compute(k.gf, slot);
            best.resize((size_t) width);
        } else {
            const auto tb = std::chrono::steady_clock::now();
            ggml_context * ctx = runner_.begin();
            ggml_cgraph * gf = runner_.new_graph(ctx);
            g = build_fc_joint_graph(ctx, gf, *m_, state_, need_step_, n_left, first);
            runner_.alloc(gf);
            timings_.graph_ms += ms_since(tb);
            if (g.token) runner_.set(g.token, &last_token_, sizeof(int32_t));
            runner_.set(g.frames, src, (size_t) (n_left * J) * sizeof(float));
            runner_.compute(gf);
            best.resize((size_t) n_left);
        }
        need_step_ = false;
        timings_.n_joint_calls += 1;
        runner_.get(g.best, best.data(), best.size() * sizeof(int32_t));
        if (first) {
            std::vector<float> logits(hp.n_vocab);
            runner_.get(g.logits, logits.data(), logits.size() * sizeof(float));
            append_capture(cap_, "first_logits", logits.data(), logits.size(), hp.n_vocab);
        }
        int u = 0;
        while (u < cnt && best[(size_t) u] == (int32_t) hp.blank_id) ++u;
        if (u == cnt) { // all blank: on past these frames
            dec_frame_ += cnt;
            sym_at_frame_ = 0;
            continue;
        }
        if (u > 0) {
            dec_frame_ += u;
            sym_at_frame_ = 0;
        }
        emit(best[(size_t) u], dec_frame_, out);
    }
    timings_.decoder_ms += ms_since(t0);
}

void fc_stream::emit(int32_t tok, int64_t frame, stream_result & out) {
    ++sym_at_frame_;
    need_step_ = true;
    last_token_ = tok;
    generated_.push_back(tok);
    timings_.n_tokens += 1;
    std::string piece = text_of(tok);
    if (!text_started_ && !piece.empty()) {
        if (piece[0] == ' ') piece.erase(0, 1); // the transcript's first word has no leading space
        text_started_ = true;
    }
    const int64_t time_ms = frame * m_->hp.frame_ms();
    out.new_tokens.push_back({tok, time_ms, piece, m_->voc.is_control(tok)});
    if (tok == m_->voc.eou_id) {
        out.events.push_back({stream_event_type::STREAM_EVENT_END_OF_UTTERANCE, out.new_tokens.size()});
        if (opts_.stop_at_end_of_utterance) ended_ = true;
    }
}

// As the references decode (tokenizers' ByteFallback, SentencePiece): a run of byte pieces is one
// UTF-8 string if it is valid, else one U+FFFD per byte; control pieces do not interrupt a run.
std::string fc_stream::text_of(int32_t tok) {
    if (m_->voc.is_byte(tok)) {
        byte_run_ += m_->voc.token_bytes(tok);
        return {};
    }
    if (m_->voc.is_control(tok)) return {};
    return flush_bytes() + m_->voc.token_bytes(tok);
}

std::string fc_stream::flush_bytes() {
    std::string out;
    if (byte_run_.empty()) return out;
    utf8_assembler check;
    const std::string decoded = check.push(byte_run_) + check.flush();
    if (decoded == byte_run_) {
        out = byte_run_;
    } else {
        for (size_t i = 0; i < byte_run_.size(); ++i) out += "\xEF\xBF\xBD";
    }
    byte_run_.clear();
    return out;
}

void fc_stream::capture_features() {
    const int64_t n_mel = m_->hp.n_mel;
    for (; captured_frames_ < frontend_.n_frames(); ++captured_frames_) {
        append_capture(cap_, "features", frontend_.frame(captured_frames_), (size_t) n_mel, n_mel);
    }
}

int64_t fc_stream::ms_received() const {
    return frontend_.n_samples() * 1000 / m_->hp.sample_rate;
}

int64_t fc_stream::ms_decoded() const {
    if (finished_) return ms_received();
    return std::min(ms_received(), dec_frame_ * (int64_t) m_->hp.frame_ms());
}

size_t fc_stream::state_bytes() const {
    return state_.bytes() + frontend_.bytes();
}

std::map<std::string, double> fc_stream::timings() const {
    const fc_timings & t = timings_;
    std::map<std::string, double> out = {{"mel_ms", t.mel_ms},
                                         {"encoder_ms", t.encoder_ms},
                                         {"decoder_ms", t.decoder_ms},
                                         {"graph_ms", t.graph_ms},
                                         {"n_mel_frames", (double) t.n_mel_frames},
                                         {"n_encoder_frames", (double) t.n_encoder_frames},
                                         {"n_encoder_batches", (double) t.n_encoder_batches},
                                         {"n_joint_calls", (double) t.n_joint_calls},
                                         {"n_tokens", (double) t.n_tokens}};
    runner_.add_counters(out);
    return out;
}

} // namespace captionist
