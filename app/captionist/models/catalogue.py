"""What can be downloaded: the models' hub entries, what each is good for, and their quantizations.

Usage::

    from captionist.models.catalogue import CATALOGUE, NEMOTRON_STREAMING, by_key
    entry = NEMOTRON_STREAMING
    entry.quantization("Q8_0").file_gb, entry.quantization("Q8_0").ram_gb
    entry.layouts                      # which files of the repository to fetch (data, not code)

Sizes come from one rule (``quantized_gb``): parameters that a quantization converts times its
bytes per weight, plus the small tensors every file keeps in F32; the RAM a live stream needs adds
the model's caches and compute buffers (``runtime_gb``). The figures are estimates for choosing,
not measurements.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatch

# Bytes per weight of each type (ggml block sizes: Q8_0 34 B / 32 weights, Q6_K 210 B / 256,
# Q5_K 176 B / 256, Q4_K 144 B / 256; the _M mixes keep some matrices at Q6_K).
BYTES_PER_WEIGHT = {
    "F16": 2.0,
    "Q8_0": 34 / 32,
    "Q6_K": 210 / 256,
    "Q5_K_M": 5.7 / 8,
    "Q5_K": 176 / 256,
    "Q4_K_M": 4.85 / 8,
    "Q4_K": 144 / 256,
}

NOTES = {
    "F16": "reference quality",
    "Q8_0": "near-lossless",
    "Q6_K": "very close to Q8_0",
    "Q5_K_M": "good balance",
    "Q5_K": "good balance",
    "Q4_K_M": "smallest and fastest; slightly less accurate",
    "Q4_K": "smallest; slightly less accurate",
}


def quantized_gb(params_b: float, kept_f32_params_b: float, type_name: str) -> float:
    """Approximate GGUF size in GB: ``params_b`` billion weights, of which ``kept_f32_params_b``
    (norms, biases, convolution kernels, frontend tables) stay F32 in every file type."""
    quantized = max(0.0, params_b - kept_f32_params_b)
    return quantized * BYTES_PER_WEIGHT[type_name] + kept_f32_params_b * 4.0


@dataclass(frozen=True)
class Quantization:
    type_name: str  # as captionist.engine.quantize takes it
    file_gb: float  # approximate size of the GGUF
    ram_gb: float  # approximate memory needed to run it live
    note: str


@dataclass(frozen=True)
class FileLayout:
    """One way a repository holds a checkpoint: glob patterns of the files to fetch.

    ``convert_from``: the pattern of the one file the converter reads (a NeMo ``.nemo`` archive);
    None: the converter reads the download folder.
    """

    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    convert_from: str | None = None

    def matches(self, names: set[str]) -> bool:
        return all(any(fnmatch(n, pattern) for n in names) for pattern in self.required)

    def select(self, names: set[str]) -> set[str]:
        return {n for n in names if any(fnmatch(n, p) for p in self.required + self.optional)}


@dataclass(frozen=True)
class CatalogueEntry:
    key: str
    title: str
    family: str  # display name of the model family
    repo_id: str
    revision: str | None
    download_gb: float  # approximate
    license: str
    params_b: float  # billions of parameters
    kept_f32_params_b: float
    runtime_gb: float  # caches and compute buffers of one live stream
    quantization_types: tuple[str, ...]
    default_quantization: str
    layouts: tuple[FileLayout, ...]  # the first one the repository has is fetched
    languages: str  # what it understands
    punctuation: bool
    end_of_utterance: bool
    latencies: str  # the latency choices, as shown to the user
    speed: str
    good_for: str

    @property
    def quantizations(self) -> tuple[Quantization, ...]:
        out = []
        for name in self.quantization_types:
            file_gb = quantized_gb(self.params_b, self.kept_f32_params_b, name)
            out.append(Quantization(name, file_gb, file_gb + self.runtime_gb, NOTES[name]))
        return tuple(out)

    def quantization(self, type_name: str) -> Quantization:
        for q in self.quantizations:
            if q.type_name == type_name:
                return q
        names = ", ".join(self.quantization_types)
        raise ValueError(f"unknown quantization {type_name!r}; choose one of {names}")

    def file_name(self, type_name: str) -> str:
        return f"{self.key}-{type_name.lower()}.gguf"

    def quantization_of_file(self, file_name: str) -> str | None:
        """The quantization of one of this entry's installed files (``file_name``), else None."""
        for name in self.quantization_types:
            if file_name == self.file_name(name):
                return name
        return None

    @property
    def features(self) -> str:
        """What it offers, in one line."""
        parts = [
            self.languages,
            "punctuation and capitals" if self.punctuation else "lower case, no punctuation",
        ]
        if self.end_of_utterance:
            parts.append("marks the end of each utterance")
        parts.append(f"latency: {self.latencies}")
        return "; ".join(parts)


HF_CONFIGS = ("generation_config.json", "preprocessor_config.json", "processor_config.json")

