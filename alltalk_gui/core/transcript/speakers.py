"""Whose voice is in each clip: the project's main speaker, found from the clips, and each clip's likeness to it.

Real recordings bring other voices into the clips (an interviewer's questions, a co-host, a child in the
background), and a clip of someone else teaches the model the wrong voice. Every clip gets a speaker embedding
(:mod:`alltalk_gui.core.audio.speaker`, measured once in the background and cached by :mod:`.speaker_store`); the
main speaker is the dominant voice among the kept clips, and a clip whose likeness to it is under
:data:`~alltalk_gui.core.transcript.flags.OTHER_SPEAKER_BELOW` gets the ``other_speaker`` warning.

Finding the main speaker (:func:`find_main_voice`), robust to an interviewer who speaks a third of the time:

1. seed: the clip whose voice is shared by the most audio (the sum of the durations of the clips at least
   :data:`OTHER_SPEAKER_BELOW` alike to it), a mode rather than a mean, so the other voice does not pull it;
2. refine: the centre is the duration-weighted mean of the clips alike to the current centre, again, until the
   members stop changing (at most :data:`REFINE_ROUNDS`); clips of the other voice drop out of the mean;
3. the same again among the clips left out finds the strongest second voice. When it holds at least
   :data:`EQUAL_SHARE` of the measured audio, nothing is flagged: the project says "two voices of about equal
   share: which one is yours?" and waits for the user to point at a clip of their voice
   (:meth:`SegmentList.choose_main_voice <alltalk_gui.core.transcript.segments.SegmentList.choose_main_voice>`).

Pure numpy, no model and no file: the GUI thread may call it (a few milliseconds at 1,000 clips).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np

from alltalk_gui.core.transcript.flags import OTHER_SPEAKER_BELOW

MIN_CLIPS = 3         # fewer measured clips than this: no majority to call the main voice, nothing is flagged
EQUAL_SHARE = 0.40    # a second voice with at least this share of the measured audio: ask which one is the user's
REFINE_ROUNDS = 5
SEED_CANDIDATES = 400  # the seed is chosen among at most this many clips (evenly spaced): the similarity matrix
                       # stays 400 x n, not n x n, at 5,000 clips

SpanKey = tuple[str, int, int]  # (source id, start ms, end ms): a clip's audio; a trim or a split makes new ones


@dataclass(frozen=True)
class MainVoice:
    """The main speaker of a project's clips, or why there is none."""

    centre: np.ndarray | None     # unit-length embedding of the main voice; None: nothing is flagged
    share: float = 0.0            # the main voice's share of the measured audio (0-1)
    second_share: float = 0.0     # the strongest other voice's share
    measured: int = 0             # clips with an embedding
    note: str = ""                # a project-level sentence for the user ("" when all is clear)

    def likeness(self, embedding: np.ndarray | None) -> float | None:
        """Cosine similarity of a clip's embedding to the main voice (None: no main voice, or no embedding)."""
        if self.centre is None or embedding is None:
            return None
        return float(np.dot(embedding, self.centre))


NO_MAIN_VOICE = MainVoice(None)


def find_main_voice(embeddings: Iterable[tuple[str, np.ndarray, float]], chosen: str | None = None,
                    threshold: float = OTHER_SPEAKER_BELOW) -> MainVoice:
    """The main voice of ``(clip id, unit embedding, seconds)`` triples (the kept clips that could be measured).

    ``chosen``: the id of a clip the user said is their voice; it seeds the search, and no "two voices" note is
    given (the user has answered it). An id without an embedding is ignored.
    """
    items = list(embeddings)
    if len(items) < MIN_CLIPS:
        return MainVoice(None, measured=len(items),
                         note="" if not items else f"Only {len(items)} clip(s) could be measured: too few to tell "
                                                   "a main speaker from other voices.")
    ids = [clip_id for clip_id, _e, _w in items]
    x = np.stack([np.asarray(e, dtype=np.float32) for _i, e, _w in items])
    weights = np.array([max(float(w), 1e-3) for _i, _e, w in items], dtype=np.float64)
    total = float(weights.sum())
    everyone = np.ones(len(items), dtype=bool)
    seed = ids.index(chosen) if chosen in ids else _seed(x, weights, everyone, threshold)
    members = _refine(x, weights, x[seed], threshold)
    centre = _centre(x, weights, members)
    share = float(weights[members].sum()) / total
    others = ~members
    second_share = 0.0
    if others.any():
        second = _refine(x, weights, x[_seed(x, weights, others, threshold)], threshold) & others
        second_share = float(weights[second].sum()) / total
    if chosen not in ids and second_share >= EQUAL_SHARE:
        return MainVoice(None, share, second_share, len(items), note=(
            f"Two voices of about equal share ({share:.0%} and {second_share:.0%} of the clips' audio): which one is "
            "yours? Listen to a clip of your voice and mark it as the main voice; clips of the other are then "
            "flagged."))
    return MainVoice(centre, share, second_share, len(items))


def _seed(x: np.ndarray, weights: np.ndarray, among: np.ndarray, threshold: float) -> int:
    """Index of the clip (of ``among``) whose voice the most audio of ``among`` shares."""
    pool = np.flatnonzero(among)
    candidates = pool[np.linspace(0, pool.size - 1, min(pool.size, SEED_CANDIDATES)).round().astype(int)]
    alike = (x[candidates] @ x[pool].T) >= threshold
    support = alike.astype(np.float64) @ weights[pool]
    # Ties (two clips alike to the same clips) go to the one closer to them on average.
    closeness = (x[candidates] @ x[pool].T).mean(axis=1)
    return int(candidates[np.lexsort((-closeness, -support))[0]])


def _refine(x: np.ndarray, weights: np.ndarray, start: np.ndarray, threshold: float) -> np.ndarray:
    """The clips alike to a centre that is the weighted mean of the clips alike to it (a fixed point)."""
    members = (x @ start) >= threshold
    for _round in range(REFINE_ROUNDS):
        if not members.any():
            break
        again = (x @ _centre(x, weights, members)) >= threshold
        if (again == members).all():
            break
        members = again
    return members


def _centre(x: np.ndarray, weights: np.ndarray, members: np.ndarray) -> np.ndarray:
    chosen = members if members.any() else np.ones(len(x), dtype=bool)
    mean = (x[chosen] * weights[chosen, None]).sum(axis=0)
    return (mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float32)
