"""A low-bit-rate MP3 imports without clicks: the import decodes in blocks, and libsndfile's MP3 reader corrupts
such files where a block ends inside a frame (see ``decode._libsndfile_decodes``). FFmpeg's whole decode is the
reference; the import's working copy and :func:`decode.load` must equal it."""

from __future__ import annotations

import av
import numpy as np
import pytest
import soundfile as sf

from alltalk_gui.core.audio import decode
from alltalk_gui.testing.speech import espeak_available, synthesize
from tests import audio_fixtures as fx

pytestmark = pytest.mark.skipif(not espeak_available(), reason="espeak-ng is not installed")

TEXT = "The quick brown fox jumps over the lazy dog while the five boxing wizards jump quickly. " * 12


@pytest.fixture(scope="module")
def low_rate_mp3(tmp_path_factory):
    """64 s of speech as a 16 kbit/s, 22 050 Hz mono MP3 (a voice memo's settings)."""
    folder = tmp_path_factory.mktemp("mp3")
    speech, sr = sf.read(synthesize(TEXT, folder / "speech.wav"), dtype="float32")
    return fx.write_pyav(folder / "memo.mp3", speech, sr, codec="libmp3lame", container_format="mp3",
                         bit_rate=16000)


def ffmpeg_decode(path) -> np.ndarray:
    with av.open(str(path)) as container:
        return np.concatenate([frame.to_ndarray().reshape(-1) for frame in container.decode(audio=0)])


def libsndfile_in_blocks(path) -> np.ndarray:
    with sf.SoundFile(str(path)) as f:
        return np.concatenate(list(f.blocks(blocksize=1 << 16, dtype="float32")))


def test_this_mp3_is_one_libsndfile_reads_wrong_in_blocks(low_rate_mp3):
    # The premise: if libsndfile reads this file correctly in the import's blocks, the test below proves nothing.
    reference = ffmpeg_decode(low_rate_mp3)
    blocks = libsndfile_in_blocks(low_rate_mp3)
    assert blocks.shape == reference.shape
    assert np.abs(blocks - reference).max() > 0.05


def test_the_import_decodes_a_low_rate_mp3_as_ffmpeg_does(low_rate_mp3, tmp_path, capfd):
    reference = ffmpeg_decode(low_rate_mp3)
    info, _analysis = decode.make_working_copy(low_rate_mp3, tmp_path / "working.wav")
    working, rate = sf.read(tmp_path / "working.wav", dtype="float32")
    assert rate == info.sample_rate == 22050
    assert working.shape == reference.shape
    # The working copy is normalised and 16-bit: compare its shape of sound, scaled back, to one 16-bit step.
    scale = float(np.dot(working, reference) / np.dot(reference, reference))
    assert np.abs(working / scale - reference).max() < 4 / 32768 / scale
    assert "part2_3_length" not in capfd.readouterr().err

    loaded, sr = decode.load(low_rate_mp3)
    assert sr == 22050
    np.testing.assert_allclose(loaded[:, 0], reference, atol=1e-6)
