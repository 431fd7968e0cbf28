"""Preview synthesis writes audio; exports (AllTalk v2 and plain F5) load strictly with f5-tts's own
``load_model`` and ``load_vocoder(is_local=True)`` and hold exactly the trained weights."""

from __future__ import annotations

import os

import numpy as np
import pytest
import soundfile as sf
import torch
import yaml

from alltalk_gui.core.engines.f5.export import F5ExportError, ReferenceVoice, alltalk_name, export_f5
from alltalk_gui.core.engines.f5.files import validate_base_model
from alltalk_gui.core.engines.f5.model import export_state, load_f5
from alltalk_gui.core.engines.f5.synthesis import (
    cpu_seconds_estimate,
    load_vocoder,
    synthesize_to_file,
    time_one_pass,
)
from alltalk_gui.core.engines.f5.text import extend_vocabulary
from alltalk_gui.core.engines.f5.tiny_model import perturb_zero_weights
from alltalk_gui.core.engines.f5.upstream import f5_model_package

from .conftest import REFERENCE_TEXT


def test_preview_writes_speech_length_audio(tiny_f5, speech, tmp_path):
    cfm, _ = load_f5(tiny_f5)
    vocoder = load_vocoder(tiny_f5 / "vocos")
    out = tmp_path / "preview.wav"
    result = synthesize_to_file(cfm, vocoder, speech, REFERENCE_TEXT, "Good morning, how are you today?", out, nfe=4)
    audio, rate = sf.read(out)
    assert rate == 24000 and audio.ndim == 1
    assert len(audio) == pytest.approx(result.frames * 256, abs=256)
    ref_seconds = sf.info(speech).duration
    assert 0.3 * ref_seconds < len(audio) / rate < 1.5 * ref_seconds  # the new text is shorter than the reference's
    assert np.isfinite(audio).all() and np.abs(audio).max() > 0
    assert cfm.training  # left as it was


def test_cpu_time_estimate_grows_with_steps(tiny_f5):
    cfm, _ = load_f5(tiny_f5)
    per_frame = time_one_pass(cfm, frames=200)
    assert per_frame > 0
    assert cpu_seconds_estimate(per_frame, 5, 3, 32) == pytest.approx(2 * cpu_seconds_estimate(per_frame, 5, 3, 16))


@pytest.fixture(scope="module")
def trained(tiny_f5):
    """The tiny model with changed weights and two added characters, as after a fine-tune."""
    cfm, info = load_f5(tiny_f5)
    perturb_zero_weights(cfm)
    with torch.no_grad():
        for parameter in cfm.parameters():
            parameter.add_(0.01)
    vocab = extend_vocabulary(cfm, info.vocab, ["Ø", "€"])
    return cfm, vocab, info


def f5_load(folder, weights, arch_file="model_cfg.yaml"):
    """Load an export exactly as f5-tts's inference does (infer_cli: load_vocoder + load_model)."""
    f5_model_package()  # f5_tts.model without its Trainer (wandb is not installed here)
    from f5_tts.infer.utils_infer import load_model, load_vocoder as f5_load_vocoder

    arch = yaml.safe_load((folder / arch_file).read_text())["model"]["arch"]
    from f5_tts.model import DiT

    model = load_model(DiT, arch, str(weights), mel_spec_type="vocos", vocab_file=str(folder / "vocab.txt"),
                       device="cpu")
    vocoder = f5_load_vocoder("vocos", is_local=True, local_path=str(folder / "vocos"), device="cpu")
    return model, vocoder


def test_alltalk_export_loads_strictly_in_f5_tts(trained, tiny_f5, speech, tmp_path):
    cfm, vocab, info = trained
    target = tmp_path / "models" / "f5tts" / alltalk_name("My Voice")
    assert target.name == "f5tts_v1_My_Voice"
    result = export_f5(export_state(cfm), vocab, info.arch, tiny_f5 / "vocos", target, step=120,
                       references=(ReferenceVoice("narrator", speech, REFERENCE_TEXT),))
    assert {"model_120.safetensors", "vocab.txt", "vocos/config.yaml", "vocos/pytorch_model.bin",
            "voices/narrator.wav", "voices/narrator.reference.txt", "model_cfg.yaml"} <= set(result.files)
    assert (target / "voices" / "narrator.reference.txt").read_text().strip() == REFERENCE_TEXT
    assert not [p for p in target.parent.iterdir() if p.name.startswith(".")]  # no temporary left
    model, vocoder = f5_load(target, result.weights)
    ours = cfm.state_dict()
    for key, value in model.state_dict().items():
        assert torch.equal(value, ours[key]), key
    assert model.vocab_char_map["€"] == len(vocab) - 1
    mel = torch.randn(1, 100, 20)
    torch.testing.assert_close(vocoder.decode(mel), load_vocoder(tiny_f5 / "vocos").decode(mel))
    assert validate_base_model(target).vocab == vocab  # an export can be the base of the next fine-tune


def test_plain_export_and_overwrite_rules(trained, tiny_f5, tmp_path):
    cfm, vocab, info = trained
    target = tmp_path / "plain"
    with pytest.raises(F5ExportError, match="tts_v"):
        export_f5(export_state(cfm), vocab, info.arch, tiny_f5 / "vocos", target)
    result = export_f5(export_state(cfm), vocab, info.arch, tiny_f5 / "vocos", target, alltalk=False)
    model, _ = f5_load(target, result.weights)
    assert model.transformer.dim == 64
    with pytest.raises(F5ExportError, match="not empty"):
        export_f5(export_state(cfm), vocab, info.arch, tiny_f5 / "vocos", target, alltalk=False)
    with pytest.raises(F5ExportError, match="do not belong together"):
        export_f5(export_state(cfm), vocab[:-1], info.arch, tiny_f5 / "vocos", target, alltalk=False,
                  overwrite=True)
    assert validate_base_model(target).weights == result.weights  # the refused export left the folder as it was
    export_f5(export_state(cfm), vocab, info.arch, tiny_f5 / "vocos", target, step=7, alltalk=False, overwrite=True)
    assert sorted(os.listdir(target)) == ["model_7.safetensors", "model_cfg.yaml", "vocab.txt", "vocos"]


def test_reference_without_transcript_is_refused_and_nothing_is_left(trained, tiny_f5, speech, tmp_path):
    cfm, vocab, info = trained
    target = tmp_path / "f5tts_v1_x"
    with pytest.raises(F5ExportError, match="transcript"):
        export_f5(export_state(cfm), vocab, info.arch, tiny_f5 / "vocos", target,
                  references=(ReferenceVoice("x", speech, " "),))
    assert not target.exists() and not list(tmp_path.iterdir())


def test_reference_choice_prefers_clean_sentence_clips():
    from alltalk_gui.core.engines.f5.synthesis import choose_reference

    clips = [("a", "Too short.", 1.5), ("b", "A clean sentence of eight seconds.", 8.0), ("c", "Cut off in the", 9.5),
             ("d", "Flagged but long and clean.", 9.9), ("e", "Twenty seconds of talk.", 20.0)]
    assert choose_reference(clips, flagged={"d"}) == ("b", "A clean sentence of eight seconds.")
    assert choose_reference([("e", "Long.", 20.0), ("c", "Cut off in the", 9.5)])[0] == "c"
    with pytest.raises(ValueError):
        choose_reference([("x", " ", 5.0)])
