"""The real-size XTTS v2 architecture and random stand-ins for its inputs and files, shared by the benchmarks.

No benchmark can download the published weights, so each builds coqui's own classes with the published
architecture and random weights. This module is the one description of that architecture
(:data:`XTTS_V2`, :data:`TEXT_TOKENS`, :data:`DVAE_V2`), plus:

* :func:`gpt_inputs` - random GPT inputs shaped like a real batch (what the frozen front end would produce);
* :func:`raw_batch` - a random batch of waveforms in the layout of ``alltalk_gui.core.training.data.collate``,
  for benchmarks that also run the front end (mel spectrograms and DVAE codes);
* :func:`write_front_end_files` - ``vocab.json``, ``dvae.pth`` and ``mel_stats.pth`` with the real shapes and
  random contents, for code that reads those files (our ``FrontEnd``, coqui's ``GPTTrainer``);
"""

from __future__ import annotations

from pathlib import Path

XTTS_V2 = dict(gpt_layers=30, gpt_n_model_channels=1024, gpt_n_heads=16, gpt_num_audio_tokens=1026,
               gpt_start_audio_token=1024, gpt_stop_audio_token=1025, gpt_use_perceiver_resampler=True,
               gpt_max_audio_tokens=605, gpt_max_text_tokens=402, gpt_max_prompt_tokens=70)
TEXT_TOKENS = 6681  # the published vocab.json; [START] is the last id, [STOP] is 0
# The DVAE widths coqui's GPTTrainer hard-codes (its num_tokens is gpt_num_audio_tokens - 2).
DVAE_V2 = dict(codebook_dim=512, hidden_dim=512, num_resnet_blocks=3)

SAMPLE_RATE = 22050
TEXT_TOKENS_PER_S = 10  # BPE tokens per second of read speech (~14 characters/s)
CONDITIONING_S = 6.0  # coqui draws a 3-6 s voice prompt; the longest is what sizes memory


def gpt_inputs(batch: int, seconds: float, text_len: int = 80, text_tokens: int = TEXT_TOKENS) -> dict:
    """Random GPT inputs for ``batch`` clips of ``seconds``: DVAE codes (one per 1024 samples), a conditioning mel
    as long as the clip, ``text_len`` text tokens; the conditioning prompt is the clip's first half.

    These are the inputs ``cpu_step.py``'s committed XTTS timings were measured with. A prompt that starts at 0
    masks every mel target of the last clip in coqui's loss, so a one-clip batch gets a NaN loss (the timing is
    unaffected); :func:`raw_batch` takes its prompt from the middle of the clip instead."""
    import torch

    samples = int(seconds * SAMPLE_RATE)
    return {
        "text_inputs": torch.randint(1, text_tokens - 1, (batch, text_len), dtype=torch.int32),
        "text_lengths": torch.full((batch,), text_len, dtype=torch.long),
        "audio_codes": torch.randint(0, 1024, (batch, samples // 1024 + 1)),
        "wav_lengths": torch.full((batch,), samples, dtype=torch.long),
        "cond_mels": torch.randn(batch, 1, 80, samples // 256 + 1),
        "cond_idxs": torch.tensor([[0, samples // 2]] * batch),
        "cond_lens": None,
    }


def raw_batch(batch: int, seconds: float, text_tokens: int = TEXT_TOKENS, seed: int = 0) -> dict:
    """A random batch of ``batch`` clips of ``seconds`` as our collate (and coqui's) lays it out: waveforms
    (quiet noise), :data:`TEXT_TOKENS_PER_S` text tokens per second, a voice prompt of :data:`CONDITIONING_S`
    (half the clip when the clip is shorter, as ``ClipDataset`` does) from the middle of the clip, zero-padded
    to that length, with the masking approach's ``cond_idxs``.

    The prompt is not taken from the clip's start: coqui's GPT masks the mel targets from ``cond_idxs // 256``
    on, so a prompt starting in the first 256 samples masks every target and a one-clip batch gets a NaN loss.
    """
    import torch

    gen = torch.Generator().manual_seed(seed)
    samples = int(seconds * SAMPLE_RATE)
    text_len = max(1, round(TEXT_TOKENS_PER_S * seconds))
    cond_max = int(CONDITIONING_S * SAMPLE_RATE)
    cond_len = cond_max if samples >= cond_max else samples // 2
    start = (samples - cond_len) // 2
    wav = 0.1 * torch.randn(batch, 1, samples, generator=gen)
    conditioning = torch.zeros(batch, 1, 1, cond_max)
    conditioning[:, 0, :, :cond_len] = wav[:, :, start:start + cond_len]
    return {
        "padded_text": torch.randint(1, text_tokens - 1, (batch, text_len), dtype=torch.int32, generator=gen),
        "text_lengths": torch.full((batch,), text_len, dtype=torch.long),
        "wav": wav,
        "wav_lengths": torch.full((batch,), samples, dtype=torch.long),
        "conditioning": conditioning,
        "cond_idxs": torch.tensor([[start, start + cond_len]] * batch, dtype=torch.long),
        "cond_lens": None,
        "filenames": [f"random_{i}.wav" for i in range(batch)],
    }


def write_front_end_files(folder: str | Path, *, text_tokens: int = TEXT_TOKENS, num_audio_tokens: int = 1026,
                          dvae: dict | None = None, seed: int = 0) -> Path:
    """Write ``vocab.json`` (``text_tokens`` word-level tokens: [STOP] = 0, [START] last, as in the published
    vocabulary), a randomly initialised ``dvae.pth`` (widths ``dvae``, default :data:`DVAE_V2`) and
    ``mel_stats.pth`` into ``folder``; returns the folder. The real DVAE file is about 200 MB."""
    import torch
    from tokenizers import Tokenizer, models
    from TTS.tts.layers.xtts.dvae import DiscreteVAE

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    names = ["[STOP]", "[UNK]", "[SPACE]"] + [f"tok{i}" for i in range(3, text_tokens - 1)] + ["[START]"]
    Tokenizer(models.WordLevel({name: i for i, name in enumerate(names)}, unk_token="[UNK]")).save(
        str(folder / "vocab.json"))
    torch.manual_seed(seed)
    net = DiscreteVAE(channels=80, normalization=None, positional_dims=1, num_tokens=num_audio_tokens - 2,
                      kernel_size=3, num_layers=2, use_transposed_convs=False, **(dvae or DVAE_V2))
    torch.save(net.state_dict(), folder / "dvae.pth")
    # Log-mel magnitudes of speech sit around -1 .. -10; any non-zero constants normalise equally well here.
    torch.save(torch.linspace(-2.0, -6.0, 80), folder / "mel_stats.pth")
    return folder
