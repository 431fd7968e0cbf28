"""Export on the tiny model: coqui loads the folder strictly and speaks; the model file is compact and weights-only;
bad inputs are refused with nothing written; a crash midway leaves no half-written folder."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from alltalk_gui.core.voice import export as export_mod
from alltalk_gui.core.training.checkpoints import CheckpointInfo, resolve_checkpoint
from alltalk_gui.core.voice.export import ExportError, ExportOptions, export_voice
from alltalk_gui.core.voice.references import choose_references
from tests.trained_voice import folder_bytes, trained_voice


@pytest.fixture(scope="module")
def voice(tmp_path_factory):
    return trained_voice(tmp_path_factory)


@pytest.fixture(scope="module")
def checkpoint(voice) -> CheckpointInfo:
    return resolve_checkpoint(voice.project, "best")


@pytest.fixture(scope="module")
def references(voice) -> list[Path]:
    return [c.path for c in choose_references(voice.project / "dataset")]


@pytest.fixture(scope="module")
def alltalk_export(tmp_path_factory, checkpoint, references):
    out = tmp_path_factory.mktemp("alltalk_models")
    return export_voice(checkpoint, out, ExportOptions(format="alltalk", name="My Voice", references=references))


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_alltalk_export_has_the_folder_alltalk_lists(alltalk_export, references):
    folder = alltalk_export.folder
    assert folder.name == "My_Voice"
    # AllTalk v2 lists a models/xtts/<name>/ folder only when all six files are present.
    for name in ("config.json", "model.pth", "mel_stats.pth", "speakers_xtts.pth", "vocab.json", "dvae.pth"):
        assert (folder / name).is_file() and (folder / name).stat().st_size > 0, name
    assert sorted(p.name for p in (folder / "wavs").iterdir()) == sorted(
        f"reference_{i:02d}_{r.stem}.wav" for i, r in enumerate(references, start=1))
    assert alltalk_export.warnings == []
    assert _hidden(folder.parent) == []  # no temporary folder left beside it


def test_exported_folder_loads_strictly_in_coqui_and_speaks(alltalk_export):
    from TTS.tts.configs.xtts_config import XttsConfig
    from TTS.tts.models.xtts import Xtts

    folder = alltalk_export.folder
    before = (folder / "model.pth").read_bytes()
    config = XttsConfig()
    config.load_json(str(folder / "config.json"))
    model = Xtts(config)
    model.load_checkpoint(config, checkpoint_dir=str(folder), strict=True)
    assert (folder / "model.pth").read_bytes() == before  # coqui had nothing to rewrite
    # The AllTalk export computed this voice's latents into speakers_xtts.pth (the tiny base has none).
    assert model.speaker_manager.speaker_names == ["My_Voice"]
    latent, embedding = model.speaker_manager.speakers["My_Voice"].values()
    torch.manual_seed(0)
    wav = torch.as_tensor(model.inference("hello world.", "en", latent, embedding, max_new_tokens=8)["wav"])
    assert wav.ndim == 1 and wav.numel() > 1000 and torch.isfinite(wav).all() and wav.abs().max() > 0


def test_model_pth_is_compact_weights_only_and_holds_the_fine_tuned_gpt(alltalk_export, checkpoint, voice):
    folder = alltalk_export.folder
    # Plain torch.load with weights_only=True: no allow-listed classes needed, nothing executable inside.
    saved = torch.load(folder / "model.pth", map_location="cpu", weights_only=True)
    assert list(saved) == ["model"]
    state = saved["model"]
    prefixes = {k.split(".")[0] for k in state}
    assert prefixes == {"gpt", "hifigan_decoder", "mel_stats"}  # no optimizer, no DVAE, no mel front ends
    assert not any(k.startswith("gpt.gpt_inference.") for k in state)
    tuned = load_file(str(checkpoint.weights))
    base = torch.load(voice.base_model / "model.pth", map_location="cpu", weights_only=True)["model"]
    moved = 0
    for key, tensor in tuned.items():
        assert torch.equal(state[f"gpt.{key}"], tensor), key
        moved += not torch.equal(base[f"gpt.{key}"], tensor)
    assert moved > 10  # the export carries the trained GPT, not the base one
    for key in (k for k in state if k.startswith("hifigan_decoder.")):
        assert torch.equal(state[key], base[key]), key
    # Smaller than what a coqui-style training checkpoint of the same voice holds (base model + GPT + optimizer).
    model_bytes = (folder / "model.pth").stat().st_size
    assert model_bytes == alltalk_export.model_bytes
    assert model_bytes < folder_bytes(checkpoint.path) + (voice.base_model / "model.pth").stat().st_size


def test_half_precision_coqui_export_is_half_the_size(tmp_path, checkpoint, alltalk_export):
    result = export_voice(checkpoint, tmp_path, ExportOptions(format="coqui", name="half", half=True))
    names = set(result.files)
    assert {"model.pth", "config.json", "vocab.json", "README.md", "export_info.json"} <= names
    assert not {"dvae.pth", "mel_stats.pth", "speakers_xtts.pth"} & names  # tiny base has no speakers file
    state = torch.load(result.folder / "model.pth", map_location="cpu", weights_only=True)["model"]
    assert state["gpt.text_head.weight"].dtype == torch.float16 and state["mel_stats"].dtype == torch.float32
    full = (alltalk_export.folder / "model.pth").stat().st_size
    assert (result.folder / "model.pth").stat().st_size < 0.55 * full


def test_readme_and_info_say_what_it_is(alltalk_export, checkpoint):
    info = json.loads((alltalk_export.folder / "export_info.json").read_text())
    readme = (alltalk_export.folder / "README.md").read_text()
    assert info["licence"] == "Coqui Public Model License 1.0.0" and info["licence_url"] == "https://coqui.ai/cpml"
    assert info["checkpoint"]["step"] == checkpoint.step and info["training_settings"]["epochs"] == 2
    assert "not a voice" in info["base_model"]["description"]  # the tiny model's own description
    for needle in ("Coqui Public Model License 1.0.0", "https://coqui.ai/cpml", str(checkpoint.base_model_dir),
                   "| lr | 0.001 |", f"step {checkpoint.step}", "xtts - My_Voice"):
        assert needle in readme, needle
    # Epochs counted from 1, as the Train page shows them ("epoch 5/5"), where the checkpoint counts from 0.
    assert f"step {checkpoint.step}, epoch {checkpoint.epoch + 1}" in readme


def test_one_name_one_spelling_for_export_folders():
    from alltalk_gui.core.engines.f5.export import alltalk_name
    from alltalk_gui.core.voice.export import safe_name

    assert safe_name("Ada's voice") == "Adas_voice" and safe_name("Grandma’s  stories!") == "Grandmas_stories"
    assert safe_name("con") == "con_" and safe_name("LPT1") == "LPT1_"  # device names on Windows
    assert alltalk_name("Ada's voice") == "f5tts_v1_Adas_voice"


def test_training_files_are_optional_for_coqui(tmp_path, checkpoint):
    result = export_voice(checkpoint, tmp_path, ExportOptions(format="coqui", name="keep", training_files=True,
                                                              half=True))
    assert {"dvae.pth", "mel_stats.pth"} <= set(result.files)
    assert (result.folder / "dvae.pth").read_bytes() == (checkpoint.base_model_dir / "dvae.pth").read_bytes()


def test_non_empty_target_is_refused_unless_overwrite(tmp_path, checkpoint):
    target = tmp_path / "voice"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    with pytest.raises(ExportError, match="already exists and is not empty.*--overwrite"):
        export_voice(checkpoint, tmp_path, ExportOptions(format="coqui", name="voice"))
    assert [p.name for p in target.iterdir()] == ["notes.txt"] and _hidden(tmp_path) == []

    result = export_voice(checkpoint, tmp_path, ExportOptions(format="coqui", name="voice", overwrite=True,
                                                              half=True))
    assert not (target / "notes.txt").exists() and (target / "model.pth").is_file()
    assert result.folder == target and _hidden(tmp_path) == []


def test_an_empty_existing_target_is_used(tmp_path, checkpoint):
    (tmp_path / "voice").mkdir()
    result = export_voice(checkpoint, tmp_path, ExportOptions(format="coqui", name="voice", half=True))
    assert (result.folder / "model.pth").is_file()


def test_a_file_in_the_way_is_refused(tmp_path, checkpoint):
    (tmp_path / "voice").write_text("x")
    with pytest.raises(ExportError, match="is a file"):
        export_voice(checkpoint, tmp_path, ExportOptions(format="coqui", name="voice"))


def test_not_enough_free_space_is_refused_before_writing(tmp_path, checkpoint, monkeypatch):
    monkeypatch.setattr(export_mod, "disk_free_bytes", lambda path: 10 << 20)
    with pytest.raises(ExportError, match=r"Not enough free space .* needs about \d+ MB and 10 MB are free"):
        export_voice(checkpoint, tmp_path, ExportOptions(format="alltalk", name="voice"))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_crash_midway_leaves_no_half_written_folder(tmp_path, checkpoint, monkeypatch, error):
    real_copy = shutil.copy2
    written = []

    def failing_copy(src, dst, *a, **kw):
        if Path(src).name == "vocab.json":  # after model.pth and config.json are already in the temp folder
            written.extend(p.name for p in Path(dst).parent.iterdir())
            raise error
        return real_copy(src, dst, *a, **kw)

    monkeypatch.setattr(export_mod.shutil, "copy2", failing_copy)
    expected = ExportError if isinstance(error, OSError) else KeyboardInterrupt
    with pytest.raises(expected):
        export_voice(checkpoint, tmp_path, ExportOptions(format="coqui", name="voice", half=True))
    assert {"model.pth", "config.json"} <= set(written)  # the crash really came midway
    assert list(tmp_path.iterdir()) == []  # no target, no temporary folder


def test_crash_while_overwriting_keeps_the_old_folder(tmp_path, checkpoint, monkeypatch):
    target = tmp_path / "voice"
    target.mkdir()
    (target / "model.pth").write_bytes(b"old model")
    monkeypatch.setattr(export_mod.shutil, "copy2", lambda *a, **k: (_ for _ in ()).throw(OSError(5, "I/O error")))
    with pytest.raises(ExportError, match="could not be written.*I/O error.*It was undone: the folder that was there "
                                          "before is as it was"):
        export_voice(checkpoint, tmp_path, ExportOptions(format="coqui", name="voice", overwrite=True, half=True))
    assert (target / "model.pth").read_bytes() == b"old model" and _hidden(tmp_path) == []


def test_leftovers_of_a_killed_export_are_cleaned_up(tmp_path, checkpoint):
    stale = tmp_path / ".voice.export-abc123"
    stale.mkdir()
    (stale / "model.pth").write_bytes(b"half")
    export_voice(checkpoint, tmp_path, ExportOptions(format="coqui", name="voice", half=True))
    assert not stale.exists() and (tmp_path / "voice" / "model.pth").is_file()


@pytest.mark.parametrize("missing, fmt", [("dvae.pth", "alltalk"), ("vocab.json", "coqui"),
                                          ("model.pth", "coqui")])
def test_missing_base_model_file_is_named(tmp_path, checkpoint, missing, fmt):
    base = tmp_path / "base"
    shutil.copytree(checkpoint.base_model_dir, base)
    (base / missing).unlink()
    moved = CheckpointInfo(**{**checkpoint.__dict__, "base_model_dir": base})
    with pytest.raises(ExportError, match=f"missing {missing}"):
        export_voice(moved, tmp_path / "out", ExportOptions(format=fmt, name="voice"))
    assert not (tmp_path / "out" / "voice").exists()


def test_coqui_export_does_not_need_the_training_files(tmp_path, checkpoint):
    base = tmp_path / "base"
    shutil.copytree(checkpoint.base_model_dir, base)
    (base / "dvae.pth").unlink()
    moved = CheckpointInfo(**{**checkpoint.__dict__, "base_model_dir": base})
    result = export_voice(moved, tmp_path / "out", ExportOptions(format="coqui", name="voice", half=True))
    assert "dvae.pth" not in result.files


def test_checkpoint_from_another_base_model_is_refused(tmp_path, checkpoint):
    from safetensors.torch import save_file

    broken = tmp_path / "step_x"
    shutil.copytree(checkpoint.path, broken)
    weights = load_file(str(broken / "model.safetensors"))
    weights.pop("text_head.weight")
    save_file(weights, str(broken / "model.safetensors"))
    other = CheckpointInfo(**{**checkpoint.__dict__, "path": broken})
    with pytest.raises(ExportError, match=r"does not match the base model .*1 tensors missing.*gpt.text_head.weight"):
        export_voice(other, tmp_path / "out", ExportOptions(format="coqui", name="voice"))
    assert not (tmp_path / "out" / "voice").exists()


def test_bad_names_and_formats(tmp_path, checkpoint):
    with pytest.raises(ExportError, match="cannot be used as a folder name"):
        export_voice(checkpoint, tmp_path, ExportOptions(name="../.."))
    with pytest.raises(ExportError, match="XTTS v2 cannot export the format 'onnx'; use alltalk or coqui"):
        export_voice(checkpoint, tmp_path, ExportOptions(format="onnx", name="x"))
    with pytest.raises(ExportError, match="XTTS v2 cannot export the format 'f5'"):  # F5-TTS's own format
        export_voice(checkpoint, tmp_path, ExportOptions(format="f5", name="x"))
    with pytest.raises(ExportError, match="reference clip .* does not exist"):
        export_voice(checkpoint, tmp_path, ExportOptions(name="x", references=[tmp_path / "nope.wav"]))
    assert list(tmp_path.iterdir()) == []


def test_a_killed_export_process_leaves_no_target(tmp_path, checkpoint):
    """A hard kill (SIGKILL, as a power cut or the OOM killer) after model.pth is written: the target never
    appears, only a hidden temporary folder, which the next export of that name removes."""
    import subprocess
    import sys

    code = f"""
