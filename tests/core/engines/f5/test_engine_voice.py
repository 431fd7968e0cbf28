"""An F5-TTS checkpoint trained by the app's loop, through the app's own preview and export (the neutral
``core.voice`` functions that the Preview page and the CLI call): A/B with the base model and its reference's
words, then AllTalk v2 and plain F5 folders that f5-tts's own ``load_model`` and ``load_vocoder`` load strictly."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch

from alltalk_gui.core.training.checkpoints import default_checkpoint
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.loop import train
from alltalk_gui.core.voice.export import ExportError, ExportOptions, export_voice
from alltalk_gui.core.voice.preview import GenerationSettings, PreviewEngine, PreviewError, generate_ab
from alltalk_gui.core.voice.references import ReferenceClipError, choose_references, reference_text
from alltalk_gui.testing.speech import make_speech_dataset

from .test_synthesis_export import f5_load


@pytest.fixture(scope="module")
def project(tmp_path_factory, tiny_f5) -> Path:
    """A project with an F5 checkpoint: LoRA, EMA and a grown vocabulary, the hardest case to rebuild."""
    from alltalk_gui.core.dataset.metadata import TRAIN_CSV, MetadataRow, read_metadata, write_metadata

    root = tmp_path_factory.mktemp("f5_voice")
    make_speech_dataset(root / "dataset", n_train=3, n_eval=1)
    rows = read_metadata(root / "dataset" / TRAIN_CSV)
    rows[0] = MetadataRow(rows[0].audio_file, rows[0].text + " 5 €.", rows[0].speaker_name)
    write_metadata(root / "dataset" / TRAIN_CSV, rows)
    config = TrainConfig(engine="f5", project_dir=str(root), base_model_dir=str(tiny_f5), run_name="voice",
                         device="cpu", language="en", lr=1e-2, lr_batch=0, warmup_steps=0, batch_size=2, epochs=2,
                         max_audio_seconds=30.0, min_audio_seconds=1.0, lora_rank=4,
                         options={"ema_decay": 0.9, "add_missing_characters": True})
    events = list(train(config))
    assert events[-1].reason == "finished", events[-3:]
    return root


def test_ab_preview_speaks_after_a_dataset_clip_with_its_words(project, tmp_path):
    checkpoint = default_checkpoint(project)
    assert checkpoint.engine == "f5"
    references = [c.path for c in choose_references(project / "dataset")]
    engine = PreviewEngine("cpu", engine=checkpoint.engine)
    base, tuned = generate_ab(engine, checkpoint=checkpoint, text="Good morning, it costs five euros.",
                              references=references, language="en", settings=GenerationSettings(options={"steps": 4}),
                              out_dir=tmp_path)
    assert (base.label, tuned.label) == ("base", "fine-tuned")
    for result in (base, tuned):
        audio, rate = sf.read(result.wav)
        assert rate == 24000 and audio.ndim == 1 and len(audio) > 2400 and np.isfinite(audio).all()
        assert result.references == [str(references[0])]  # F5 continues one clip
        assert result.reference_text == reference_text(references[0]) and result.reference_text
        saved = json.loads(result.info.read_text())
        assert saved["settings"]["options"]["steps"] == 4 and saved["reference_text"] == result.reference_text
    assert not np.array_equal(sf.read(base.wav)[0], sf.read(tuned.wav)[0])  # the fine-tuning changed something


def test_the_grown_vocabulary_is_known_only_to_the_fine_tuned_model(project, tmp_path):
    checkpoint = default_checkpoint(project)
    references = [c.path for c in choose_references(project / "dataset")][:1]
    engine = PreviewEngine("cpu", engine="f5")
    with pytest.raises(PreviewError, match="does not know '€'"):  # the base model never had it
        from alltalk_gui.core.voice.preview import generate_preview

        generate_preview(engine, base_model_dir=checkpoint.base_model_dir, checkpoint=None, text="5 €.",
                         references=references, language="en", settings=GenerationSettings(options={"steps": 2}),
                         out_dir=tmp_path)


def test_a_reference_without_known_words_is_refused_and_explicit_words_are_used(project, tmp_path, speech):
    from alltalk_gui.core.voice.preview import generate_preview

    checkpoint = default_checkpoint(project)
    engine = PreviewEngine("cpu", engine="f5")
    own = tmp_path / "mine.wav"
    own.write_bytes(speech.read_bytes())
    common = dict(base_model_dir=checkpoint.base_model_dir, checkpoint=checkpoint, text="Hello.", references=[own],
                  language="en", settings=GenerationSettings(options={"steps": 2}), out_dir=tmp_path / "out")
    with pytest.raises(ReferenceClipError, match="exact transcript.*mine.txt"):
        generate_preview(engine, **common)
    assert not (tmp_path / "out").exists()
    result = generate_preview(engine, **common, reference_text="Hello there, this is a short test of the voice.")
    assert result.reference_text.startswith("Hello there")
    (tmp_path / "mine.txt").write_text("Hello there, this is it.\n", encoding="utf-8")
    assert reference_text(own) == "Hello there, this is it."


def test_a_preview_engine_of_another_model_is_refused(project, tmp_path):
    from alltalk_gui.core.voice.preview import generate_preview

    checkpoint = default_checkpoint(project)
    with pytest.raises(PreviewError, match="trained with F5-TTS v1, not XTTS v2"):
        generate_preview(PreviewEngine("cpu", engine="xtts"), base_model_dir=checkpoint.base_model_dir,
                         checkpoint=checkpoint, text="Hello.", references=[], language="en", settings=GenerationSettings(),
                         out_dir=tmp_path)


@pytest.mark.parametrize("fmt", ["alltalk", "f5"])
def test_exports_load_strictly_in_f5_tts_with_the_tuned_weights(project, tmp_path, fmt):
    from alltalk_gui.core.engines.f5.tuned import tuned_cfm

    checkpoint = default_checkpoint(project)
    references = [c.path for c in choose_references(project / "dataset")][:1]
    result = export_voice(checkpoint, tmp_path, ExportOptions(format=fmt, name="My Voice", references=references),
                          project_name="voice")
    assert result.folder.name == ("f5tts_v1_My_Voice" if fmt == "alltalk" else "My_Voice")
    weights = next(result.folder.glob("model_*.safetensors"))
    assert weights.name == f"model_{checkpoint.step}.safetensors" and result.model_bytes == weights.stat().st_size
    assert {"README.md", "export_info.json", "vocab.txt", "model_cfg.yaml", "vocos/config.yaml",
            "vocos/pytorch_model.bin"} <= set(result.files)
    name = result.folder.name.removeprefix("f5tts_v1_")
    assert (result.folder / "voices" / f"{name}.reference.txt").read_text().strip() == reference_text(references[0])
    info = json.loads((result.folder / "export_info.json").read_text())
    assert info["weights_are_ema"] and info["training_settings"]["lora_rank"] == 4
    assert "CC BY-NC 4.0" in info["licence"] and "NonCommercial" in (result.folder / "README.md").read_text()
    model, vocoder = f5_load(result.folder, weights)  # f5-tts's own loaders, strict
    ours = tuned_cfm(checkpoint.base_model_dir, checkpoint.path).cfm.state_dict()
    for key, value in model.state_dict().items():
        assert torch.equal(value, ours[key]), key
    assert "€" in model.vocab_char_map
    assert vocoder.decode(torch.randn(1, 100, 8)).shape[-1] == 7 * 256  # Vocos's ISTFT, centred
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left


def test_export_refusals_leave_nothing_behind(project, tmp_path, speech):
    checkpoint = default_checkpoint(project)
    with pytest.raises(ExportError, match="F5-TTS v1 cannot export the format 'coqui'; use alltalk or f5"):
        export_voice(checkpoint, tmp_path, ExportOptions(format="coqui", name="x"))
    with pytest.raises(ExportError, match="exact transcript"):
        export_voice(checkpoint, tmp_path, ExportOptions(format="f5", name="x", references=[speech]))
    with pytest.raises(ExportError, match="does not exist"):
        export_voice(checkpoint, tmp_path, ExportOptions(format="f5", name="x", references=[tmp_path / "no.wav"]))
    assert list(tmp_path.iterdir()) == []
    export_voice(checkpoint, tmp_path, ExportOptions(format="f5", name="x"))
    before = sorted(p.name for p in (tmp_path / "x").iterdir())
    with pytest.raises(ExportError, match="not empty"):
        export_voice(checkpoint, tmp_path, ExportOptions(format="f5", name="x"))
    assert sorted(p.name for p in (tmp_path / "x").iterdir()) == before


def test_export_refuses_when_the_disk_is_full(project, tmp_path, monkeypatch):
    from alltalk_gui.core.voice import export as neutral

    monkeypatch.setattr(neutral, "disk_free_bytes", lambda _path: 1000)
    with pytest.raises(ExportError, match="Not enough free space"):
        export_voice(default_checkpoint(project), tmp_path, ExportOptions(format="f5", name="x"))
    assert list(tmp_path.iterdir()) == []


def test_an_own_reference_exports_with_the_words_the_user_gave(project, tmp_path, speech):
    checkpoint = default_checkpoint(project)
    own = tmp_path / "clips" / "mine.wav"
    own.parent.mkdir()
    own.write_bytes(speech.read_bytes())
    words = "Hello there, this is a short test of the voice."
    result = export_voice(checkpoint, tmp_path / "out", ExportOptions(
        format="f5", name="x", references=[own], reference_texts={str(own): f"  {words} "}))
    assert (result.folder / "voices" / "x.reference.txt").read_text().strip() == words
    assert sorted(p.name for p in own.parent.iterdir()) == ["mine.wav"]  # nothing written beside the user's clip
