// graph_copy.h - a copy into a strided view of a cache, written so that every backend honours the
// view's strides.
#pragma once

#include <ggml.h>

namespace captionist {

// ggml_cpy(src, dst) for `dst`, a strided view of a tensor (a cache's slots), and `src`, any view
// of the same number of elements (e.g. new values transposed into the columns of a value cache).
//
// In device memory the source is first made contiguous and flat: ggml's CUDA backend (0.20.2, and
// upstream until ggml-org/ggml#1497 is fixed) sends a copy whose source has element-sized row
// strides, as a transposed view or a single column has, to a transposed-copy kernel that writes
// the destination as if it were contiguous, ignoring its strides. A transposed value-cache write
// then lands in the wrong slots and the attention reads garbage. A flat source has rows as long
// as the whole copy, never element-sized, so the copy takes the kernel that follows the strides.
// In host memory (the CPU backend) the copy is left as it is.
ggml_tensor * copy_into_view(ggml_context * ctx, ggml_tensor * src, ggml_tensor * dst);

} // namespace captionist
