"""XTTS v2 engine: the tiny test model, base-model validation, and the training objective against coqui's own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from alltalk_gui.core.engines.xtts import conditioning_mask
from alltalk_gui.core.engines.xtts.files import REQUIRED_FILES, BaseModelError, validate_base_model
from alltalk_gui.core.engines.xtts.model import (
    enable_activation_checkpointing,
    gpt_loss,
    import_coqui_trainer,
    load_gpt,
)
from alltalk_gui.core.engines.xtts.data import ClipDataset, collate, gpt_inputs, load_dataset
from alltalk_gui.core.engines.xtts.front_end import ClipFeatures, FrontEnd, silence_frame
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.data import BucketBatchSampler
from alltalk_gui.core.engines.xtts.tiny_model import TINY, TINY_DVAE, build_tiny_xtts
from alltalk_gui.testing.speech import make_speech_dataset


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> Path:
    return make_speech_dataset(tmp_path_factory.mktemp("speech") / "dataset", n_train=4, n_eval=1)


def _copy(tiny: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "base"
    shutil.copytree(tiny, dest)
    return dest


def test_tiny_model_has_the_real_file_set_and_validates(tiny):
    assert {p.name for p in tiny.iterdir()} >= set(REQUIRED_FILES)
    info = validate_base_model(tiny)
    assert (info.gpt_layers, info.gpt_width, info.num_audio_tokens) == (2, 64, 64)
    assert info.dvae.num_tokens == 62 and info.dvae.hidden_dim == TINY_DVAE["hidden_dim"]
    assert 100_000 < info.gpt_parameters < 2_000_000  # tiny, not a voice
    config = json.loads((tiny / "config.json").read_text())
    assert "not a voice" in config["run_description"]


def test_tiny_model_is_deterministic(tiny, tmp_path):
    again = build_tiny_xtts(tmp_path / "again")
    a, _, _ = load_gpt(tiny)
    b, _, _ = load_gpt(again)
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), name


@pytest.mark.parametrize("missing", ["model.pth", "vocab.json", "dvae.pth", "mel_stats.pth", "config.json"])
def test_missing_base_model_file_is_named(tiny, tmp_path, missing):
    base = _copy(tiny, tmp_path)
    (base / missing).unlink()
    with pytest.raises(BaseModelError, match=f"missing {missing}"):
        validate_base_model(base)
    assert sorted(p.name for p in base.iterdir()) == sorted(set(REQUIRED_FILES) - {missing})


def test_wrong_vocab_is_rejected_with_the_token_counts(tiny, tmp_path):
    from tokenizers import Tokenizer

    base = _copy(tiny, tmp_path)
    vocab = Tokenizer.from_file(str(base / "vocab.json"))
    size = vocab.get_vocab_size()
    vocab.add_tokens(["zzz", "qqq", "xxyy"])  # a vocabulary from some other model
    vocab.save(str(base / "vocab.json"))
    with pytest.raises(BaseModelError, match=rf"vocab.json .* has {size + 3} tokens but model.pth was trained with {size}"):
        validate_base_model(base)


def test_damaged_checkpoint_is_named(tiny, tmp_path):
    base = _copy(tiny, tmp_path)
    data = (base / "dvae.pth").read_bytes()
    (base / "dvae.pth").write_bytes(data[: len(data) // 2])  # an interrupted copy
    with pytest.raises(BaseModelError, match="dvae.pth .* cannot be loaded"):
        validate_base_model(base)


def test_config_that_does_not_fit_the_weights_is_rejected(tiny, tmp_path):
    base = _copy(tiny, tmp_path)
    config = json.loads((base / "config.json").read_text())
    config["model_args"]["gpt_n_model_channels"] = 128
    (base / "config.json").write_text(json.dumps(config))
    with pytest.raises(BaseModelError, match=r"model.pth .* has shape .* config.json calls for"):
        validate_base_model(base)


def test_pickled_code_in_a_checkpoint_is_refused(tiny, tmp_path):
    """weights_only loading: a checkpoint that would run code on load is rejected, not executed."""
    base = _copy(tiny, tmp_path)
    torch.save({"model": {"gpt.x": torch.zeros(1)}, "payload": Path("/")}, base / "model.pth")
    with pytest.raises(BaseModelError, match="model.pth in .* was not loaded: it names pathlib.*the app does not run"):
        validate_base_model(base)


def _coqui_trainer(tiny: Path, monkeypatch):
    """coqui's own GPTTrainer over the tiny model files (DVAE widths patched to the tiny ones: coqui
    hard-codes the real DVAE's)."""
    gpt_trainer = import_coqui_trainer()
    real_dvae = gpt_trainer.DiscreteVAE
    monkeypatch.setattr(gpt_trainer, "DiscreteVAE", lambda **kw: real_dvae(**{**kw, **TINY_DVAE}))
    args = gpt_trainer.GPTArgs(
        tokenizer_file=str(tiny / "vocab.json"), mel_norm_file=str(tiny / "mel_stats.pth"),
        dvae_checkpoint=str(tiny / "dvae.pth"), xtts_checkpoint=str(tiny / "model.pth"),
        gpt_layers=TINY["gpt_layers"], gpt_n_model_channels=TINY["gpt_n_model_channels"],
        gpt_n_heads=TINY["gpt_n_heads"], gpt_num_audio_tokens=TINY["gpt_num_audio_tokens"],
        gpt_start_audio_token=TINY["gpt_start_audio_token"], gpt_stop_audio_token=TINY["gpt_stop_audio_token"],
        gpt_use_perceiver_resampler=True, gpt_use_masking_gt_prompt_approach=True,
        decoder_input_dim=TINY["decoder_input_dim"],
    )
    config = gpt_trainer.GPTTrainerConfig(model_args=args)
    return gpt_trainer.GPTTrainer(config)


