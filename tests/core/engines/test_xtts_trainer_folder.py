"""AllTalk's own training folder (coqui's Trainer: ``best_model.pth``, ``config.json``, ``vocab.json``, no
``model.pth``, no DVAE, no mel statistics) works as an XTTS v2 model: as the base of a run, to speak with, and
through the export of a run trained on it; the GPT is the user's, the DVAE and mel statistics the chosen base's.
The save is written by coqui's real GPTTrainer and Trainer (alltalk_gui/core/engines/xtts/trainer_run.py).
Bad folders are refused saying what to do, and nothing in any folder changes."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from alltalk_gui.core import app_settings
from alltalk_gui.core.engine_api.engine import BaseModelError, get_engine
from alltalk_gui.core.engines.xtts.files import RETRY_WAIT_S, read_model_state
from alltalk_gui.core.engines.xtts.layout import QUIET_SECONDS, model_files, still_training, trainer_weights
from alltalk_gui.core.engines.xtts.model import load_gpt, load_inference_model
from alltalk_gui.core.engines.xtts.trainer_run import GPT_SCALE, write_trainer_run
from tests.trained_voice import trained_voice

KEY = "text_embedding.weight"


@pytest.fixture(scope="module")
def voice(tmp_path_factory):
    return trained_voice(tmp_path_factory)


@pytest.fixture(scope="module")
def run_folder(voice, tmp_path_factory) -> Path:
    """AllTalk's finetune/<project>/training/XTTS_FT-<date>/ as coqui's Trainer leaves it."""
    folder = tmp_path_factory.mktemp("finetune") / "voice" / "training" / "XTTS_FT-November-27-2026_12+00PM-abc"
    write_trainer_run(voice.base_model, folder, step=7)
    return folder


@pytest.fixture()
def settings(monkeypatch, tmp_path, voice):
    """App settings whose XTTS v2 base model is the tiny base the run was trained from."""
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "settings"))
    app_settings.set_value(get_engine("xtts").base_model_setting, str(voice.base_model))
    return tmp_path / "settings"


def listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def users_gpt(run_folder: Path) -> torch.Tensor:
    return torch.load(run_folder / "best_model.pth", weights_only=True, mmap=True)["model"][f"xtts.gpt.{KEY}"].clone()


def test_the_folder_is_what_alltalk_leaves(run_folder):
    assert sorted(p.name for p in run_folder.iterdir()) == ["best_model.pth", "best_model_7.pth", "config.json",
                                                             "vocab.json"]
    save = torch.load(run_folder / "best_model.pth", weights_only=True, mmap=True)  # the real format, as is
    assert {"config", "model", "optimizer", "scaler", "step", "epoch", "date", "model_loss"} <= set(save)
    assert isinstance(save["config"], dict) and save["optimizer"][0]["state"]  # AdamW's moments are in it
    assert any(k.startswith("dvae.") for k in save["model"]) and "xtts.mel_stats" in save["model"]


def test_a_training_folder_is_a_base_model_with_the_users_gpt(voice, run_folder, settings):
    before, base_before = listing(run_folder), listing(voice.base_model)
    said = get_engine("xtts").describe_base_model(run_folder)
    assert "GPT with 2 layers" in said and "weights from best_model.pth (a save of coqui's Trainer)" in said
    assert f"dvae.pth and mel_stats.pth from the XTTS v2 base model in {voice.base_model}" in said
    gpt, _, _ = load_gpt(run_folder)
    base_gpt, _, _ = load_gpt(voice.base_model)
    assert torch.equal(gpt.state_dict()[KEY], users_gpt(run_folder))  # the user's, not the base's
    assert torch.allclose(gpt.state_dict()[KEY], base_gpt.state_dict()[KEY] * GPT_SCALE)
    model = load_inference_model(run_folder)  # previews speak with the user's GPT
    assert torch.equal(model.gpt.text_embedding.weight, users_gpt(run_folder))
    assert torch.equal(model.mel_stats, torch.load(voice.base_model / "mel_stats.pth", weights_only=True))
    assert listing(run_folder) == before and listing(voice.base_model) == base_before  # nothing written


def test_which_save_is_used(tmp_path):
    for name in ("checkpoint_10.pth", "checkpoint_9.pth"):
        (tmp_path / name).write_bytes(b"x")
    assert trainer_weights(tmp_path).name == "checkpoint_10.pth"  # the newest by step, not by name
    for name in ("best_model_5.pth", "best_model_40.pth"):
        (tmp_path / name).write_bytes(b"x")
    assert trainer_weights(tmp_path).name == "best_model_40.pth"  # a best model before any checkpoint
    (tmp_path / "best_model.pth").write_bytes(b"x")
    assert trainer_weights(tmp_path).name == "best_model.pth"  # the Trainer's copy of its best
    assert trainer_weights(tmp_path, still_written=True).name == "best_model_40.pth"  # not rewritten in place
    (tmp_path / "model.pth").write_bytes(b"x")
    assert model_files(tmp_path).weights.name == "model.pth"  # a model folder is used as one
    assert trainer_weights(tmp_path / "nothing") is None


def test_without_a_base_the_folder_says_what_to_do(run_folder, monkeypatch, tmp_path):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "settings"))
    before = listing(run_folder)
    with pytest.raises(BaseModelError) as refused:
        get_engine("xtts").describe_base_model(run_folder)
    said = str(refused.value)
    assert f"{run_folder} is a training folder of coqui's Trainer" in said and "uses its best_model.pth" in said
    assert "lacks dvae.pth and mel_stats.pth" in said and "no XTTS v2 base model is set" in said
    assert "download-base-model DIR --engine xtts" in said and "chkptandnorm" in said
    app_settings.set_value(get_engine("xtts").base_model_setting, str(tmp_path / "gone"))
    with pytest.raises(BaseModelError, match=f"base model of the app settings, {tmp_path / 'gone'}, does not exist"):
        get_engine("xtts").describe_base_model(run_folder)
    assert listing(run_folder) == before


def test_train_preview_and_export_on_a_training_folder(voice, run_folder, settings, tmp_path):
    """A run whose base is the training folder starts from the user's GPT, and its checkpoint previews and
    exports with the training folder as its base (the DVAE and mel statistics lent by the chosen base)."""
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.core.training.checkpoints import resolve_checkpoint
    from alltalk_gui.core.training.config import TrainConfig
    from alltalk_gui.core.training.events import Done, Log
    from alltalk_gui.core.training.loop import train
    from alltalk_gui.core.voice.export import ExportOptions, export_voice
    from alltalk_gui.core.voice.preview import GenerationSettings, PreviewEngine, generate_preview

    before = listing(run_folder)
    project = VoiceProject.create(tmp_path / "voice", name="Again", language="en")
    shutil.copytree(voice.project / "dataset", project.dataset_dir, dirs_exist_ok=True)
    config = TrainConfig(project_dir=str(project.root), base_model_dir=str(run_folder), run_name="r", device="cpu",
                         language="en", epochs=1, batch_size=2, lr=1e-9, warmup_steps=0, keep_last=1,
                         memory_interval_s=60.0)
    events = list(train(config))
    assert isinstance(events[-1], Done) and events[-1].reason == "finished", events[-1]
    assert any(isinstance(e, Log) and "weights from best_model.pth" in e.message for e in events)
    checkpoint = resolve_checkpoint(project.root, "latest")
    assert checkpoint.base_model_dir == run_folder
    trained, _, _ = load_gpt(run_folder, checkpoint.weights)
    assert torch.allclose(trained.state_dict()[KEY], users_gpt(run_folder), atol=1e-6)  # started from the user's

    take = generate_preview(PreviewEngine("cpu", engine="xtts"), base_model_dir=run_folder, checkpoint=checkpoint,
                            text="Hello.", references=sorted((project.dataset_dir / "wavs").glob("*.wav"))[:1],
                            language="en", settings=GenerationSettings(options={"max_new_tokens": 8}),
                            out_dir=tmp_path / "takes")
    assert take.wav.is_file()

    result = export_voice(checkpoint, tmp_path / "models" / "xtts", ExportOptions(format="alltalk", name="again"))
    exported = torch.load(result.folder / "model.pth", weights_only=True)["model"]
    assert torch.allclose(exported[f"gpt.{KEY}"], users_gpt(run_folder), atol=1e-6)
    assert not any(k.startswith("dvae.") for k in exported)  # compacted: inference weights only
    for name in ("dvae.pth", "mel_stats.pth"):  # what AllTalk lists a folder by, from the chosen base
        assert (result.folder / name).read_bytes() == (voice.base_model / name).read_bytes()
    assert (result.folder / "vocab.json").read_bytes() == (run_folder / "vocab.json").read_bytes()
    assert listing(run_folder) == before


def test_preview_model_option_speaks_with_a_training_folder(voice, run_folder, settings, tmp_path, capsys):
    from alltalk_gui.cli import main

    before = listing(run_folder)
    out = tmp_path / "takes" / "alltalk.wav"
    assert main(["preview", str(voice.project), "--text", "Hello world.", "--model", str(run_folder), "--out",
                 str(out), "--max-new-tokens", "8", "--device", "cpu"]) == 0
    said = capsys.readouterr().out
    assert "weights from best_model.pth" in said and out.is_file()
    assert listing(run_folder) == before


# -- bad folders: a clear refusal, nothing written ---------------------------------------------------------------

def _folder_with(tmp_path: Path, run_folder: Path, save: object | bytes, config: dict | None = None) -> Path:
    """A training folder with ``save`` as best_model.pth (bytes as they are), the run's vocab.json, and its
    config.json (or ``config``)."""
    import json

    folder = tmp_path / "XTTS_FT-bad"
    folder.mkdir(parents=True)
    if isinstance(save, bytes):
        (folder / "best_model.pth").write_bytes(save)
    else:
        torch.save(save, folder / "best_model.pth")
    shutil.copy2(run_folder / "vocab.json", folder / "vocab.json")
    if config is None:
        shutil.copy2(run_folder / "config.json", folder / "config.json")
    else:
        (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    _finished(folder)
    return folder


def _finished(folder: Path, s_ago: float = 3600.0) -> None:
    """Date the folder's files ``s_ago`` seconds back: a run that stopped then, not one AllTalk is still writing."""
    then = time.time() - s_ago
    for path in folder.iterdir():
        os.utime(path, (then, then))