import os, signal
from alltalk_gui.core.training.checkpoints import read_checkpoint
from alltalk_gui.core.voice.export import ExportOptions, export_voice

def progress(what, fraction):
    if what == "Copying config.json":
        os.kill(os.getpid(), signal.SIGKILL)

export_voice(read_checkpoint({str(checkpoint.path)!r}), {str(tmp_path)!r},
             ExportOptions(format="coqui", name="voice", half=True), progress=progress)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == -9, done.stderr
    assert not (tmp_path / "voice").exists()
    leftovers = _hidden(tmp_path)
    assert len(leftovers) == 1 and leftovers[0].startswith(".voice.export-")
    assert (tmp_path / leftovers[0] / "model.pth").is_file()  # it really died after writing the model
    export_voice(checkpoint, tmp_path, ExportOptions(format="coqui", name="voice", half=True))
    assert _hidden(tmp_path) == [] and (tmp_path / "voice" / "model.pth").is_file()


def test_references_in_other_formats_are_exported_as_wav(tmp_path, checkpoint, references):
    import soundfile as sf

    data, rate = sf.read(str(references[0]), dtype="float32")
    flac = tmp_path / "take one.flac"
    sf.write(flac, data, rate)
    result = export_voice(checkpoint, tmp_path / "out", ExportOptions(format="coqui", name="v", half=True,
                                                                      references=[flac, references[0]]))
    assert [f for f in result.files if f.startswith("wavs/")] == [
        "wavs/reference_01_take one.wav", f"wavs/reference_02_{references[0].stem}.wav"]
    again, again_rate = sf.read(str(result.folder / "wavs" / "reference_01_take one.wav"), dtype="float32")
    assert again_rate == rate and again.shape == data.shape


