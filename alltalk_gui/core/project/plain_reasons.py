"""Why a file was not imported, in plain words first, with the decoders' own message kept as the detail.

The core's reasons name the decoders ("not an audio file PyAV or libsndfile can read (FFmpeg: Invalid data
found when processing input; libsndfile: Error in WAV/W64/RF64 file)"): exact, and what a bug report needs,
but not what a person needs to decide what to do. :func:`plain_reason` splits such a reason into a sentence
that says what it means and what to try, and the technical part, which the import page keeps one click away and
the ``import`` command prints on a line of its own. Reasons that are already plain come back unchanged with no
detail.
"""

from __future__ import annotations

import re

_UNREADABLE = re.compile(r"^(?P<name>.+?) is not an audio file PyAV or libsndfile can read \((?P<detail>.*)\)\.?$",
                         re.DOTALL)


def plain_reason(reason: str) -> tuple[str, str]:
    """``(plain sentence, technical detail)``; the detail is "" when the reason is plain already."""
    match = _UNREADABLE.match(reason.strip())
    if match is None:
        return reason, ""
    return (f"{match['name']} could not be read as a recording: the file is damaged (for example cut short "
            "while copying) or is not a sound file. Try exporting it again from the program that made it.",
            match["detail"])