def _dataset(tiny: Path, config, clips, *, seed: int, is_eval: bool = False) -> ClipDataset:
    """Our dataset of ``clips`` with their front end computed here (no cache)."""
    features = ClipFeatures(TrainConfig(base_model_dir=str(tiny)), config, "cpu", root=None).of(clips)
    return ClipDataset(clips, features, seed=seed, is_eval=is_eval, min_cond_samples=66150, max_cond_samples=132300,
                       hop=256, silence=silence_frame(tiny, config))


def test_same_objective_as_coqui_gpt_trainer(tiny, speech, monkeypatch):
    """Our batch -> GPT inputs -> loss gives coqui's GPTTrainer.train_step loss for the same inputs and weights
    where the two should agree: no clip's conditioning span masked (ours picks clips per (seed, epoch, clip),
    coqui's the last of the batch: see conditioning_mask.py). Our own mel targets give coqui's mel loss too."""
    threads = torch.get_num_threads()
    coqui = _coqui_trainer(tiny, monkeypatch)
    assert torch.get_num_threads() == threads  # importing coqui's trainer must not leave us on one thread

    gpt, config, tokenizer = load_gpt(tiny)
    train, _ = load_dataset(speech, tokenizer, "en", max_audio_seconds=11.6, min_audio_seconds=0.5,
                            max_text_tokens=200)
    batch = collate([_dataset(tiny, config, train, seed=3)[i] for i in range(3)])

    # fp32, same weights (coqui loaded model.pth itself), same dropout draws.
    for name, tensor in gpt.state_dict().items():
        assert torch.equal(tensor, coqui.xtts.gpt.state_dict()[name]), name
    coqui.eval()
    coqui.xtts.gpt.train()
    gpt.train()
    batch["cond_mask"] = [False] * 3
    ours_in = gpt_inputs(batch)
    theirs_in = {**{k: (v.clone() if torch.is_tensor(v) else v) for k, v in ours_in.items()}, "cond_idxs": None}
    torch.manual_seed(0)
    _, theirs = coqui.train_step(theirs_in, None)  # coqui's train_step without its mask (what its eval_step runs)
    torch.manual_seed(0)
    ours = gpt_loss(gpt, ours_in)
    for key in ("loss", "loss_text_ce", "loss_mel_ce"):
        assert ours[key].item() == pytest.approx(theirs[key].item(), rel=1e-5), key
    assert ours["loss"].item() > 0

    # The mel loss recomputed from the GPT's logits with our targets, nothing masked: coqui's, to float precision.
    gpt.eval()  # no dropout, so both come from the same logits
    with torch.no_grad():
        _, their_mel, logits = gpt(ours_in["text_inputs"], ours_in["text_lengths"], ours_in["audio_codes"],
                                   ours_in["wav_lengths"], cond_mels=ours_in["cond_mels"])
        ours_mel = conditioning_mask.mel_loss(gpt, logits, ours_in["audio_codes"], ours_in["wav_lengths"],
                                              ours_in["cond_idxs"], torch.zeros(3, dtype=torch.bool))
    assert ours_mel.item() == pytest.approx(their_mel.item(), rel=1e-6)
    # Eval drops the mask whatever the batch says, as coqui's eval_step does.
    ours_in["cond_mask"] = torch.ones(3, dtype=torch.bool)
    with torch.no_grad():
        assert gpt_loss(gpt, ours_in, eval_mode=True)["loss_mel_ce"].item() == pytest.approx(their_mel.item(), rel=1e-6)


