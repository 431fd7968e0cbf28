"""Checks that need Parler-TTS's own code, run in the engine's environment (the tests call them through an
EngineChild and assert on what they return). Each compares our pieces with Parler's on the same inputs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch


def _quiet():
    from alltalk_gui.core.engines.parler.worker import quiet

    quiet()


def parler_labels(codes: torch.Tensor) -> torch.Tensor:
    """The labels of one clip as Parler's training script builds them (run_parler_tts_training.py,
    postprocess_dataset): a BOS column, build_delay_pattern_mask, EOS where the mask is -1, the BOS column dropped."""
    from parler_tts import build_delay_pattern_mask

    k = codes.shape[0]
    with_bos = torch.cat([torch.full((1, k, 1), 1025), codes[None]], dim=-1)
    labels, mask = build_delay_pattern_mask(with_bos, bos_token_id=1025, pad_token_id=1024,
                                            max_length=with_bos.shape[-1] + k, num_codebooks=k)
    return torch.where(mask == -1, 1024, mask)[:, 1:].T


def labels_agree(lengths: list[int]) -> bool:
    from alltalk_gui.core.engines.parler.data import labels_from_codes

    torch.manual_seed(0)
    return all(torch.equal(parler_labels(c), labels_from_codes(c))
               for c in (torch.randint(0, 1024, (9, n)) for n in lengths))


def parity(base: str, description: str, texts: list[str], lengths: list[int], train: bool) -> dict[str, Any]:
    """Our training loss (labels, prompt ids, description states once, batch, the trainable view) against
    Parler's own train_step on the same clips: ``model(**batch, loss_reduction="sum")`` divided by its
    num_items_in_batch (that expression counts every label position, padding included)."""
    from alltalk_gui.core.engines.parler import data, model

    _quiet()
    torch.manual_seed(0)
    parler = model.load_parler(base)
    tokenizer = model.load_tokenizer(base)
    codes = [torch.randint(0, 1024, (9, n)) for n in lengths]
    states = model.encode_descriptions(parler, tokenizer, [description], "cpu")[description]
    samples = [{"labels": data.labels_from_codes(c), "prompt": torch.tensor(tokenizer(t).input_ids),
                "description": states} for c, t in zip(codes, texts)]
    batch = data.collate(samples, tokenizer.pad_token_id)
    parler.train(train)  # train: the decoder's dropout, drawn the same in both from the same seed
    torch.manual_seed(1)  # the same dropout for both
    ours = model.loss(model.trainable_view(parler), batch)

    described = tokenizer([description] * len(texts), return_tensors="pt", padding=True)
    prompts = tokenizer(texts, return_tensors="pt", padding=True)
    labels = torch.nn.utils.rnn.pad_sequence([parler_labels(c) for c in codes], batch_first=True, padding_value=-100)
    num_items = (labels.ne(1025) | labels.ne(-100) | labels.ne(1024)).sum((0, 1))[0]
    torch.manual_seed(1)
    out = parler(input_ids=described.input_ids, attention_mask=described.attention_mask,
                 prompt_input_ids=prompts.input_ids, prompt_attention_mask=prompts.attention_mask, labels=labels,
                 loss_reduction="sum")
    theirs = out.loss / num_items
    return {"ours": float(ours["loss"]), "theirs": float(theirs),
            "ours_parts": [float(ours[f"codebook_{k}"]) for k in range(9)],
            "theirs_parts": [float(p / num_items) for p in out.per_codebook_losses],
            "positions": data.positions(batch), "num_items": int(num_items)}


def lora_targets(base: str, rank: int) -> dict[str, Any]:
    """What LoRA wraps and trains in the trainable view; and that merging it gives the same outputs."""
    from alltalk_gui.core.engines.parler import model

    _quiet()
    trainable = model.trainable_view(model.load_parler(base))
    model.add_lora(trainable, rank, 2.0 * rank)
    names = [n for n, p in trainable.named_parameters() if p.requires_grad]
    wrapped = sorted({n.split(".lora_")[0].split(".layers.")[1].split(".", 1)[1] for n in names})
    return {"trainable": names, "wrapped": wrapped, "count": model.trainable_parameters(trainable),
            "frozen_are_not_lora": all("lora_" not in n for n, p in trainable.named_parameters() if not p.requires_grad)}


def generate_with_parlers_class(folder: str, description: str, text: str) -> dict[str, Any]:
    """Load an exported folder with ParlerTTSForConditionalGeneration.from_pretrained and generate, as its README
    says (plain generate: the folder's own generation config)."""
    from parler_tts import ParlerTTSForConditionalGeneration
    from transformers import AutoTokenizer

    _quiet()
    model = ParlerTTSForConditionalGeneration.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    ids = tokenizer(description, return_tensors="pt")
    prompt = tokenizer(text, return_tensors="pt")
    torch.manual_seed(0)
    audio = model.generate(input_ids=ids.input_ids, attention_mask=ids.attention_mask,
                           prompt_input_ids=prompt.input_ids, prompt_attention_mask=prompt.attention_mask,
                           max_new_tokens=60)
    return {"samples": int(audio.numel()), "sampling_rate": int(model.config.sampling_rate),
            "class": type(model).__name__, "finite": bool(torch.isfinite(audio).all())}


def state_of(folder: str) -> dict[str, Any]:
    """Decoder weights of a saved Parler folder, by name (for comparing an export with a checkpoint)."""
    from safetensors.torch import load_file

    from alltalk_gui.core.engines.parler.files import weight_files

    state = {}
    for path in weight_files(Path(folder)):
        state.update(load_file(str(path)))
    return {k: v.float().numpy() for k, v in state.items() if k.startswith("decoder.model.decoder.layers.0.")}


def loader_workers(project: str, base: str, run: str, spawn: bool) -> dict[str, Any]:
    """The datasets and collate function Parler's training_setup builds (as the training child does, on the CPU)
    pickled as spawned DataLoader workers get them on Windows (tests/loader_workers.py); with ``spawn``, one batch
    from a loader whose one worker is spawned. Returns the seconds the setup and the spawned batch (0 without) took."""
    from tests.core.engines.parler.training_runs import parler_config
    from tests.loader_workers import round_trip, spawned_batch
    from alltalk_gui.core.engine_api.engine import get_engine

    _quiet()
    # A description of its own: measuring one from the dataset is not what this checks, and takes minutes.
    config = parler_config(Path(project), Path(base), run).with_values({"description": "Jenny speaks clearly."})
    config.run_dir.mkdir(parents=True, exist_ok=True)  # the loop makes it before training_setup
    engine = get_engine("parler")
    start = time.monotonic()
    setup = engine.training_setup(config, engine.load_clips(config), torch.device("cpu"))
    built = time.monotonic() - start
    round_trip(setup)
    return {"setup_seconds": built, "spawn_seconds": spawned_batch(setup) if spawn else 0.0}