# ~4.45 B parameters (encoder ~0.6 B, decoder ~3.4 B, embeddings); a live stream adds KV caches
# and compute buffers of ~0.9 GB.
VOXTRAL_REALTIME = CatalogueEntry(
    key="voxtral-mini-4b-realtime",
    title="Voxtral Mini 4B Realtime",
    family="Voxtral",
    repo_id="mistralai/Voxtral-Mini-4B-Realtime-2602",
    revision=None,
    download_gb=8.9,
    license="Apache-2.0",
    params_b=4.45,
    kept_f32_params_b=0.0,
    runtime_gb=0.9,
    quantization_types=("F16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M"),
    default_quantization="Q4_K_M",
    layouts=(
        FileLayout(("params.json", "consolidated*.safetensors", "tekken.json")),  # Mistral's own
        FileLayout(("config.json", "model*.safetensors", "tekken.json"), ("model*.index.json", *HF_CONFIGS)),
    ),
    languages="13 languages, recognised automatically",
    punctuation=True,
    end_of_utterance=True,
    latencies="80–2400 ms",
    speed="needs a GPU (or a fast many-core CPU) to keep up live",
    good_for="the most accurate captions and many languages, on a computer with a GPU",
)

# FastConformer RNN-T, 24 x 1024 encoder + 2-layer LSTM: ~0.6 B parameters, ~10 M of them F32.
NEMOTRON_STREAMING = CatalogueEntry(
    key="nemotron-speech-streaming-0.6b",
    title="Nemotron Speech Streaming 0.6B",
    family="FastConformer",
    repo_id="nvidia/nemotron-speech-streaming-en-0.6b",
    revision=None,
    download_gb=2.4,
    license="NVIDIA Open Model License",
    params_b=0.6,
    kept_f32_params_b=0.01,
    runtime_gb=0.3,
    quantization_types=("F16", "Q8_0", "Q4_K"),
    default_quantization="Q8_0",
    layouts=(
        FileLayout(
            ("config.json", "model*.safetensors", "tokenizer.json"),
            ("model*.index.json", "tokenizer_config.json", *HF_CONFIGS),
        ),
    ),
    languages="English",
    punctuation=True,
    end_of_utterance=False,
    latencies="80, 160, 560 or 1120 ms",
    speed="fast: live on an ordinary laptop CPU",
    good_for="English captions with punctuation on a computer without a GPU",
)

NEMOTRON_35 = CatalogueEntry(
    key="nemotron-3.5-asr-0.6b",
    title="Nemotron 3.5 ASR 0.6B",
    family="FastConformer",
    repo_id="nvidia/nemotron-3.5-asr-streaming-0.6b",
    revision=None,
    download_gb=2.4,
    license="NVIDIA Open Model License",
    params_b=0.61,
    kept_f32_params_b=0.01,
    runtime_gb=0.3,
    quantization_types=("F16", "Q8_0", "Q4_K"),
    default_quantization="Q8_0",
    layouts=NEMOTRON_STREAMING.layouts,
    languages="about 40 languages (choose one, or Auto)",
    punctuation=True,
    end_of_utterance=False,
    latencies="the model's own choices, set in the app",
    speed="fast: live on an ordinary laptop CPU",
    good_for="captions in many languages on a computer without a GPU",
)

# FastConformer RNN-T, 17 x 512 encoder + 1-layer LSTM: ~120 M parameters; one NeMo archive.
PARAKEET_EOU = CatalogueEntry(
    key="parakeet-realtime-eou-120m",
    title="Parakeet Realtime EOU 120M",
    family="FastConformer",
    repo_id="nvidia/parakeet_realtime_eou_120m-v1",
    revision=None,
    download_gb=0.5,
    license="NVIDIA Open Model License",
    params_b=0.12,
    kept_f32_params_b=0.002,
    runtime_gb=0.1,
    quantization_types=("F16", "Q8_0"),
    default_quantization="Q8_0",
    layouts=(FileLayout(("*.nemo",), convert_from="*.nemo"),),
    languages="English",
    punctuation=False,
    end_of_utterance=True,
    latencies="160 ms",
    speed="the fastest: live on any CPU",
    good_for="quick English captions on a small or older computer; a new line at each pause",
)

CATALOGUE: tuple[CatalogueEntry, ...] = (NEMOTRON_STREAMING, NEMOTRON_35, PARAKEET_EOU, VOXTRAL_REALTIME)


def by_key(key: str) -> CatalogueEntry:
    for entry in CATALOGUE:
        if entry.key == key:
            return entry
    raise ValueError(f"no catalogue model {key!r}")


def entry_of_file(file_name: str) -> tuple[CatalogueEntry, str] | None:
    """The catalogue entry and quantization an installed file was made from (by its name)."""
    for entry in CATALOGUE:
        quant = entry.quantization_of_file(file_name)
        if quant is not None:
            return entry, quant
    return None