def _refusal(folder: Path) -> str:
    before = listing(folder)
    with pytest.raises(BaseModelError) as refused:
        get_engine("xtts").describe_base_model(folder)
    assert listing(folder) == before
    return str(refused.value)


class _MakesAFolder:
    """A pickle that would make a folder if unpickled with code allowed (weights-only loading must refuse it)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return os.mkdir, (str(self.path),)


def test_a_truncated_save_is_damaged(run_folder, settings, tmp_path):
    with open(run_folder / "best_model.pth", "rb") as f:
        head = f.read(1 << 20)
    said = _refusal(_folder_with(tmp_path, run_folder, head))
    assert "best_model.pth in" in said and "damaged or incomplete" in said


def test_a_save_naming_code_is_refused_and_nothing_runs(run_folder, settings, tmp_path):
    marker = tmp_path / "made_by_the_pickle"
    said = _refusal(_folder_with(tmp_path, run_folder, {"model": {"xtts.gpt.x": torch.zeros(1)},
                                                         "config": _MakesAFolder(marker), "step": 1}))
    assert not marker.exists()
    assert "was not loaded: it names" in said and "mkdir" in said and "which the app does not run" in said


def test_numpy_scalars_in_a_save_are_plain_numbers(tmp_path):
    path = tmp_path / "best_model.pth"
    torch.save({"model": {"xtts.gpt.x": torch.ones(2)}, "model_loss": {"eval_loss": np.float64(0.5)},
                "step": np.int64(3), "epoch": np.int32(1)}, path)
    assert list(read_model_state(path)) == ["gpt.x"]


def test_an_empty_folder_names_the_files(settings, tmp_path):
    (tmp_path / "empty").mkdir()
    said = _refusal(tmp_path / "empty")
    assert "is missing model.pth, config.json, vocab.json, dvae.pth, mel_stats.pth" in said


def test_the_folder_of_alltalks_runs_names_them(run_folder, settings):
    said = _refusal(run_folder.parent)  # finetune/<project>/training/ instead of one of its runs
    assert f"It holds training folders of coqui's Trainer ({run_folder.name}): choose one of them." in said


def test_another_models_training_folder_is_refused(voice, run_folder, settings, tmp_path):
    """A VITS run (coqui's Trainer too, its config is VitsConfig's) and an F5-TTS trainer save named best_model.pth."""
    from TTS.tts.configs.vits_config import VitsConfig

    vits = _folder_with(tmp_path / "vits", run_folder, {"model": {"text_encoder.emb.weight": torch.zeros(4, 2)},
                                                         "step": 3}, config=VitsConfig().to_dict())
    assert "config.json in" in (said := _refusal(vits)) and "is not an XTTS config" in said and "'vits'" in said

    f5_folder = get_engine("f5").make_test_model(tmp_path / "f5")
    from safetensors.torch import load_file

    f5_state = load_file(str(next(f5_folder.glob("model_*.safetensors"))))
    f5 = _folder_with(tmp_path / "f5run", run_folder, {"model_state_dict": f5_state, "ema_model_state_dict": f5_state,
                                                        "optimizer_state_dict": {}, "update": 5})
    assert "best_model.pth in" in (said := _refusal(f5)) and "holds no XTTS GPT weights" in said


def test_a_save_with_only_the_optimizers_state_is_refused(run_folder, settings, tmp_path):
    save = torch.load(run_folder / "best_model.pth", weights_only=True)
    del save["model"]
    said = _refusal(_folder_with(tmp_path, run_folder, save))
    assert "holds a training state without model weights" in said and "optimizer" in said


# -- a run AllTalk is still training: refused as a base, previewed as it is, never read half-written -------------

def _live_copy(run_folder: Path, tmp_path: Path) -> Path:
    """The run as AllTalk leaves it while it still trains: its saves from a while ago, its log written just now."""
    live = tmp_path / "training" / run_folder.name
    shutil.copytree(run_folder, live)  # copy2: the saves keep their dates (an hour ago)
    with open(live / "trainer_0_log.txt", "a", encoding="utf-8") as log:
        log.write("   --> STEP: 50/120 -- GLOBAL_STEP: 50\n")
    return live


def test_when_a_folder_counts_as_still_training(tmp_path):
    (tmp_path / "best_model.pth").write_bytes(b"x")
    written = (tmp_path / "best_model.pth").stat().st_mtime
    assert still_training(tmp_path, now=written + QUIET_SECONDS + 1) is None  # left alone for ten minutes: finished
    live = still_training(tmp_path, now=written + 12)
    assert live.said() == f"AllTalk is still training in {tmp_path} (best_model.pth was written 12 s ago)"
    assert "wait for it to finish or choose a finished run" in live.refusal()
    assert still_training(tmp_path, now=written - 3).age_s == 0  # a network drive's clock a little ahead
    assert still_training(tmp_path, now=written - QUIET_SECONDS - 1) is None  # a date far in the future: not a run


def test_a_run_still_training_is_refused_as_a_base_and_previewed_as_it_is(voice, run_folder, settings, tmp_path,
                                                                         capsys):
    """The engine and the CLI: ``train --base-model`` refuses the folder, saying why and what to do; ``preview
    --model`` speaks with best_model_7.pth (the Trainer rewrites best_model.pth in place) and says so."""
    from alltalk_gui.cli import main

    live = _live_copy(run_folder, tmp_path)
    before = listing(live)
    with pytest.raises(BaseModelError) as refused:
        get_engine("xtts").validate_base_model(live)
    assert str(refused.value).startswith(f"AllTalk is still training in {live} (trainer_0_log.txt was written 0 s "
                                         "ago); wait for it to finish or choose a finished run.")
    said = get_engine("xtts").describe_base_model(live)  # the Train page's choice and the preview's check
    assert ("AllTalk is still training in this folder (trainer_0_log.txt was written 0 s ago): weights from "
            "best_model_7.pth (a save of coqui's Trainer) as it is now; wait for that run to finish before training "
            "from it") in said

    from alltalk_gui.core.project.folder import VoiceProject

    project = VoiceProject.create(tmp_path / "voice", name="Again", language="en")
    shutil.copytree(voice.project / "dataset", project.dataset_dir, dirs_exist_ok=True)
    assert main(["train", str(project.root), "--base-model", str(live), "--epochs", "1", "--set", "device=cpu"]) != 0
    out = capsys.readouterr()
    assert f"AllTalk is still training in {live} (trainer_0_log.txt was written" in out.out + out.err
    assert not list(project.root.glob("runs/*/checkpoints/*"))  # no step was trained

    take = tmp_path / "takes" / "live.wav"
    assert main(["preview", str(voice.project), "--text", "Hello world.", "--model", str(live), "--out", str(take),
                 "--max-new-tokens", "8", "--device", "cpu"]) == 0
    assert "AllTalk is still training in this folder" in capsys.readouterr().out and take.is_file()
    assert listing(live) == before


def _rewrite_in_place(path: Path, stop: threading.Event, contents: tuple[bytes, ...]) -> None:
    """What the Trainer's copy of its best model does to best_model.pth (shutil.copyfile: the same file truncated and
    written again), over and over, each time in pieces."""
    while not stop.is_set():
        for content in contents:
            with open(path, "r+b") as f:
                f.truncate(0)
                for start in range(0, len(content), 1 << 16):
                    f.write(content[start:start + (1 << 16)])
                    f.flush()


def test_a_preview_is_not_disturbed_by_the_trainer_rewriting_its_best_model(run_folder, settings, tmp_path):
    """While the preview's model loads, best_model.pth is truncated and rewritten in place (with another run's save
    between): the preview reads best_model_7.pth, the same weights, which the Trainer never rewrites."""
    live = _live_copy(run_folder, tmp_path)
    other = tmp_path / "other.pth"
    save = torch.load(run_folder / "best_model.pth", weights_only=True)
    save["model"] = {k: v * 3 if k.startswith("xtts.gpt.") else v for k, v in save["model"].items()}
    torch.save(save, other)
    stop = threading.Event()
    writer = threading.Thread(target=_rewrite_in_place, args=(live / "best_model.pth", stop,
                                                              (other.read_bytes(), (run_folder / "best_model.pth").read_bytes())))
    writer.start()
    try:
        model = load_inference_model(live)
        gpt, _, _ = load_gpt(live)
    finally:
        stop.set()
        writer.join()
    assert torch.equal(model.gpt.text_embedding.weight, users_gpt(run_folder))
    assert torch.equal(gpt.state_dict()[KEY], users_gpt(run_folder))
    assert (live / "best_model_7.pth").read_bytes() == (run_folder / "best_model_7.pth").read_bytes()


def _new_best(live: Path, run_folder: Path, step: int) -> tuple[Path, bytes]:
    """The first megabyte of the Trainer's new best save best_model_<step>.pth, as torch.save leaves it midway."""
    whole = (run_folder / "best_model_7.pth").read_bytes()
    path = live / f"best_model_{step}.pth"
    path.write_bytes(whole[:1 << 20])
    return path, whole


