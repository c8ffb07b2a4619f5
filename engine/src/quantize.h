// quantize.h - rewrite a Captionist GGUF with quantized matrices (ggml's quantization routines).
//
// quantize_model() is declared in the public header (captionist/engine.h). Which tensors are
// quantized is each architecture's rule (engine/GGUF.md): Voxtral's linear layers and token
// embedding; every FastConformer linear layer. Norms, biases, conv kernels, ada-norm and frontend
// tables keep their type; a matrix whose rows do not fit the block size falls back to Q8_0, then
// F16. *_M mixes give the token embedding, attn_v and some ffn down-projections Q6_K. Works
// row-chunk by row-chunk (bounded memory).
#pragma once

#include <captionist/engine.h>