def test_the_front_end_per_clip_is_coquis_front_end(tiny, speech, monkeypatch):
    """A clip's cached codes are the codes coqui's format_batch_on_device gives that clip when it is not padded
    (alone, or the longest of its batch); its conditioning slice is coqui's mel of the zero-padded slice inside
    the slice and in the padding, and differs only at the slice's edges (4 frames each side), where our frames see
    the clip's audio around the slice instead of coqui's padding."""
    from alltalk_gui.core.training.data import read_audio

    coqui = _coqui_trainer(tiny, monkeypatch)
    _, config, tokenizer = load_gpt(tiny)
    train, _ = load_dataset(speech, tokenizer, "en", max_audio_seconds=11.6, min_audio_seconds=0.5,
                            max_text_tokens=200)
    dataset = _dataset(tiny, config, train, seed=3)
    for index, clip in enumerate(train):
        wav = read_audio(clip.audio_path, 22050)
        item = dataset[index]
        start, end = item["cond_idxs"]
        assert start % 256 == 0
        conditioning = torch.nn.functional.pad(wav[:, start:end], (0, 132300 - (end - start)))
        theirs = coqui.format_batch_on_device({
            "padded_text": item["text"][None], "text_lengths": torch.tensor([len(clip.tokens)]),
            "wav": wav[None], "wav_lengths": torch.tensor([clip.samples]), "conditioning": conditioning[None, None],
            "cond_idxs": torch.tensor([[start, end]]), "cond_lens": None})
        assert torch.equal(item["codes"], theirs["audio_codes"][0])
        ours_mel, their_mel = item["conditioning"], theirs["cond_mels"][0, 0]
        assert ours_mel.shape == their_mel.shape == (80, 132300 // 256 + 1)
        inside = slice(4 if start > 0 else 0, (end - start) // 256 - 4)
        torch.testing.assert_close(ours_mel[:, inside], their_mel[:, inside], rtol=1e-4, atol=1e-4)
        after = slice((end - start) // 256 + 6, None)
        torch.testing.assert_close(ours_mel[:, after], their_mel[:, after], rtol=0, atol=1e-6)
    # A shorter clip batched with a longer one: coqui's codes of its last mel frames see the zeros after it.
    long, short = max(train, key=lambda c: c.samples), min(train, key=lambda c: c.samples)
    wavs = [read_audio(c.audio_path, 22050) for c in (long, short)]
    padded = torch.zeros(2, 1, long.samples)
    for row, wav in enumerate(wavs):
        padded[row, :, :wav.shape[-1]] = wav
    codes = FrontEnd(tiny, config).codes(padded)
    alone = FrontEnd(tiny, config).codes(wavs[1][None])[0]
    n = alone.shape[0] - 4
    assert torch.equal(codes[1, :n], alone[:n])  # all but the last few codes are the same either way


def test_activation_checkpointing_keeps_loss_and_gradients(tiny, speech):
    gpt_plain, config, tokenizer = load_gpt(tiny)
    gpt_ckpt, _, _ = load_gpt(tiny)
    assert enable_activation_checkpointing(gpt_ckpt) == TINY["gpt_layers"]
    train, _ = load_dataset(speech, tokenizer, "en", max_audio_seconds=11.6, min_audio_seconds=0.5,
                            max_text_tokens=200)
    dataset = _dataset(tiny, config, train, seed=1)
    inputs = gpt_inputs(collate([dataset[0], dataset[1]]))
    grads = []
    for model in (gpt_plain, gpt_ckpt):
        model.train()
        torch.manual_seed(5)
        loss = gpt_loss(model, inputs)["loss"]
        loss.backward()
        grads.append((loss.item(), model.text_head.weight.grad.clone()))
    assert grads[0][0] == pytest.approx(grads[1][0], rel=1e-6)
    torch.testing.assert_close(grads[0][1], grads[1][1], rtol=1e-4, atol=1e-7)


def test_bucket_sampler_visits_every_clip_once_per_epoch():
    lengths = [100 * (i % 7 + 1) for i in range(23)]
    sampler = BucketBatchSampler(lengths, 4, seed=9, bucket_batches=2)
    seen_orders = []
    for epoch in range(3):
        sampler.set_epoch(epoch)
        batches = list(sampler)
        flat = [i for b in batches for i in b]
        assert sorted(flat) == list(range(23)) and len(batches) == len(sampler) == 6
        seen_orders.append(flat)
    assert seen_orders[0] != seen_orders[1]
    sampler.set_epoch(1)
    assert [i for b in sampler for i in b] == seen_orders[1]  # the order depends only on (seed, epoch)


def test_inference_model_speaks_noise_with_the_tiny_model(tiny, speech):
    from alltalk_gui.core.engines.xtts.model import load_inference_model, synthesize
    from alltalk_gui.core.training.data import read_audio

    model = load_inference_model(tiny)
    torch.manual_seed(0)
    wav = synthesize(model, "hello world.", read_audio(speech / "wavs" / "clip_000.wav", 22050), "en", max_new_tokens=8)
    assert wav.ndim == 1 and wav.numel() > 0 and torch.isfinite(wav).all()


def test_thread_count_survives_importing_coqui_trainer():
    """coqui's trainer dataset module calls torch.set_num_threads(1) on import; we restore the count."""
    import subprocess
    import sys

    code = (
        "import torch; torch.set_num_threads(2)\n"
        "from alltalk_gui.core.engines.xtts.model import import_coqui_trainer\n"
        "import_coqui_trainer(); assert torch.get_num_threads() == 2, torch.get_num_threads()\n"
        "import importlib, TTS.tts.layers.xtts.trainer.dataset as d; importlib.reload(d)\n"
        "print(torch.get_num_threads())\n"  # what the bare import does, to show the fix matters
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1"


def test_optimizer_matches_coqui_adamw_with_decay_on_weights_only(tiny, monkeypatch):
    from alltalk_gui.core.training.config import TrainConfig
    from alltalk_gui.core.training.levers import make_optimizer

    coqui = _coqui_trainer(tiny, monkeypatch)
    coqui.config.optimizer = "AdamW"
    coqui.config.optimizer_params = {"betas": [0.9, 0.96], "eps": 1e-8, "weight_decay": 1e-2}
    coqui.config.optimizer_wd_only_on_weights = True
    theirs = coqui.get_optimizer()

    gpt, _, _ = load_gpt(tiny)
    ours = make_optimizer(gpt, TrainConfig(lr=5e-6))  # coqui's rate (ours is 1e-5 at 8 clips: schedule.py)
    names = {id(p): n for n, p in gpt.named_parameters()}
    our_groups = [sorted(names[id(p)] for p in g["params"]) for g in ours.param_groups]
    assert our_groups == [sorted(n) for n in theirs._group_names]
    for mine, coquis in zip(ours.param_groups, theirs.param_groups):
        assert mine["weight_decay"] == coquis["weight_decay"]
        assert mine["lr"] == coquis["lr"] == 5e-6 and tuple(mine["betas"]) == tuple(coquis["betas"]) == (0.9, 0.96)
    assert ours.param_groups[0]["weight_decay"] == 1e-2 and ours.param_groups[1]["weight_decay"] == 0
