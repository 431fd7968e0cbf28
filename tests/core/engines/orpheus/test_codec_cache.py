"""SNAC through the engine: audio to codes at 24 kHz and back, and the codes cache beside the dataset - each clip
is encoded once (the codec's calls are counted), its key is the clip's content, another codec has its own
codes, and a damaged cache file is replaced."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from alltalk_gui.core.engines.orpheus import codec as snac
from alltalk_gui.core.engines.orpheus.codes_cache import CACHE_DIR, CodesCache
from alltalk_gui.core.engines.orpheus.data import load_audio
from alltalk_gui.core.engines.orpheus.tiny_model import build_tiny_codec


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


def counting(calls: list[Path], codec):
    def encode(path: Path):
        calls.append(path)
        return snac.encode(codec, load_audio(path, 24000))
    return encode


def test_each_clip_is_encoded_once(codec, tiny_orpheus, project, tmp_path):
    root = tmp_path / "project"
    shutil.copytree(project / "dataset", root / "dataset")
    clips = sorted((root / "dataset" / "wavs").glob("*.wav"))
    calls: list[Path] = []
    first = CodesCache(root, tiny_orpheus / "snac")
    codes = [first.codes(clip, counting(calls, codec)) for clip in clips]
    assert len(calls) == len(clips) and first.misses == len(clips) and first.hits == 0
    assert first.folder.parent == root / CACHE_DIR  # beside the dataset, not inside it

    again = CodesCache(root, tiny_orpheus / "snac")
    assert [again.codes(clip, counting(calls, codec)) for clip in clips] == codes
    assert len(calls) == len(clips) and again.hits == len(clips)

    # The key is the content: a renamed clip hits, a changed one misses.
    clips[0].rename(clips[0].with_name("renamed.wav"))
    assert again.codes(clips[0].with_name("renamed.wav"), counting(calls, codec)) == codes[0]
    shutil.copyfile(clips[2], clips[1])
    assert again.codes(clips[1], counting(calls, codec)) == codes[2] and len(calls) == len(clips)
    louder = load_audio(clips[3], 24000) * 0.5
    from alltalk_gui.core.audio.decode import write_wav

    write_wav(clips[3], louder, 24000)
    again.codes(clips[3], counting(calls, codec))
    assert len(calls) == len(clips) + 1


def test_another_codec_has_its_own_codes_and_damage_is_repaired(codec, tiny_orpheus, project, tmp_path):
    clip = project / "dataset" / "wavs" / "clip_000.wav"
    calls: list[Path] = []
    mine = CodesCache(tmp_path, tiny_orpheus / "snac")
    mine.codes(clip, counting(calls, codec))
    other_dir = build_tiny_codec(tmp_path / "other_snac", seed=1)
    other = CodesCache(tmp_path, other_dir)
    assert other.folder != mine.folder
    other.codes(clip, counting(calls, snac.load_codec(other_dir)))
    assert len(calls) == 2
    mine.path(clip).write_bytes(b"damaged")
    mine.codes(clip, counting(calls, codec))
    assert len(calls) == 3 and mine.codes(clip, counting(calls, codec)) and len(calls) == 3
