"""The frozen front end's cache: computed once per clip, read after that, and never trusted when it is not whole,
not the clip's, not this front end's, or refused by the engine's check."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.feature_cache import CACHE_DIR, FeatureCache, cache_root, file_digest, files_digest


@pytest.fixture
def clips(tmp_path) -> list[Path]:
    out = []
    for i in range(3):
        path = tmp_path / "dataset" / "wavs" / f"clip{i}.wav"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bytes([i]) * (1000 + i))
        out.append(path)
    return out


class Front:
    """A stand-in front end that counts its calls: the 'features' are the file's bytes as numbers."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, clip: Path) -> dict[str, np.ndarray]:
        self.calls += 1
        data = np.frombuffer(clip.read_bytes(), np.uint8)
        return {"codes": data.astype(np.int64), "mel": np.outer(np.arange(4.0), data[:5]).astype(np.float32)}


def _same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])
        assert a[name].dtype == b[name].dtype


def test_each_clip_is_computed_once_then_read(tmp_path, clips):
    front = Front()
    first = [FeatureCache(tmp_path, "test", "m1").get(c, front) for c in clips]
    assert front.calls == 3
    cache = FeatureCache(tmp_path, "test", "m1")
    again = [cache.get(c, front) for c in clips]
    assert front.calls == 3 and cache.hits == 3 and cache.computed == 0 and cache.rejected == 0
    for a, b in zip(first, again):
        _same(a, b)
    assert sorted(p.name for p in (tmp_path / CACHE_DIR / "test-m1").iterdir()) == sorted(
        f"{file_digest(c)}.npz" for c in clips)


def test_the_key_is_the_content_not_the_name(tmp_path, clips):
    front = Front()
    cache = FeatureCache(tmp_path, "test", "m1")
    cache.get(clips[0], front)
    renamed = clips[0].with_name("renamed.wav")
    shutil.copy(clips[0], renamed)
    cache.get(renamed, front)
    assert front.calls == 1  # same bytes, other name: read
    clips[0].write_bytes(b"edited" * 100)
    edited = cache.get(clips[0], front)
    assert front.calls == 2 and bytes(edited["codes"].astype(np.uint8)) == b"edited" * 100


def test_another_front_end_never_reads_this_ones_entries(tmp_path, clips):
    front = Front()
    FeatureCache(tmp_path, "test", "m1").get(clips[0], front)
    FeatureCache(tmp_path, "test", "m2").get(clips[0], front)
    FeatureCache(tmp_path, "other", "m1").get(clips[0], front)
    FeatureCache(tmp_path, "test", "m1", version=2).get(clips[0], front)
    assert front.calls == 4


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "missing array", "other clip's entry",
                                    "refused by the check", "a folder"])
def test_a_damaged_or_foreign_entry_is_computed_again_never_trusted(tmp_path, clips, damage):
    front = Front()
    cache = FeatureCache(tmp_path, "test", "m1")
    good = cache.get(clips[0], front)
    cache.get(clips[1], front)
    entry = cache.entry(file_digest(clips[0]))
    if damage == "truncated":
        entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2])
    elif damage == "garbage":
        entry.write_bytes(os.urandom(300))
    elif damage == "empty":
        entry.write_bytes(b"")
    elif damage == "missing array":
        np.savez(entry.with_suffix(".tmp.npz"), codes=good["codes"])  # no stamp
        os.replace(entry.with_suffix(".tmp.npz"), entry)
    elif damage == "other clip's entry":
        shutil.copy(cache.entry(file_digest(clips[1])), entry)  # whole and well-formed, but clip 1's
    elif damage == "a folder":
        entry.unlink()
        entry.mkdir()

    def check(arrays) -> bool:
        return damage != "refused by the check" or front.calls > 2

    again = FeatureCache(tmp_path, "test", "m1")
    if damage == "a folder":  # cannot be replaced by a file: computed, and the reason kept
        _same(again.get(clips[0], front, check), good)
        assert front.calls == 3 and again.problems
        return
    _same(again.get(clips[0], front, check), good)
    assert front.calls == 3 and again.rejected == 1 and again.hits == 0
    # ... and the entry was replaced by a good one.
    third = FeatureCache(tmp_path, "test", "m1")
    _same(third.get(clips[0], front, check), good)
    assert front.calls == 3 and third.hits == 1


def test_a_check_that_raises_counts_as_a_refusal(tmp_path, clips):
    front = Front()
    FeatureCache(tmp_path, "test", "m1").get(clips[0], front)
    cache = FeatureCache(tmp_path, "test", "m1")
    cache.get(clips[0], front, check=lambda arrays: arrays["no such array"].shape == (1,))
    assert front.calls == 2 and cache.rejected == 1


