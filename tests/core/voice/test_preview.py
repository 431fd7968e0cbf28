"""Preview on the tiny model: a wav from a trained checkpoint, the A/B pair with the same seed, the WER beside each,
the per-checkpoint hook, default sentences, generation settings, and every bad input refused with nothing written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from alltalk_gui.core.engines.xtts.engine import OUTPUT_SAMPLE_RATE
from alltalk_gui.core.training.checkpoints import resolve_checkpoint
from alltalk_gui.core.voice.preview import (
    GenerationSettings,
    PreviewEngine,
    PreviewError,
    checkpoint_preview,
    checkpoint_previews_by_default,
    default_sentences,
    generate_ab,
    generate_preview,
    load_previews,
)
from alltalk_gui.core.voice.references import ReferenceClipError, choose_references, load_references
from alltalk_gui.core.transcription.wer import IntelligibilityChecker
from alltalk_gui.core.engine_api.engine import get_engine
from tests.take_stop import LONG_TEXT, Stopped, stop_at_part
from tests.trained_voice import trained_voice, whisper_tiny_en

FAST = GenerationSettings(options={"max_new_tokens": 8})  # the tiny model rarely stops by itself: cap the audio codes


@pytest.fixture(scope="module")
def voice(tmp_path_factory):
    return trained_voice(tmp_path_factory)


@pytest.fixture(scope="module")
def engine():
    return PreviewEngine("cpu", engine="xtts")


@pytest.fixture(scope="module")
def checker():
    return IntelligibilityChecker(model=whisper_tiny_en(), device="cpu")


@pytest.fixture(scope="module")
def references(voice):
    return [c.path for c in choose_references(voice.project / "dataset")]


@pytest.fixture(scope="module")
def ab(voice, engine, checker, references, tmp_path_factory):
    out = tmp_path_factory.mktemp("previews")
    checkpoint = resolve_checkpoint(voice.project, "latest")
    return generate_ab(engine, checkpoint=checkpoint, text="Hello world.", references=references, language="en",
                       settings=FAST, out_dir=out, checker=checker)


def _read(path: Path) -> tuple[np.ndarray, int]:
    data, rate = sf.read(str(path), dtype="float32")
    return data, rate


def test_preview_wav_from_a_trained_checkpoint(ab, voice):
    _base, tuned = ab
    data, rate = _read(tuned.wav)
    assert rate == OUTPUT_SAMPLE_RATE == tuned.sample_rate
    assert data.ndim == 1 and data.size > 1000 and np.isfinite(data).all() and np.abs(data).max() > 0
    assert tuned.duration_s == pytest.approx(data.size / rate)
    info = json.loads(tuned.info.read_text())
    assert info["label"] == "fine-tuned" and info["text"] == "Hello world." and info["language"] == "en"
    assert Path(info["checkpoint"]) == resolve_checkpoint(voice.project, "latest").path
    assert info["settings"]["options"]["max_new_tokens"] == 8 and info["settings"]["seed"] == 0
    assert info["base_model"] == str(voice.base_model) and len(info["references"]) >= 1


def test_ab_pair_same_sentence_same_seed_different_models(ab):
    base, tuned = ab
    assert (base.label, tuned.label) == ("base", "fine-tuned") and base.checkpoint is None
    assert base.text == tuned.text and base.settings == tuned.settings and base.references == tuned.references
    assert base.wav.parent == tuned.wav.parent and base.wav != tuned.wav
    a, _ = _read(base.wav)
    b, _ = _read(tuned.wav)
    assert a.shape != b.shape or not np.allclose(a, b)  # the fine-tuned GPT really speaks differently


def test_each_preview_has_a_word_error_rate(ab):
    for result in ab:
        # The tiny random model speaks noise: Whisper hears nothing like the sentence. A number, not a verdict.
        assert isinstance(result.wer, float) and result.wer >= 0.5 and isinstance(result.transcript, str)
        assert json.loads(result.info.read_text())["wer"] == result.wer


def test_same_seed_gives_the_same_audio(voice, engine, references, tmp_path):
    base = voice.base_model
    kw = dict(base_model_dir=base, checkpoint=None, text="Hello world.", references=references, language="en",
              settings=FAST, out_dir=tmp_path)
    a = generate_preview(engine, **kw)
    b = generate_preview(engine, **kw)
    assert a.wav != b.wav  # never overwrites an earlier preview
    np.testing.assert_array_equal(_read(a.wav)[0], _read(b.wav)[0])


def test_checkpoint_preview_hook_for_training(voice, engine, references):
    checkpoint = resolve_checkpoint(voice.project, "best")
    result = checkpoint_preview(checkpoint.path, "Hello world.", references, engine=engine,
                                settings=FAST)
    assert result.wav == voice.project / "previews" / "run1" / f"step_{checkpoint.step:07d}.wav"
    assert _read(result.wav)[1] == OUTPUT_SAMPLE_RATE and result.wer is None and result.wer_note


@pytest.mark.parametrize("text", ["", "   \n "])
def test_empty_text_is_refused(voice, engine, references, tmp_path, text):
    with pytest.raises(PreviewError, match="text is empty"):
        generate_preview(engine, base_model_dir=voice.base_model, checkpoint=None, text=text, references=references,
                         language="en", settings=FAST, out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_characters_the_vocabulary_lacks_are_named(voice, engine, references, tmp_path):
    with pytest.raises(PreviewError, match="vocabulary does not know .*'þ'"):
        generate_preview(engine, base_model_dir=voice.base_model, checkpoint=None, text="hello þing",
                         references=references, language="en", settings=FAST, out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("change, message", [({"temperature": 0.0}, "temperature"), ({"top_p": 1.5}, "top_p"),
                                             ({"top_k": 0}, "top_k"), ({"speed": 9.0}, "speed"),
                                             ({"repetition_penalty": 0.5}, "repetition_penalty")])
def test_out_of_range_settings_are_refused(voice, engine, references, tmp_path, change, message):
    with pytest.raises(PreviewError, match=message):
        generate_preview(engine, base_model_dir=voice.base_model, checkpoint=None, text="hello",
                         references=references, language="en", settings=FAST.with_values(change), out_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_missing_base_model_file_is_named(voice, references, tmp_path):
    base = tmp_path / "base"
    shutil.copytree(voice.base_model, base)
    (base / "model.pth").unlink()
    with pytest.raises(PreviewError, match="missing model.pth"):
        generate_preview(PreviewEngine("cpu", engine="xtts"), base_model_dir=base, checkpoint=None, text="hello",
                         references=references, language="en", settings=FAST, out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_references_bad_inputs(voice, tmp_path):
    with pytest.raises(ReferenceClipError, match="No reference clip"):
        load_references([], 22050)
    with pytest.raises(ReferenceClipError, match="does not exist"):
        load_references([tmp_path / "nope.wav"], 22050)
    (tmp_path / "junk.wav").write_bytes(b"not audio at all")
    with pytest.raises(ReferenceClipError, match="junk.wav cannot be read"):
        load_references([tmp_path / "junk.wav"], 22050)
    sf.write(tmp_path / "short.wav", np.zeros(2000, dtype=np.float32), 22050)
    with pytest.raises(ReferenceClipError, match="shorter than half a second"):
        load_references([tmp_path / "short.wav"], 22050)
    with pytest.raises(ReferenceClipError, match="No clean 3-10 second clip"):
        choose_references(tmp_path)  # no dataset here


def test_references_are_clean_clips_of_3_to_10_seconds(voice):
    chosen = choose_references(voice.project / "dataset", count=5)
    assert chosen and all(3.0 <= c.duration_s <= 10.0 and c.flatness < 0.3 for c in chosen)
    assert [c.flatness for c in chosen] == sorted(c.flatness for c in chosen)
    joined = load_references([c.path for c in chosen], 22050)
    total = sum(c.duration_s for c in chosen) + 0.2 * (len(chosen) - 1)
    assert joined.dtype == np.float32 and joined.size == pytest.approx(total * 22050, abs=len(chosen) + 1)


def test_generation_defaults_come_from_the_base_config(voice, tmp_path):
    xtts = get_engine("xtts")
    config = json.loads((voice.base_model / "config.json").read_text())
    options = GenerationSettings.for_engine(xtts, voice.base_model).engine_options(xtts)
    assert (options.temperature, options.repetition_penalty, options.top_k, options.top_p) == (
        config["temperature"], config["repetition_penalty"], config["top_k"], config["top_p"])
    assert options.speed == 1.0
    # No readable config (the GUI before a model is chosen): XTTS v2's released defaults.
    assert GenerationSettings.for_engine(xtts, tmp_path).engine_options(xtts) == xtts.generation_options()
    assert GenerationSettings().engine_options(xtts).generate_kwargs() == {
        "temperature": 0.75, "length_penalty": 1.0, "repetition_penalty": 5.0, "top_k": 50, "top_p": 0.85,
        "speed": 1.0}


def test_generation_settings_are_the_seed_and_the_engines_own_options():
    xtts, f5 = get_engine("xtts"), get_engine("f5")
    settings = GenerationSettings(seed=3).with_values({"temperature": 0.5, "seed": 4})
    assert settings == GenerationSettings(seed=4, options={"temperature": 0.5})
    settings.validate(xtts)
    with pytest.raises(PreviewError, match="F5-TTS v1: Unknown option.*temperature"):
        settings.validate(f5)  # F5-TTS samples in steps; it has no temperature
    with pytest.raises(PreviewError, match=r"steps must be between 1 and 128 \(it is 0\)"):
        GenerationSettings(options={"steps": 0}).validate(f5)
    with pytest.raises(PreviewError, match="seed must be between"):
        GenerationSettings(seed=-1).validate(xtts)
    with pytest.raises(PreviewError, match="Unknown generation setting.*beam"):
        GenerationSettings.from_dict({"seed": 1, "options": {}, "beam": 3})
    # A preview saved before engines owned their settings: every field side by side.
    old = {"temperature": 0.75, "length_penalty": 1.0, "repetition_penalty": 5.0, "top_k": 50, "top_p": 0.85,
           "speed": 1.0, "seed": 7, "max_new_tokens": 0, "steps": 32}
    read = GenerationSettings.from_dict(old)
    assert read.seed == 7 and read.options["steps"] == 32 and read.options["temperature"] == 0.75


def test_default_sentences_per_language():
    english = default_sentences("en")
    assert len(english) >= 3 and all(s and not s.startswith("#") for s in english)
    assert default_sentences("de-AT") == default_sentences("de") and default_sentences("de")[0].startswith("Der")
    assert default_sentences("xx") == []


def test_a_failing_whisper_check_keeps_the_take(voice, engine, references, tmp_path):
    class Broken:
        def check(self, *args):
            raise ValueError("this model only knows English")

    result = generate_preview(engine, base_model_dir=voice.base_model, checkpoint=None, text="Hello world.",
                              references=references, language="en", settings=FAST, out_dir=tmp_path,
                              checker=Broken())
    assert result.wav.is_file() and result.wer is None
    assert "Whisper could not transcribe it (this model only knows English)" in result.wer_note
    assert json.loads(result.info.read_text())["wer_note"] == result.wer_note


def test_previews_during_training_start_off_on_small_gpus():
    assert not checkpoint_previews_by_default(None)  # CPU only
    assert not checkpoint_previews_by_default(8.0)
    assert checkpoint_previews_by_default(24.0)


def test_two_ab_pairs_in_the_same_second_stay_two_pairs(voice, engine, references, tmp_path, monkeypatch):
    import alltalk_gui.core.voice.preview as preview_mod

    monkeypatch.setattr(preview_mod.time, "strftime", lambda fmt, *a: "20261122-120000")
    checkpoint = resolve_checkpoint(voice.project, "latest")
    for _ in range(2):
        generate_ab(engine, checkpoint=checkpoint, text="Hi.", references=references, language="en",
                    settings=FAST, out_dir=tmp_path)
    rows = load_previews(tmp_path)
    assert sorted(r[0].wav.name for r in rows) == ["20261122-120000_hi_2_base.wav", "20261122-120000_hi_base.wav"]
    assert all([t.label for t in row] == ["base", "fine-tuned"] for row in rows)


def test_saved_previews_are_read_back_as_rows(ab, tmp_path):
    base, tuned = ab
    rows = load_previews(tuned.wav.parent)
    assert [[r.label for r in row] for row in rows] == [["base", "fine-tuned"]]
    again = rows[0][1]
    assert again.wav == tuned.wav and again.settings == tuned.settings and again.wer == tuned.wer
    (tmp_path / "junk.json").write_text("{}")
    (tmp_path / "not json.json").write_text("{")
    assert load_previews(tmp_path) == []


def test_a_model_folder_is_checked_by_its_engine_and_refused_in_words(tmp_path, engine):
    from alltalk_gui.core.voice.preview import Voice, check_model_folder, generate_pair

    with pytest.raises(PreviewError, match="is not there any more"):  # chosen earlier, gone since
        check_model_folder(engine.engine, tmp_path / "gone")
    with pytest.raises(PreviewError, match="^There is no folder .*gone: check the path"):  # just typed
        check_model_folder(engine.engine, tmp_path / "gone", typed=True)
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(PreviewError, match="is a file, not a model folder"):
        check_model_folder(engine.engine, tmp_path / "a_file")
    (tmp_path / "empty").mkdir()
    with pytest.raises(PreviewError, match=r"^XTTS v2 cannot speak with this folder\. .*empty is missing model\.pth"):
        check_model_folder(engine.engine, tmp_path / "empty")
    (tmp_path / "link").symlink_to(tmp_path / "empty")
    loaded = dict(engine._models)
    with pytest.raises(PreviewError, match="^Both sides are the model folder empty: choose another model"):
        generate_pair(engine, Voice.model_folder(tmp_path / "empty"), Voice.model_folder(tmp_path / "link"),
                      text="Hi.", out_dir=tmp_path / "out")
    assert engine._models == loaded  # nothing loaded for it
    (tmp_path / "link").unlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file", "empty"]


def test_two_voices_of_one_kind_make_a_pair_and_both_stay_loaded(voice, references, checker, tmp_path):
    """Two checkpoints (two model folders alike: the page's and the CLI's tests): one row, in the order made, each take
    named by its voice, with its own WER; both stay loaded (two fine-tuned models used to drop each other)."""
    from alltalk_gui.core.training.checkpoints import list_checkpoints
    from alltalk_gui.core.voice.preview import MAX_LOADED, Voice, generate_pair

    engine = PreviewEngine("cpu", engine="xtts")
    older, newer = list_checkpoints(voice.project)[:2]
    pair = generate_pair(engine, Voice.tuned(older), Voice.tuned(newer), out_dir=tmp_path, text="Hello world.",
                         references=references, language="en", settings=FAST, checker=checker)
    assert [r.wav.name.rsplit("_", 1)[1] for r in pair] == ["fine-tuned.wav", "fine-tuned-2.wav"]
    assert [r.speaker for r in pair] == [f"Fine-tuned · {older.label}", f"Fine-tuned · {newer.label}"]
    assert all(isinstance(r.wer, float) for r in pair) and pair[0].pair == pair[1].pair != ""
    assert len(engine._models) == MAX_LOADED and all(key[1] for key in engine._models)  # both checkpoints
    (row,) = load_previews(tmp_path)
    assert [r.checkpoint for r in row] == [str(older.path), str(newer.path)]


def test_a_long_text_is_spoken_piece_by_piece_and_can_stop_between_them(voice, engine, references, tmp_path):
    """The one safe point in a long take: before each piece of the text (a model's synthesis of one piece cannot be
    cut short). The progress says how far it got, and what the callback raises there stops the take."""
    text = LONG_TEXT
    told, progress = stop_at_part(2)

    with pytest.raises(Stopped):
        generate_preview(engine, base_model_dir=voice.base_model, checkpoint=None, text=text, references=references,
                         language="en", settings=FAST, out_dir=tmp_path, progress=progress)
    assert told[-2] == "Speaking with the base model", told
    assert told[-1].startswith("Speaking with the base model, part 2 of ") and int(told[-1].rsplit(" ", 1)[1]) >= 3
    assert list(tmp_path.iterdir()) == []  # nothing written of the stopped take
