"""Which clips leave their conditioning span out of the mel loss, and the mel loss with that mask.

XTTS v2 trains with the voice prompt cut from the target clip itself (``gpt_use_masking_gt_prompt_approach``), so
the GPT could learn to copy the prompt instead of speaking the text; coqui therefore leaves the prompt's span out
of the mel loss for some clips. How coqui-tts 0.28 does it, in ``GPT.forward`` (``TTS/tts/layers/xtts/gpt.py``
lines 461-466 in 0.28.0, after "# ignore the loss for the segment used for conditioning")::

    if cond_idxs is not None:
        cond_start = cond_idxs[idx, 0]
        cond_end = cond_idxs[idx, 1]
        mel_targets[idx, cond_start:cond_end] = -1

``idx`` is the variable left over from the ``for idx, l in enumerate(code_lengths)`` loop above it, so only the
*last* clip of each batch is masked: every clip at one clip per micro-batch (the Low profile), half of them at 2,
a third in coqui's recipe (batch 3), a quarter in AllTalk's (batch 4). Our length-bucketed micro-batches are sorted
shortest first, so it was always the longer clip; out-of-memory splitting and auto's probe changed the rate again.
The span is also divided by 256 (``perceiver_cond_length_compression``) but applied on the DVAE code axis (1024
samples a code), so it lands up to four times too far right: past the clip (no mask at all) or over its end,
removing the stop-token targets, whose loss teaches the model to stop talking (trailing noise and invented
endings are the most common complaint after fine-tuning: coqui-ai/TTS #3964, alltalk_tts #477).

What we do instead (the recipe's intent, independent of how clips are batched):

* every training clip is masked with the same chance, :data:`MASK_RATE` (1/4, AllTalk's batch of 4 under coqui's
  rule), drawn from (seed, epoch, clip index) by :func:`chosen`: the same clips are masked whatever the micro-batch,
  the order in it, out-of-memory splitting or the probe, and a resumed run masks the same ones;
* the masked span is the codes that overlap the conditioning slice (``start // 1024`` up to ``ceil(end / 1024)``);
* the stop-token targets (the code positions after the clip's last code) are never masked, so every clip always
  keeps a loss and teaches the model where speech ends.

coqui's GPT is called with ``cond_idxs=None`` (nothing masked; in coqui 0.28 ``cond_idxs`` has no other effect on
the loss: the conditioning attention mask it builds is replaced by ones in ``get_logits``), and :func:`mel_loss`
computes the mel cross entropy again from the logits it returns, with coqui's own target construction
(``set_mel_padding``, ``set_inputs_and_targets``) and our mask.
"""

from __future__ import annotations

import math
import random

import torch
import torch.nn.functional as F

MASK_RATE = 0.25  # the share of training clips whose conditioning span is left out of the mel loss


def chosen(seed: int, epoch: int, index: int, rate: float = MASK_RATE) -> bool:
    """Whether clip ``index`` has its conditioning span masked in ``epoch``: a fixed draw per (seed, epoch, clip),
    independent of the batch the clip lands in."""
    return random.Random(f"cond-mask/{seed}/{epoch}/{index}").random() < rate


def mel_targets(gpt, audio_codes: torch.Tensor, wav_lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The mel targets of coqui's ``GPT.forward`` for these codes (padding set to -1), and each clip's number of
    real codes (the target positions from there on hold the stop token)."""
    code_lengths = torch.ceil(wav_lengths / gpt.code_stride_len).long() + 3
    max_mel_len = int(code_lengths.max())
    if max_mel_len > audio_codes.shape[-1]:
        audio_codes = F.pad(audio_codes, (0, max_mel_len - audio_codes.shape[-1]))
    codes = F.pad(audio_codes[:, :max_mel_len], (0, 1), value=gpt.stop_audio_token)
    codes = gpt.set_mel_padding(codes, code_lengths - 3)
    _, targets = gpt.set_inputs_and_targets(codes, gpt.start_audio_token, gpt.stop_audio_token)
    for row, length in enumerate(code_lengths.tolist()):
        targets[row, length + 1:] = -1
    return targets, code_lengths - 3


def mask_targets(targets: torch.Tensor, real_codes: torch.Tensor, cond_idxs: torch.Tensor, masked: torch.Tensor,
                 code_stride: int) -> torch.Tensor:
    """``targets`` with the conditioning span of each ``masked`` clip set to -1 (ignored by the loss).

    ``cond_idxs`` holds each clip's conditioning slice in samples, ``[start, end)``; the codes overlapping it are
    masked, clipped to the clip's ``real_codes`` so that the stop-token targets after them never are.
    """
    out = targets.clone()
    for row in torch.nonzero(masked.bool()).flatten().tolist():
        start, end = (int(v) for v in cond_idxs[row])
        first = start // code_stride
        last = min(math.ceil(end / code_stride), int(real_codes[row]))
        if last > first:
            out[row, first:last] = -1
    return out


def mel_loss(gpt, mel_logits: torch.Tensor, audio_codes: torch.Tensor, wav_lengths: torch.Tensor,
             cond_idxs: torch.Tensor | None, masked: torch.Tensor | None) -> torch.Tensor:
    """coqui's mel cross entropy over ``mel_logits`` (as ``GPT.forward`` returns them), with the conditioning span
    of the ``masked`` clips left out. ``cond_idxs`` or ``masked`` None: nothing is masked."""
    targets, real_codes = mel_targets(gpt, audio_codes, wav_lengths)
    if cond_idxs is not None and masked is not None:
        targets = mask_targets(targets, real_codes, cond_idxs, masked, gpt.code_stride_len)
    # In fp32, as autocast computes coqui's own: under bf16 the logits leave the GPT in bf16.
    return F.cross_entropy(mel_logits.float(), targets.long(), ignore_index=-1, label_smoothing=gpt.label_smoothing)


__all__ = ["MASK_RATE", "chosen", "mel_targets", "mask_targets", "mel_loss"]
