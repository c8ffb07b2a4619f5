"""What can be downloaded: the real model's hub entry and the quantizations offered for it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Quantization:
    type_name: str  # as captionist.engine.quantize takes it
    file_gb: float  # approximate size of the GGUF
    ram_gb: float  # approximate memory needed to run it live
    note: str


@dataclass(frozen=True)
class CatalogueEntry:
    key: str
    title: str
    repo_id: str
    revision: str | None
    download_gb: float
    license: str
    quantizations: tuple[Quantization, ...]
    default_quantization: str

    def quantization(self, type_name: str) -> Quantization:
        for q in self.quantizations:
            if q.type_name == type_name:
                return q
        names = ", ".join(q.type_name for q in self.quantizations)
        raise ValueError(f"unknown quantization {type_name!r}; choose one of {names}")

    def file_name(self, type_name: str) -> str:
        return f"{self.key}-{type_name.lower()}.gguf"


# Sizes: ~4.4 B parameters (encoder ~0.6 B, decoder ~3.4 B, embeddings); RAM adds the KV caches
# and compute buffers of one live stream (~0.8 GB).
VOXTRAL_REALTIME = CatalogueEntry(
    key="voxtral-mini-4b-realtime",
    title="Voxtral Mini 4B Realtime (Mistral AI)",
    repo_id="mistralai/Voxtral-Mini-4B-Realtime-2602",
    revision=None,
    download_gb=8.9,
    license="Apache-2.0",
    quantizations=(
        Quantization("F16", 8.9, 9.8, "reference quality, needs a large machine"),
        Quantization("Q8_0", 4.7, 5.6, "near-lossless"),
        Quantization("Q6_K", 3.7, 4.6, "very close to Q8_0"),
        Quantization("Q5_K_M", 3.2, 4.1, "good balance"),
        Quantization("Q4_K_M", 2.7, 3.6, "smallest and fastest; slightly less accurate"),
    ),
    default_quantization="Q4_K_M",
)

CATALOGUE: tuple[CatalogueEntry, ...] = (VOXTRAL_REALTIME,)
