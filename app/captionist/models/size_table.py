"""The one table of quantizations: file size and RAM per catalogue model, as the Models window
lists them and as README.md shows them (``tests/test_models.py`` checks that README's copy is
this function's output).

Usage::

    from captionist.models.size_table import format_gb, quantization_table
    format_gb(0.667)                      # "0.67 GB"
    print(quantization_table())           # the Markdown table README.md carries

Regenerate README's table after changing the catalogue::

    python -m captionist.models.size_table
"""

from __future__ import annotations

from captionist.models.catalogue import BYTES_PER_WEIGHT, CATALOGUE, CatalogueEntry, Quantization

README_BEGIN = "<!-- quantization table: python -m captionist.models.size_table -->"
README_END = "<!-- end of quantization table -->"


def format_gb(value: float) -> str:
    """Sizes as people read them: "0.13 GB", "1.2 GB", "9 GB"."""
    if value < 1:
        return f"{value:.2f} GB"
    return f"{value:.1f} GB" if value < 10 else f"{value:.0f} GB"


def size_text(q: Quantization) -> str:
    """What one quantization costs, as "0.67 GB file, needs ~0.97 GB RAM"."""
    return f"{format_gb(q.file_gb)} file, needs ~{format_gb(q.ram_gb)} RAM"


def quantization_table(entries: tuple[CatalogueEntry, ...] = CATALOGUE) -> str:
    """A Markdown table: one row per model, one column per quantization any model offers; each
    cell is the file size and, in brackets, the RAM a live stream needs; the default is bold."""
    types = [t for t in BYTES_PER_WEIGHT if any(t in e.quantization_types for e in entries)]
    rows = [
        "| model | " + " | ".join(types) + " |",
        "| --- |" + " --- |" * len(types),
    ]
    for e in entries:
        cells = []
        for t in types:
            if t not in e.quantization_types:
                cells.append("—")
                continue
            q = e.quantization(t)
            cell = f"{format_gb(q.file_gb)} (RAM ~{format_gb(q.ram_gb)})"
            cells.append(f"**{cell}**" if t == e.default_quantization else cell)
        rows.append(f"| {e.title} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def readme_block() -> str:
    """The table with the markers README.md keeps around it."""
    return f"{README_BEGIN}\n{quantization_table()}\n{README_END}"


if __name__ == "__main__":
    print(readme_block())
