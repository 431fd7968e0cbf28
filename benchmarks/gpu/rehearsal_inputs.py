"""What the card rehearsal trains: real-size base-model folders with random weights, and a voice project whose
clips are as long as each engine trains on (the worst case for memory, as batches are padded to their longest).

* :func:`write_xtts_base` - an XTTS v2 base folder the app's own loader reads: the real GPT architecture (441 M
  parameters, 6,681 text tokens) in ``model.pth``, the real DVAE widths, ``config.json``, and a ``vocab.json``
  that is the tiny model's byte-pair vocabulary (it encodes English) padded with unused tokens to the real
  vocabulary's 6,681, so the text embedding and head have their real size;
* :func:`write_f5_base` - an F5-TTS v1 Base folder: the real CFM + DiT (337 M parameters) over a 2,545-token
  vocabulary (the tiny model's characters, padded), as ``model_0.safetensors`` with F5's ``ema_model.*`` keys,
  and a tiny Vocos (training never runs the vocoder);
* :func:`write_project` - a voice project (``project.json``) whose dataset holds ``clips`` training clips and one
  eval clip of ``seconds`` each: quiet tones and noise, with an English transcript of a plausible length.

Nothing here is downloaded; the folders are written where the rehearsal runs (about 2 GB each).
"""

from __future__ import annotations

from pathlib import Path

XTTS_TEXT_TOKENS = 6681    # the published vocab.json
F5_VOCAB_SIZE = 2545       # F5TTS_v1_Base's vocab.txt
XTTS_CLIP_S = 11.0         # the XTTS memory figures are for 11 s clips (MAX_CLIP_MS: 11.6 s)
F5_CLIP_S = 29.9           # F5 trains on clips up to 30 s
SENTENCES = ("The weather was calm over the harbour this morning, and the boats went out early. ",
             "We walked along the old road to the village, talking about the summer and the sea. ",
             "Reading aloud for a few minutes gives the model enough to learn how a voice sounds. ")
CHARACTERS_PER_SECOND = 14  # read English


def transcript(seconds: float) -> str:
    """About as many characters as ``seconds`` of read English hold."""
    text, i = "", 0
    while len(text) < seconds * CHARACTERS_PER_SECOND:
        text += SENTENCES[i % len(SENTENCES)]
        i += 1
    return text[: int(seconds * CHARACTERS_PER_SECOND)].rsplit(" ", 1)[0].rstrip(",") + "."


def write_xtts_base(folder: str | Path, seed: int = 0) -> Path:
    import torch

    from alltalk_gui.core.engines.xtts.files import load_tokenizer
    from alltalk_gui.core.engines.xtts.gpt import build_gpt
    from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_vocab, write_config
    from real_size import DVAE_V2, XTTS_V2, write_front_end_files

    folder = Path(folder)
    write_front_end_files(folder, text_tokens=XTTS_TEXT_TOKENS, dvae=DVAE_V2, seed=seed)  # dvae.pth, mel_stats.pth
    build_tiny_vocab(folder / "vocab.json")  # replaces the word-level one: this one encodes English text
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "vocab.json"))
    fill = XTTS_TEXT_TOKENS - tokenizer.get_vocab_size()
    tokenizer.add_tokens([f"<unused{i}>" for i in range(fill)])
    tokenizer.save(str(folder / "vocab.json"))
    voice = load_tokenizer(folder)
    assert voice.get_number_tokens() == XTTS_TEXT_TOKENS, voice.get_number_tokens()

    config = write_config(folder, {**XTTS_V2, "gpt_use_masking_gt_prompt_approach": True}, voice,
                          "alltalk_gui card rehearsal: real-size XTTS v2 GPT with random weights, not a voice")
    torch.manual_seed(seed)
    gpt = build_gpt(config, voice)
    state = {f"gpt.{k}": v.contiguous() for k, v in gpt.state_dict().items()}
    torch.save({"model": state}, folder / "model.pth")
    return folder


def write_f5_base(folder: str | Path, seed: int = 0) -> Path:
    import torch
    import yaml
    from safetensors.torch import save_file

    from alltalk_gui.core import atomic
    from alltalk_gui.core.engines.f5.files import ARCH_FILE, V1_BASE_ARCH, VOCAB_FILE, VOCOS_DIR, arch_document, \
        write_vocab
    from alltalk_gui.core.engines.f5.model import build_cfm, export_state
    from alltalk_gui.core.engines.f5.tiny_model import TINY_VOCAB, build_tiny_vocos

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocab = TINY_VOCAB + [f"<unused{i}>" for i in range(F5_VOCAB_SIZE - len(TINY_VOCAB))]
    write_vocab(folder / VOCAB_FILE, vocab)
    atomic.write_text(folder / ARCH_FILE, "# Card rehearsal: F5-TTS v1 Base with random weights, not a voice.\n"
                      + yaml.safe_dump(arch_document(V1_BASE_ARCH, "F5TTS_v1_Base"), sort_keys=False))
    torch.manual_seed(seed)
    cfm = build_cfm(V1_BASE_ARCH, {t: i for i, t in enumerate(vocab)})
    save_file(export_state(cfm), str(folder / "model_0.safetensors"))
    build_tiny_vocos(folder / VOCOS_DIR, seed)
    return folder


def write_project(root: str | Path, seconds: float, clips: int, rate: int) -> Path:
    """A project whose dataset has ``clips`` training clips and one eval clip, each ``seconds`` long at ``rate``."""
    import numpy as np

    from alltalk_gui.core.audio.decode import write_wav
    from alltalk_gui.core.dataset.metadata import EVAL_CSV, TRAIN_CSV, MetadataRow, write_metadata
    from alltalk_gui.core.project.folder import VoiceProject

    project = VoiceProject.create(Path(root), name="Card rehearsal", language="en")
    wavs = project.dataset_dir / "wavs"
    wavs.mkdir(parents=True, exist_ok=True)
    generator = np.random.default_rng(0)
    t = np.arange(int(seconds * rate)) / rate
    rows = []
    for i in range(clips + 1):
        tone = 0.2 * np.sin(2 * np.pi * (120 + 15 * i) * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t))
        audio = (tone + 0.02 * generator.standard_normal(t.size)).astype(np.float32)
        write_wav(wavs / f"clip{i:02d}.wav", audio, rate)
        rows.append(MetadataRow(audio_file=f"wavs/clip{i:02d}.wav", text=transcript(seconds), speaker_name="voice"))
    write_metadata(project.dataset_dir / TRAIN_CSV, rows[:clips])
    write_metadata(project.dataset_dir / EVAL_CSV, rows[clips:])
    return project.root
