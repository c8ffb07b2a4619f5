#include "voxtral_silence.h"

#include "kv_ring.h"
#include "voxtral_model.h"

#include <algorithm>

namespace captionist {

int silent_tokens(const model_hparams & hp) {
    // token t holds mel frames fpt*t .. fpt*t+fpt-1; frame f reads samples f*hop - n_fft/2 .. + n_fft - 1
    // of the padded signal, whose real samples start at n_left_pad_tokens * samples_per_token
    const int64_t left = (int64_t) hp.n_left_pad_tokens * hp.samples_per_token();
    const int64_t fpt = hp.mel_frames_per_token, hop = hp.hop_length, half = hp.n_fft / 2;
    int t = 0;
    while (t < (int) hp.n_left_pad_tokens && (fpt * (t + 1) - 1) * hop - half + (int64_t) hp.n_fft <= left) ++t;
    return t;
}

saved_slots::saved_slots(const kv_ring & ring, int n_positions, int extra_tensors)
    : dev(2 * ring.n_layer() + extra_tensors), n_positions(n_positions) {
    const kv_ring::shape ks = ring.slot_shape(false, n_positions), vs = ring.slot_shape(true, n_positions);
    for (int il = 0; il < ring.n_layer(); ++il) {
        k.push_back(dev.add(ring.type(), ks.ne0, ks.ne1, "silence_k"));
        v.push_back(dev.add(ring.type(), vs.ne0, vs.ne1, "silence_v"));
    }
}

encoder_silence::encoder_silence(const kv_ring & ring, ggml_backend_buffer_type_t buft, int n_positions, int n_tokens,
                                 int64_t n_embd)
    : slots(ring, n_positions, 1), n_tokens(n_tokens) {
    embeds = slots.dev.add(GGML_TYPE_F32, n_embd, n_tokens, "silence_embeds");
    slots.dev.alloc(buft);
}

decoder_silence::decoder_silence(const kv_ring & ring, ggml_backend_buffer_type_t buft, int n_positions, int delay)
    : slots(ring, n_positions, 0), delay(delay) {
    slots.dev.alloc(buft);
}

std::shared_ptr<const encoder_silence> silence_cache::encoder() const {
    std::lock_guard<std::mutex> lock(mu_);
    return enc_;
}

std::shared_ptr<const decoder_silence> silence_cache::decoder(int delay) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto & d : dec_) {
        if (d->delay == delay) return d;
    }
    return nullptr;
}

void silence_cache::put(std::shared_ptr<const encoder_silence> e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!enc_) enc_ = std::move(e);
}

void silence_cache::put(std::shared_ptr<const decoder_silence> d) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto & have : dec_) {
        if (have->delay == d->delay) return;
    }
    if (dec_.size() >= MAX_DECODER_PREFIXES) dec_.erase(dec_.begin());
    dec_.push_back(std::move(d));
}

} // namespace captionist
