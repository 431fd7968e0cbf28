"""Cut a source's word timeline into training clips.

The engines learn best from clips of one to two sentences that start and end in a pause, within their own limits
(XTTS v2 2-11 s, F5-TTS up to 30 s). From the recogniser's word timestamps this module chooses where to cut:

* only between words (a word is never split), and never so that a clip spans a long silence;
* never longer than the maximum (which the project's :class:`~alltalk_gui.core.transcript.flags.ClipChecker`
  keeps within the engine's limit), unless a single "word" is already longer (then it is a clip of its own and
  gets flagged), and never with more text than the engine reads in the language (XTTS v2's character limits);
* preferring sentence ends, then clause punctuation, then the longest pauses; clips shorter than the minimum
  are avoided by joining neighbouring sentences;
* with a little padding at both ends, at most half of the pause to the neighbouring word, so a clip never
  swallows a neighbour's speech.

The choice is a small dynamic programme over the cut points (the cheapest sequence of clips under those costs),
so an over-long sentence is split at its longest pause and its text at the matching word.

Whisper's word timestamps are often a few hundred ms off at the edges of speech (the first word of a file
especially). When the audio is given, :func:`refine_edges` moves each clip's ends to where the sound actually
starts and stops, searching only the pause between the clip and its neighbours, then pads again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from alltalk_gui.core.engine_api.languages import CLAUSE_ENDS, SENTENCE_ENDS
from alltalk_gui.core.transcript.flags import ClipChecker
from alltalk_gui.core.transcript.segments import Segment, Word, join_words, new_segment_id  # noqa: F401  (join_words re-exported)

DEFAULT_PAD_MS = 150
MAX_INTERNAL_GAP_MS = 2000      # a clip never contains a silence longer than this

# Sentence and clause ends of every XTTS language (Latin, CJK, Arabic, Devanagari): one list, in languages.py.
_SENTENCE_END = SENTENCE_ENDS
_CLAUSE_END = CLAUSE_ENDS
SHORT_PAUSE_MS = 300            # automatic merging joins a too-short clip across a pause up to this long

# Costs (unitless). A cut at a sentence end is free; a clip that keeps a sentence end inside costs a little,
# so sentences are cut apart unless the pieces would be too short (which costs more).
_KEEP_SENTENCE_END = 3.0
_CUT_CLAUSE = 1.0
_CUT_PLAIN = 2.0
_SHORT_CLIP = 10.0
# Keeping a pause inside a clip costs one unit per 150 ms beyond 300 ms: a breath is fine, a 0.8 s pause is
# about as good a cut as a sentence end (Whisper often writes a comma where the speaker ended a sentence).
_KEEP_PAUSE_FREE_MS = 300
_KEEP_PAUSE_MS_PER_UNIT = 150


@dataclass(frozen=True)
class ClipPlan:
    """A planned clip: its span (with padding) and the words inside."""

    start_ms: int
    end_ms: int
    words: tuple[Word, ...]

    @property
    def text(self) -> str:
        return join_words(self.words)

    @property
    def duration_ms(self) -> int:
        return self.end_ms - self.start_ms


def plan_clips(words: Sequence[Word], duration_ms: int, min_s: float, max_s: float, pad_ms: int = DEFAULT_PAD_MS,
               max_chars: int | None = None) -> list[ClipPlan]:
    """Choose the clips for one source.

    Args:
        words: the recogniser's words in time order (ms spans in the source).
        duration_ms: length of the source (padding never goes past it).
        min_s / max_s: wanted clip length, ``max_s`` within the engine's limit (a checker's ``max_ms``).
        max_chars: the longest clip text (the engine's limit in the language); None: no limit.

    Returns:
        The clips in time order; every word is in exactly one clip.

    Raises:
        ValueError: an impossible length range.
    """
    if min_s <= 0 or max_s <= min_s:
        raise ValueError(f"Clip length range {min_s}-{max_s} s is invalid: the minimum must be above 0 and below "
                         "the maximum.")
    words = sorted((w for w in words if w.end_ms >= w.start_ms), key=lambda w: (w.start_ms, w.end_ms))
    if not words:
        return []
    min_ms, max_ms = int(min_s * 1000), int(max_s * 1000)
    n = len(words)
    # Padding each word may take on each side: up to half the pause to its neighbour, and not past the file.
    left = [min(pad_ms, max(0, words[i].start_ms - (words[i - 1].end_ms if i else 0)) // (2 if i else 1))
            for i in range(n)]
    right = [min(pad_ms, max(0, (words[i + 1].start_ms if i + 1 < n else duration_ms) - words[i].end_ms)
                 // (2 if i + 1 < n else 1)) for i in range(n)]

    def span(a: int, b: int) -> tuple[int, int]:
        return words[a].start_ms - left[a], max(words[a].start_ms - left[a], words[b].end_ms + right[b])

    gaps = [words[i + 1].start_ms - words[i].end_ms for i in range(n - 1)]
    cut_cost = [_cut_cost(words[i].text, gaps[i]) for i in range(n - 1)]
    keep_cost = [(_KEEP_SENTENCE_END if _ends(words[i].text, _SENTENCE_END) else 0.0)
                 + max(0, gaps[i] - _KEEP_PAUSE_FREE_MS) / _KEEP_PAUSE_MS_PER_UNIT for i in range(n - 1)]

    # best[b + 1] = cheapest plan for words[0..b]; choice[b + 1] = first word of its last clip.
    inf = float("inf")
    best = [0.0] + [inf] * n
    choice = [0] * (n + 1)
    for b in range(n):
        inside = 0.0  # keep costs of the breaks inside words[a..b]
        chars = 0     # characters of words[a..b] (Whisper's words carry their own leading space)
        for a in range(b, -1, -1):
            chars += len(words[a].text)
            if a < b:
                if gaps[a] > MAX_INTERNAL_GAP_MS:
                    break
                inside += keep_cost[a]
            start, end = span(a, b)
            if (end - start > max_ms or (max_chars is not None and chars > max_chars)) and a < b:
                break
            cost = best[a] + inside + (cut_cost[a - 1] if a else 0.0)
            if end - start < min_ms:
                cost += _SHORT_CLIP * (1 + (min_ms - (end - start)) / min_ms)
            if cost < best[b + 1]:
                best[b + 1], choice[b + 1] = cost, a
    plans: list[ClipPlan] = []
    b = n
    while b > 0:
        a = choice[b]
        start, end = span(a, b - 1)
        plans.append(ClipPlan(start, end, tuple(words[a:b])))
        b = a
    return plans[::-1]


def merge_short(plans: Sequence[ClipPlan], min_s: float, max_s: float, max_chars: int | None = None,
                pause_ms: int = SHORT_PAUSE_MS) -> list[ClipPlan]:
    """Join each clip shorter than ``min_s`` with a neighbour when it continues that neighbour's sentence.

    A short clip continues a sentence across a cut when the text before the cut does not end a sentence and
    the pause at the cut is at most ``pause_ms`` (a breath inside a line, not a stop). The merge happens only
    if the joined clip lasts ``min_s`` to ``max_s`` (within the engine's limit) and fits ``max_chars``; of two
    such neighbours the one across the shorter pause wins. Repeats until no merge applies.
    """
    min_ms, max_ms = int(min_s * 1000), int(max_s * 1000)
    out = list(plans)

    def joinable(i: int) -> bool:  # may out[i] and out[i + 1] become one clip?
        a, b = out[i], out[i + 1]
        pause = b.words[0].start_ms - a.words[-1].end_ms
        joined = b.end_ms - a.start_ms
        text_ok = max_chars is None or len(join_words(a.words + b.words)) <= max_chars
        return (not _ends(a.words[-1].text, _SENTENCE_END) and pause <= pause_ms and min_ms <= joined <= max_ms
                and text_ok)

    merged = True
    while merged:
        merged = False
        for i, plan in enumerate(out):
            if plan.duration_ms >= min_ms:
                continue
            options = [j for j in (i - 1, i) if 0 <= j < len(out) - 1 and joinable(j)]
            if not options:
                continue
            j = min(options, key=lambda k: out[k + 1].words[0].start_ms - out[k].words[-1].end_ms)
            out[j:j + 2] = [ClipPlan(out[j].start_ms, out[j + 1].end_ms, out[j].words + out[j + 1].words)]
            merged = True
            break
    return out


def refine_edges(plans: Sequence[ClipPlan], samples: np.ndarray, rate: int, max_ms: int,
                 pad_ms: int = DEFAULT_PAD_MS) -> list[ClipPlan]:
    """Snap each clip's ends to the audio: the first and last 10 ms frames louder than the speech threshold.

    A start is searched from halfway into the pause before the clip up to the end of its first word (an end
    likewise), so a neighbour's speech is never taken and, where the search finds no sound (the recogniser
    heard words in near-silence), the clip is left as planned. A clip that would grow past ``max_ms`` keeps
    its planned ends.
    """
    loud, hop = _loud_frames(samples, rate)
    if loud is None:
        return list(plans)
    total_ms = samples.size * 1000 // rate
    out = []
    for i, plan in enumerate(plans):
        first, last = plan.words[0], plan.words[-1]
        lo = (plans[i - 1].words[-1].end_ms + first.start_ms) // 2 if i else 0
        hi = (last.end_ms + plans[i + 1].words[0].start_ms) // 2 if i + 1 < len(plans) else total_ms
        onset = _first_loud(loud, hop, lo, first.end_ms)
        offset = _last_loud(loud, hop, last.start_ms, hi)
        start = max(lo, onset - pad_ms) if onset is not None else plan.start_ms
        end = min(hi, offset + pad_ms) if offset is not None else plan.end_ms
        if end - start > max_ms and len(plan.words) > 1 or end <= start:
            start, end = plan.start_ms, plan.end_ms
        out.append(replace(plan, start_ms=start, end_ms=end))
    return out


def segments_from_words(source_id: str, words: Sequence[Word], duration_ms: int, first_number: int,
                        checker: ClipChecker, windows: Sequence[tuple[int, int, float]] = (),
                        pad_ms: int = DEFAULT_PAD_MS, samples: np.ndarray | None = None,
                        rate: int = 0) -> list[Segment]:
    """Plan the clips of one source and make them Segments numbered from ``first_number``.

    ``checker`` (the project's, for its engine) gives the length range, capped at the engine's limit, and the
    longest text (XTTS's characters per language); too-short pieces of one sentence are then joined
    (:func:`merge_short`).

    ``windows`` are the recogniser's own segments as ``(start_ms, end_ms, no_speech_prob)``; each clip gets
    the no-speech probability of the windows it overlaps (the lowest: any real speech makes the clip speech).
    With the source's mono ``samples`` (at ``rate``), clip edges are snapped to the sound (:func:`refine_edges`).
    """
    min_s, max_s, max_chars = checker.min_ms / 1000, checker.max_ms / 1000, checker.max_chars
    plans = merge_short(plan_clips(words, duration_ms, min_s, max_s, pad_ms, max_chars), min_s, max_s, max_chars)
    if samples is not None and rate > 0:
        plans = refine_edges(plans, samples, rate, checker.max_ms, pad_ms)
    out = []
    for i, plan in enumerate(plans):
        probs = [p for start, end, p in windows if start < plan.end_ms and plan.start_ms < end]
        out.append(Segment(new_segment_id(first_number + i), source_id, plan.start_ms, plan.end_ms, plan.text,
                           words=plan.words, no_speech_prob=min(probs) if probs else None))
    return out


def _loud_frames(samples: np.ndarray, rate: int) -> tuple[np.ndarray | None, float]:
    """Per ~10 ms frame: is it louder than the speech threshold? Returns the flags and the frame length in ms.

    The threshold sits a third of the way (in dB) from the noise floor (10th percentile of the frames) to the
    speech level (95th percentile).
    """
    hop = max(1, rate // 100)
    hop_ms = hop * 1000 / rate
    frames = samples.size // hop
    if frames < 10:
        return None, hop_ms
    power = (samples[: frames * hop].astype(np.float64).reshape(frames, hop) ** 2).mean(axis=1)
    level = 10 * np.log10(power + 1e-12)
    floor, speech = np.percentile(level, 10), np.percentile(level, 95)
    if speech - floor < 10:  # no clear difference between speech and background: do not guess
        return None, hop_ms
    return level > floor + (speech - floor) / 3, hop_ms


def _first_loud(loud: np.ndarray, hop_ms: float, lo_ms: int, hi_ms: int) -> int | None:
    a, b = max(0, int(lo_ms / hop_ms)), min(loud.size, int(hi_ms / hop_ms) + 1)
    hits = np.flatnonzero(loud[a:b])
    return int(round((a + int(hits[0])) * hop_ms)) if hits.size else None


def _last_loud(loud: np.ndarray, hop_ms: float, lo_ms: int, hi_ms: int) -> int | None:
    a, b = max(0, int(lo_ms / hop_ms)), min(loud.size, int(hi_ms / hop_ms) + 1)
    hits = np.flatnonzero(loud[a:b])
    return int(round((a + int(hits[-1]) + 1) * hop_ms)) if hits.size else None


def _ends(text: str, marks: tuple[str, ...]) -> bool:
    return text.rstrip().rstrip("\"'»”’)").endswith(marks)


def _cut_cost(text: str, gap_ms: int) -> float:
    """Cost of cutting after a word: free at a sentence end; cheaper after a comma and the longer the pause."""
    if _ends(text, _SENTENCE_END):
        return 0.0
    base = _CUT_CLAUSE if _ends(text, _CLAUSE_END) else _CUT_PLAIN
    return base / (1.0 + max(0, gap_ms) / 100.0)
