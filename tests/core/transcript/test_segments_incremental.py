"""Incremental flags: after any sequence of edits and undos, each clip's flags equal a full recomputation.

Edits recompute only the clips they can affect (the edited ones and the members of the duplicate-text groups
whose original changed). A random sequence of edits over clips that share texts checks that nothing is missed.
"""

from __future__ import annotations

import random

from alltalk_gui.core.transcript.duplicates import DuplicateIndex
from alltalk_gui.core.transcript.flags import ClipChecker
from alltalk_gui.core.transcript.segments import SegmentEditError, SegmentList
from tests.core.transcript.test_segments_support import segment

TEXTS = ["Hello there, friend.", "hello there friend", "Another line.", "Yes.", "yes", "A longer sentence here.", ""]


class PlainText:
    """A text check without coqui: these tests are about which clips get rechecked, not about the check."""

    language = "en"
    max_chars = None

    def problem(self, text: str) -> str | None:
        return "XTTS cannot encode '#'." if "#" in text else None


def full_flags(clips: SegmentList) -> dict:
    fresh = SegmentList([*clips.segments], checker=clips.checker, source_order=list(clips.source_order))
    fresh._refresh(set(), {})
    return {s.id: s.flags for s in fresh}


def test_random_edits_and_undos_keep_flags_equal_to_a_full_recompute():
    rng = random.Random(7)
    segments = [segment(f"c{k + 1:05d}", f"s00{k % 3 + 1}", (k // 3) * 5000, (k // 3) * 5000 + rng.choice(
        [1500, 3000, 4500]), rng.choice(TEXTS)) for k in range(60)]
    clips = SegmentList(segments, checker=ClipChecker("xtts", "en", text_checker=PlainText()),
                        source_order=["s001", "s002", "s003"])
    clips._refresh(set(clips.ids()), {})
    done = []
    for step in range(400):
        target = rng.choice(clips.ids())
        clip = clips[target]
        action = rng.random()
        try:
            if action < 0.3:
                change = clips.set_text(target, rng.choice(TEXTS + ["With # sign."]))
            elif action < 0.45:
                change = clips.delete(target) if not clip.deleted else clips.restore(target)
            elif action < 0.6 and clip.duration_ms > 1000:
                change = clips.split(target, clip.start_ms + clip.duration_ms // 2, len(clip.text) // 2)
            elif action < 0.7:
                change = clips.merge_with_next(target)
            elif action < 0.8:
                change = clips.move(target, rng.choice([-300, 300]))
            elif done:
                change = clips.undo(done.pop())
                continue
            else:
                continue
        except SegmentEditError:
            continue
        if not change.is_empty:
            done.append(change)
        assert {s.id: s.flags for s in clips} == full_flags(clips), f"step {step}: {change.description}"
    assert [s.id for s in clips] == [s.id for s in sorted(clips, key=clips._order_key)]


def test_editing_the_original_reflags_its_duplicates_and_says_so():
    clips = SegmentList([segment("c00001", "s001", 0, 3000, "Same words."),
                         segment("c00002", "s001", 4000, 7000, "same words"),
                         segment("c00003", "s001", 8000, 11000, "Same words!")],
                        checker=ClipChecker("xtts", "en", text_checker=PlainText()), source_order=["s001"])
    clips._refresh(set(clips.ids()), {})
    assert "c00001" in clips["c00003"].flags[-1].reason
    change = clips.set_text("c00001", "Different now.")
    assert set(change.reflagged) == {"c00002", "c00003"}  # c00003 now names c00002 as its original
    assert "c00002" in clips["c00003"].flags[-1].reason and not clips["c00002"].flags
    assert change.ids == {"c00001", "c00002", "c00003"}


def test_duplicate_index_keeps_groups_in_list_order():
    index = DuplicateIndex([((0, "b"), "b", "Hi!"), ((0, "a"), "a", "hi")])
    assert index.duplicate_of("b") == "a" and index.duplicate_of("a") is None
    assert index.remove("a") == "hi"
    assert index.duplicate_of("b") is None and index.members("hi") == ["b"]
    assert index.add((0, "c"), "c", "   ") is None  # empty text: never a duplicate
