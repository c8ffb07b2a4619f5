"""The sources ticked last time, found again in today's list (a small policy).

Usage::

    found = match_saved_sources(sources, settings.sources, settings.source_names)
    panel.set_sources(sources, found.ids)   # the default input when ``found.ids`` is empty
    found.missing                           # names of the saved sources that are not there

A source is saved by its id and, since that id may be PortAudio's device index, by its name too.
Indices move when devices come and go, so an id is taken only while it still names the same device;
a device whose index moved is found by its name. Settings from before names were kept hold ids only,
and those are taken as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from captionist.audio.devices import Source


@dataclass(frozen=True)
class SavedSourceMatch:
    ids: list[str]  # today's ids of the saved sources that are there
    missing: list[str]  # the names (ids where no name was kept) of those that are not


def match_saved_sources(
    sources: Sequence[Source], ids: Sequence[str], names: Mapping[str, str]
) -> SavedSourceMatch:
    by_id = {s.id: s for s in sources}
    found: list[str] = []
    missing: list[str] = []
    for saved in ids:
        name = names.get(saved)
        same = by_id.get(saved)
        if same is not None and (name is None or same.name == name):
            match: Source | None = same
        elif name is not None:  # the index moved (or now names another device): by name
            match = next((s for s in sources if s.name == name and s.id not in found), None)
        else:
            match = None
        if match is None:
            missing.append(name if name is not None else saved)
        elif match.id not in found:
            found.append(match.id)
    return SavedSourceMatch(found, missing)
