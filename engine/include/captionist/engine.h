// captionist/engine.h - the Captionist speech engine (Voxtral Mini 4B Realtime 2602 on ggml).
//
// Usage:
//   captionist::model_load_options opts;            // backend "auto" | "cpu" | "metal" | "cuda"
//   auto m = captionist::model_load("model.gguf", opts);
//   captionist::stream s(m, {/*num_delay_tokens*/ 6});
//   auto u = s.feed(pcm, n);                        // 16 kHz mono float, any chunk size
//   u = s.finish();                                 // right pad, decode to the end
//   for (auto & t : s.token_ids()) ...
//
// Thread safety: a model is immutable after model_load and may be shared by any number of
// threads. A stream (its caches, backend instances and scheduler) is owned by one thread at a time.
// Errors: bad files and inputs throw std::runtime_error / std::invalid_argument with a message that
// names the problem; the engine never calls exit() or abort() on bad input.
#pragma once

#include "../../src/model.h"
#include "../../src/quantize.h"
#include "../../src/stream.h"
