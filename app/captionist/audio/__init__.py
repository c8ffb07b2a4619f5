"""Audio input: decoding files (``files``), listing and capturing devices, mixing and resampling.

Everything leaves this package as 1-D float32 PCM at 16 kHz mono, the engine's input format.
"""
