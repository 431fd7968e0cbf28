"""Every XTTS language end to end, through the CLI as a user would run it: a project in that language, clips
with text in that language brought in as an LJSpeech folder (espeak-ng speech), the dataset, 2 training steps
of the tiny test model, a preview of a text longer than the language's character limit and an AllTalk export.

The tiny model and the espeak-ng recordings of all languages are made once per session and shared; each test
then costs about what its two training steps, its preview and its export do.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import soundfile as sf

from alltalk_gui.cli import main
from alltalk_gui.core.engine_api.languages import CODES, char_limit
from alltalk_gui.core.engines.xtts.sample_sentences import ESPEAK_VOICES, SAMPLE_SENTENCES
from alltalk_gui.testing.speech import espeak_available, synthesize
from tests.conftest import session_folder

pytestmark = pytest.mark.skipif(not espeak_available(), reason="needs espeak-ng")
FAST = ["--set", "min_conditioning_seconds=1", "--set", "max_conditioning_seconds=2", "--set", "device=cpu",
        "--set", "lr=0.001", "--set", "warmup_steps=0", "--set", "batch_size=2", "--set", "max_steps=2",
        "--set", "memory_interval_s=60"]
TIMES: dict[str, float] = {}


@pytest.fixture(scope="session")
def tiny_multilingual(tmp_path_factory) -> Path:
    from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_xtts

    return build_tiny_xtts(session_folder(tmp_path_factory, "tiny_multilingual"))


def ljspeech_folder(folder: Path, code: str) -> Path:
    """The language's sample sentences spoken by espeak-ng, as an LJSpeech folder (metadata.csv + wavs/)."""
    (folder / "wavs").mkdir(parents=True)
    lines = []
    for i, text in enumerate(SAMPLE_SENTENCES[code]):
        synthesize(text, folder / "wavs" / f"{code}_{i}.wav", voice=ESPEAK_VOICES[code], words_per_minute=150)
        lines.append(f"{code}_{i}|{text}|{text}")
    (folder / "metadata.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize("code", CODES)
def test_language_from_clips_to_export(code, tiny_multilingual, tmp_path, capsys):
    started = time.monotonic()
    project = tmp_path / f"voice_{code}"
    data = ljspeech_folder(tmp_path / "data", code)
    assert main(["new", str(project), "--language", code]) == 0
    assert main(["import-dataset", str(project), str(data)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["segments", str(project), "--json"]) == 0
    clips = json.loads(capsys.readouterr().out)
    assert [c["text"] for c in clips] == list(SAMPLE_SENTENCES[code])
    assert not any(f["code"] in ("unencodable", "empty_text", "too_long") for c in clips for f in c["flags"])
    assert main(["dataset", str(project)]) == 0, capsys.readouterr().err
    assert main(["train", str(project), "--base-model", str(tiny_multilingual), "--run", "r", *FAST]) == 0, \
        capsys.readouterr().err
    assert "Done (max_steps) after step 2" in capsys.readouterr().out
    out = tmp_path / "preview.wav"
    # Longer than the language's character limit: spoken piece by piece, cut at sentence ends.
    long_text = " ".join(SAMPLE_SENTENCES[code] * 4)
    assert len(long_text) > char_limit(code)
    assert main(["preview", str(project), "--text", long_text, "--out", str(out),
                 "--reference", str(data / "wavs" / f"{code}_1.wav"),  # espeak's clips are shorter than 3 s
                 "--max-new-tokens", "8", "--device", "cpu"]) == 0, capsys.readouterr().err
    audio, rate = sf.read(out)
    assert rate == 24000 and audio.size > 0
    assert main(["export", str(project), "--format", "alltalk", "--out", str(tmp_path / "models"), "--half",
                 "--reference", str(data / "wavs" / f"{code}_1.wav")]) == 0, capsys.readouterr().err
    # A folder named models is AllTalk's: the AllTalk format goes into its models/xtts, where AllTalk looks.
    assert (tmp_path / "models" / "xtts" / f"voice_{code}" / "model.pth").is_file()
    TIMES[code] = time.monotonic() - started
    print(f"{code}: {TIMES[code]:.1f} s")
