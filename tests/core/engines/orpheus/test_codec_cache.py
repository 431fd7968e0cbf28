"""SNAC through the engine: audio to codes at 24 kHz and back, and the codes kept in the app's feature cache beside
the dataset - each clip is encoded once (the codec's calls are counted), its key is the clip's content, another
codec has its own codes, and an entry whose codes do not fit the codec is encoded again."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from alltalk_gui.core.audio.decode import write_wav
from alltalk_gui.core.engines.orpheus import codec as snac
from alltalk_gui.core.engines.orpheus.codec import read_codec_facts
from alltalk_gui.core.engines.orpheus.codes import ClipCodes, codes_cache, usable
from alltalk_gui.core.engines.orpheus.data import load_audio
from alltalk_gui.core.engines.orpheus.tiny_model import build_tiny_codec
from alltalk_gui.core.training.feature_cache import CACHE_DIR


@pytest.fixture(scope="module")
def codec(tiny_orpheus):
    return snac.load_codec(tiny_orpheus / "snac")


def test_codes_of_a_clip_and_the_audio_they_decode_to(codec, project):
    audio = load_audio(project / "dataset" / "wavs" / "clip_000.wav", 24000)
    levels = snac.encode(codec, audio)
    frames = len(levels[0])
    assert [len(level) for level in levels] == [frames, 2 * frames, 4 * frames]
    assert frames == -(-audio.size // 2048)  # whole frames of 512 x 4 samples
    assert len(set(levels[0])) > 5  # the tiny codec's codebooks are seeded from audio: frames differ
    decoded = snac.decode(codec, levels)
    assert decoded.dtype == np.float32 and decoded.size == frames * 2048
    assert snac.decode(codec, ([], [], [])).size == 0


def test_weights_load_without_unpickling_code(tiny_orpheus, tmp_path):
    import torch

    folder = Path(shutil.copytree(tiny_orpheus / "snac", tmp_path / "snac"))
    torch.save({"model": object()}, folder / "pytorch_model.bin")  # a pickle that names a class
    from alltalk_gui.core.engine_api.engine import BaseModelError

    with pytest.raises(BaseModelError, match="cannot be loaded"):
        snac.load_codec(folder)


class Config:
    """What cache_root reads of a run's config: the project folder."""

    def __init__(self, project: Path) -> None:
        self.project_dir, self.dataset_path = str(project), project / "dataset"


def counted(calls: list[Path], cache, tiny_orpheus):
    """The engine's clip codes with the codec's calls counted (the real codec runs)."""
    codes = ClipCodes(cache, tiny_orpheus / "snac", read_codec_facts(tiny_orpheus / "snac"))
    encode = codes._encode

    def counting(path: Path):
        calls.append(path)
        return encode(path)

    codes._encode = counting
    return codes


def test_each_clip_is_encoded_once(tiny_orpheus, project, tmp_path):
    root = tmp_path / "project"
    shutil.copytree(project / "dataset", root / "dataset")
    clips = sorted((root / "dataset" / "wavs").glob("*.wav"))
    calls: list[Path] = []
    first = codes_cache(Config(root), tiny_orpheus / "snac")
    codes = [counted(calls, first, tiny_orpheus)(clip) for clip in clips]
    assert len(calls) == len(clips) and first.computed == len(clips) and first.hits == 0
    assert first.folder.parent == root / CACHE_DIR  # beside the dataset, not inside it
    assert [len(level) for level in codes[0]][1] == 2 * len(codes[0][0])

    again = codes_cache(Config(root), tiny_orpheus / "snac")
    assert [counted(calls, again, tiny_orpheus)(clip) for clip in clips] == codes
    assert len(calls) == len(clips) and again.hits == len(clips)

    # The key is the content: a renamed clip hits, a changed one misses.
    clips[0].rename(clips[0].with_name("renamed.wav"))
    assert counted(calls, again, tiny_orpheus)(clips[0].with_name("renamed.wav")) == codes[0]
    shutil.copyfile(clips[2], clips[1])
    assert counted(calls, again, tiny_orpheus)(clips[1]) == codes[2] and len(calls) == len(clips)
    write_wav(clips[3], load_audio(clips[3], 24000) * 0.5, 24000)
    counted(calls, again, tiny_orpheus)(clips[3])
    assert len(calls) == len(clips) + 1


def test_another_codec_has_its_own_codes_and_bad_entries_are_encoded_again(tiny_orpheus, project, tmp_path):
    clip = project / "dataset" / "wavs" / "clip_000.wav"
    calls: list[Path] = []
    mine = codes_cache(Config(tmp_path), tiny_orpheus / "snac")
    levels = counted(calls, mine, tiny_orpheus)(clip)
    other_base = Path(shutil.copytree(tiny_orpheus, tmp_path / "other_base"))
    build_tiny_codec(other_base / "snac", seed=1)
    other = codes_cache(Config(tmp_path), other_base / "snac")
    assert other.folder != mine.folder
    counted(calls, other, other_base)(clip)
    assert len(calls) == 2
    # An entry whose codes leave the codebook (or whose levels do not fit together) is not used.
    entry = next(mine.folder.glob("*.npz"))
    import numpy as np

    with np.load(entry) as data:
        arrays = {name: data[name] for name in data.files}
    arrays["level0"] = arrays["level0"] + 1000
    np.savez(entry, **arrays)
    assert counted(calls, mine, tiny_orpheus)(clip) == levels and len(calls) == 3 and mine.rejected == 1
    assert not usable({"level0": np.zeros(2), "level1": np.zeros(3), "level2": np.zeros(8)},
                      read_codec_facts(tiny_orpheus / "snac"))
