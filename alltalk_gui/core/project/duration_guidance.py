"""How much audio is enough: the 3-10 minute guidance, as a level and a sentence.

XTTS v2 fine-tunes well on 3-10 minutes of clean speech. Less still works (nothing is refused for length
alone) but the voice imitates less; more is fine but every epoch takes longer.
"""

from __future__ import annotations

from dataclasses import dataclass

from alltalk_gui.core.audio.info import format_duration  # noqa: F401  (re-exported: callers name it here)

MIN_RECOMMENDED_S = 3 * 60
MAX_RECOMMENDED_S = 10 * 60


@dataclass(frozen=True)
class Guidance:
    level: str  # "empty" | "short" | "good" | "long"
    message: str


def guidance(usable_s: float) -> Guidance:
    """Judge ``usable_s`` seconds of usable speech against the 3-10 minute guidance."""
    if usable_s <= 0:
        return Guidance("empty", "No usable audio yet. Add 3 to 10 minutes of one person speaking.")
    have = format_duration(usable_s)
    if usable_s < MIN_RECOMMENDED_S:
        missing = format_duration(MIN_RECOMMENDED_S - usable_s)
        return Guidance("short", f"{have} of usable audio: record about {missing} more to reach the 3-minute "
                                 "minimum (5-10 minutes gives a closer voice). You can still go on.")
    if usable_s <= MAX_RECOMMENDED_S:
        return Guidance("good", f"{have} of usable audio: within the recommended 3-10 minutes.")
    extra = (usable_s - MAX_RECOMMENDED_S) / MAX_RECOMMENDED_S
    return Guidance("long", f"{have} of usable audio: more than the 10 minutes needed. That is fine, but each "
                            f"training epoch takes about {extra:.0%} longer than with 10 minutes.")