def test_a_save_still_being_written_is_read_again_once_it_is_whole(run_folder, settings, tmp_path):
    live = _live_copy(run_folder, tmp_path)
    path, whole = _new_best(live, run_folder, 9)
    finish = threading.Timer(RETRY_WAIT_S / 3, path.write_bytes, args=(whole,))  # the Trainer finishes the save
    finish.start()
    started = time.monotonic()
    try:
        gpt, _, _ = load_gpt(live)
    finally:
        finish.join()
    assert time.monotonic() - started >= RETRY_WAIT_S  # the half-written file was read again, after the wait
    assert torch.equal(gpt.state_dict()[KEY], users_gpt(run_folder))


def test_a_save_that_stays_half_written_is_refused_with_the_reason(voice, run_folder, settings, tmp_path, capsys):
    from alltalk_gui.cli import main

    live = _live_copy(run_folder, tmp_path)
    _new_best(live, run_folder, 9)  # the Trainer stalled midway (a full disk, say)
    before = listing(live)
    with pytest.raises(BaseModelError) as refused:
        load_gpt(live)
    said = str(refused.value)
    assert said.startswith(f"AllTalk is still training in {live} (best_model_9.pth was written") and \
        "best_model_9.pth is still being written. Wait for the run to finish or choose a finished run" in said
    take = tmp_path / "takes" / "half.wav"
    assert main(["preview", str(voice.project), "--text", "Hello world.", "--model", str(live), "--out", str(take),
                 "--max-new-tokens", "8", "--device", "cpu"]) != 0
    assert "best_model_9.pth is still being written" in capsys.readouterr().err and not take.exists()
    assert listing(live) == before
