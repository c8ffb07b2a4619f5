// backend_registry.h - which ggml backends this process can use, and the CPU backend's knobs.
//
// ggml may be built with its backends as loadable modules (GGML_BACKEND_DL: one libggml-cpu-<variant>
// per instruction set, picked by score at run time, plus GPU modules such as Vulkan or CUDA whose
// loading fails quietly when their driver is missing) or linked in. backend_init_once() loads the
// modules that sit beside libggml itself, so it works the same from a wheel, an installer or a build
// tree. The CPU backend's thread controls are reached through its registry entry points rather than
// ggml-cpu.h, so the engine links only ggml and ggml-base either way.
#pragma once

#include <ggml-backend.h>
#include <ggml.h>

#include <string>
#include <vector>

namespace captionist {

// Installs ggml's log callback and loads every backend module (idempotent, thread-safe); loads nothing
// when a CPU backend is registered already (linked in, or loaded by load_cpu_backend).
void backend_init_once();

// The device for `want` ("auto", "cpu", or a backend name such as "vulkan", "cuda", "metal");
// throws std::runtime_error naming what is available.
ggml_backend_dev_t pick_device(const std::string & want);

// The CPU backend's feature string ("AVX2 FMA F16C ..." and the variant's name when it reports one).
std::string cpu_backend_features();

// The CPU backend's extra buffer types (ggml's repacked layouts), in its order of preference, without
// AMX's (see the .cpp); none when CAPTIONIST_NO_REPACK is set.
std::vector<ggml_backend_buffer_type_t> cpu_extra_bufts();

// CPU backend controls; no-ops for other backends.
void cpu_set_n_threads(ggml_backend_t backend, int n_threads);
// A threadpool for `n_threads` (nullptr when the CPU backend does not offer one); poll is 0..100,
// negative for ggml's default.
ggml_threadpool * cpu_threadpool_new(int n_threads, int poll);
void cpu_threadpool_free(ggml_threadpool * tp);
void cpu_set_threadpool(ggml_backend_t backend, ggml_threadpool * tp);

} // namespace captionist
