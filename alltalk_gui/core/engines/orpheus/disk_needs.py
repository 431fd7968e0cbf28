"""How big an Orpheus training checkpoint and an export are, from the base folder's config.json and file sizes.

A checkpoint (accelerate's ``save_state``) holds what trains (:mod:`.model` leaves a frozen base out): with LoRA
the adapters in fp32 and AdamW's two fp32 moments for them (24 M values at rank 16: about 0.3 GB); after a full
fine-tune every weight in the type it trains in (bf16 for High, fp32 on the CPU or with FSDP) and the optimizer's
state (bitsandbytes' 8-bit AdamW: 2 bytes a weight; torch's AdamW: two moments in the weights' own type). An export
(the ``orpheus`` format) is the model in bf16 plus the tokenizer and the codec. No torch: the Train page asks on its
GUI thread.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alltalk_gui.core.engine_api.engine import DiskNeeds
from alltalk_gui.core.engines.orpheus.codec import CODEC_DIR, CODEC_FILES
from alltalk_gui.core.engines.orpheus.files import TOKENIZER_FILES, config_folder, loaded_shape

_SMALL_FILES = 1 << 20  # scheduler, RNG states, train_state.json, train_config.json


def disk_needs(config: Any) -> DiskNeeds | None:
    """One checkpoint and one export of ``config``; None without a usable config.json (a LoRA adapter's: its
    base's, with a second vocabulary matrix when the adapter carries one in full: :func:`loaded_shape`)."""
    shape = loaded_shape(config.base_model_dir)
    if shape is None:
        return None
    folder = config_folder(Path(config.base_model_dir))
    if config.lora_rank:
        adapters = shape.lora(config.lora_rank)
        checkpoint = adapters * (4 + (2 if "8bit" in config.optimizer else 8))
    else:
        weight = 4 if config.engine_options().base_weights == "fp32" else 2
        moments = 2 if "8bit" in config.optimizer else 2 * weight
        checkpoint = shape.parameters * (weight + moments)
    others = sum(p.stat().st_size for p in [*(folder / n for n in TOKENIZER_FILES),
                                            *(folder / CODEC_DIR / n for n in CODEC_FILES)] if p.is_file())
    return DiskNeeds(checkpoint_bytes=checkpoint + _SMALL_FILES, export_bytes=2 * shape.parameters + others)