def test_a_folder_that_cannot_be_written_costs_only_the_saving(tmp_path, clips):
    front = Front()
    root = tmp_path / "blocked"
    root.mkdir()
    (root / CACHE_DIR).write_text("a file where the cache folder would go")  # mkdir fails, as on a read-only disk
    cache = FeatureCache(root, "test", "m1")
    first = cache.get(clips[0], front)
    assert front.calls == 1 and len(cache.problems) == 1 and "could not be written" in cache.problems[0]
    cache.get(clips[1], front)
    assert len(cache.problems) == 1  # said once
    assert cache.summary("Codes") == "Codes: 0 clip(s) read from the cache, 2 computed (not kept). " + cache.problems[0]
    _same(first, Front()(clips[0]))
    assert (root / CACHE_DIR).read_text() == "a file where the cache folder would go"


def test_a_failed_write_leaves_no_partial_entry(tmp_path, clips, monkeypatch):
    front = Front()
    cache = FeatureCache(tmp_path, "test", "m1")

    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    cache.get(clips[0], front)
    monkeypatch.undo()
    assert cache.problems and list((tmp_path / CACHE_DIR / "test-m1").iterdir()) == []
    assert FeatureCache(tmp_path, "test", "m1").get(clips[0], front) is not None and front.calls == 2


def test_no_root_keeps_nothing(tmp_path, clips):
    front = Front()
    cache = FeatureCache(None, "test", "m1")
    cache.get(clips[0], front)
    cache.get(clips[0], front)
    assert front.calls == 2 and not (tmp_path / CACHE_DIR).exists()
    assert cache.summary("Codes") == "Codes: 0 clip(s) read from the cache, 2 computed (not kept)."


def test_names_that_would_leave_the_cache_folder_are_refused(tmp_path):
    for kind, key in (("a/b", "m"), ("a", "../m"), ("", "m"), ("a", "")):
        with pytest.raises(ValueError):
            FeatureCache(tmp_path, kind, key)


def test_the_model_key_follows_the_files_and_settings(tmp_path):
    a, b = tmp_path / "a.pth", tmp_path / "b.pth"
    a.write_bytes(b"weights")
    b.write_bytes(b"stats")
    key = files_digest([a, b], "sr=22050")
    assert len(key) == 16 and key == files_digest([a, b], "sr=22050")
    assert key != files_digest([a, b], "sr=24000")
    b.write_bytes(b"other stats")
    assert key != files_digest([a, b], "sr=22050")


def test_the_cache_lives_in_the_project_else_in_the_dataset(tmp_path):
    assert cache_root(TrainConfig(project_dir=str(tmp_path / "p"))) == tmp_path / "p"
    assert cache_root(TrainConfig(project_dir=str(tmp_path / "p"), dataset_dir=str(tmp_path / "d"))) == tmp_path / "p"
    assert cache_root(TrainConfig(dataset_dir=str(tmp_path / "d"))) == tmp_path / "d"


def test_computing_clips_reports_progress_inside_reporting_only(tmp_path, clips):
    """A set-up that computes for minutes says how far it got (every ``every_s`` seconds), reading says nothing, and
    no cache reports outside ``reporting`` or after it."""
    from alltalk_gui.core.training.feature_cache import reporting

    said: list[tuple] = []

    def say(*progress):
        said.append(progress)

    FeatureCache(tmp_path, "test", "m1").get(clips[0], Front())  # one entry to read
    cache = FeatureCache(tmp_path, "test", "m1")
    with reporting(say, every_s=0.0):
        for clip in clips:
            cache.get(clip, Front())
    assert said == [("test", 1, 1), ("test", 2, 1)]  # (kind, computed, read) after each clip computed
    with reporting(say, every_s=3600.0):  # a quick set-up: nothing before the first interval
        FeatureCache(tmp_path, "test", "m2").get(clips[0], Front())
    FeatureCache(tmp_path, "test", "m3").get(clips[0], Front())
    assert len(said) == 2


def test_a_stop_ends_the_computing_before_the_next_clip_and_keeps_the_computed_ones(tmp_path, clips):
    from alltalk_gui.core.training.feature_cache import StoppedComputing, reporting

    front = Front()
    FeatureCache(tmp_path, "test", "m1").get(clips[2], front)  # read, not computed: a stop does not end a read
    cache = FeatureCache(tmp_path, "test", "m1")
    with reporting(None, stop=lambda: front.calls >= 2), pytest.raises(StoppedComputing, match="1 clip"):
        for clip in (clips[2], clips[0], clips[1]):
            cache.get(clip, front)
    assert front.calls == 2 and cache.hits == 1 and cache.computed == 1  # the stop came before clip 1
    assert len(list((tmp_path / CACHE_DIR / "test-m1").iterdir())) == 2  # clips 2 and 0 are kept