def test_an_output_folder_that_cannot_be_created_is_reported(tmp_path, checkpoint):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ExportError, match="Cannot create the output folder"):
        export_voice(checkpoint, tmp_path / "file" / "models", ExportOptions(format="coqui", name="v"))


def test_publishing_waits_while_an_antivirus_holds_the_new_folder(tmp_path, checkpoint, monkeypatch):
    """Windows refuses the final rename (WinError 5) while a scanner reads the new model; it is retried."""
    from alltalk_gui.core import folders

    real_rename, refused = os.rename, []

    def scanned(source, target):
        if Path(source).name.startswith(".voice.export-") and len(refused) < 2:
            refused.append(source)
            raise PermissionError(13, "Access is denied")
        real_rename(source, target)

    monkeypatch.setattr(folders.os, "rename", scanned)
    result = export_voice(checkpoint, tmp_path, ExportOptions(format="coqui", name="voice", half=True))
    assert len(refused) == 2 and (tmp_path / "voice" / "model.pth").is_file() and _hidden(tmp_path) == []
    assert result.warnings == []


def test_an_old_folder_that_cannot_be_deleted_is_reported(tmp_path, checkpoint, monkeypatch):
    from alltalk_gui.core import folders

    (tmp_path / "voice").mkdir()
    (tmp_path / "voice" / "model.pth").write_bytes(b"old model")

    def locked(path):
        raise PermissionError(13, "Access is denied", str(path))

    monkeypatch.setattr(folders, "_rmtree", locked)
    monkeypatch.setattr(folders, "RETRY_DELAYS_S", ())
    result = export_voice(checkpoint, tmp_path, ExportOptions(format="coqui", name="voice", overwrite=True,
                                                               half=True))
    assert (tmp_path / "voice" / "model.pth").read_bytes() != b"old model"  # the new export is in place
    [aside] = _hidden(tmp_path)
    assert result.warnings == [f"Could not delete {tmp_path / aside}: Access is denied. Delete it by hand to free its space."]


def test_a_kill_between_the_two_renames_loses_nothing(tmp_path, checkpoint, monkeypatch):
    """Issue 18 item 8: the old export set aside, then the process dies before the new one is renamed in."""
    target = tmp_path / "voice"
    target.mkdir()
    (target / "model.pth").write_bytes(b"old model")
    real_rename = export_mod.os.rename

    def killed_after_setting_aside(src, dst):
        if Path(src).name.startswith(".voice.export-"):
            raise SystemExit("killed between the renames")
        return real_rename(src, dst)

    monkeypatch.setattr(export_mod.os, "rename", killed_after_setting_aside)
    with pytest.raises(SystemExit):
        export_voice(checkpoint, tmp_path, ExportOptions(format="coqui", name="voice", overwrite=True, half=True))
    monkeypatch.undo()
    aside = [p for p in tmp_path.iterdir() if p.name.startswith(".voice.old-")]
    assert not target.exists() and len(aside) == 1  # the accident: the old export is only the hidden copy
    assert (aside[0] / "model.pth").read_bytes() == b"old model"

    # The next export without --overwrite puts it back and refuses, as for any existing folder.
    with pytest.raises(ExportError, match="already exists"):
        export_voice(checkpoint, tmp_path, ExportOptions(format="coqui", name="voice", half=True))
    assert (target / "model.pth").read_bytes() == b"old model" and _hidden(tmp_path) == []
    # With --overwrite it is replaced the normal way.
    export_voice(checkpoint, tmp_path, ExportOptions(format="coqui", name="voice", overwrite=True, half=True))
    assert (target / "model.pth").read_bytes() != b"old model" and _hidden(tmp_path) == []


def test_exported_files_are_readable_by_other_users_even_with_a_private_umask(tmp_path, checkpoint, references):
    """Issue 18 item 9: AllTalk often runs as another user; atomic writes alone leave files at 0600."""
    import os
    import stat

    old_umask = os.umask(0o077)
    try:
        result = export_voice(checkpoint, tmp_path, ExportOptions(format="alltalk", name="shared", half=True,
                                                                  references=references[:1]))
    finally:
        os.umask(old_umask)
    modes = {str(p.relative_to(result.folder)): stat.S_IMODE(p.stat().st_mode) for p in result.folder.rglob("*")}
    assert modes["README.md"] == modes["export_info.json"] == modes["model.pth"] == 0o644
    assert modes["wavs"] == 0o755 and stat.S_IMODE(result.folder.stat().st_mode) == 0o755
    assert set(modes.values()) == {0o644, 0o755}
