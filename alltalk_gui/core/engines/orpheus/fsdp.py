"""The ``accelerate launch`` configuration that trains Orpheus in full across several GPUs with FSDP.

A full fine-tune of Orpheus 3B holds 3.3 B fp32 weights, their gradients and AdamW's two moments: 53 GB, more
than any one consumer card. FSDP shards all four across the processes (``FULL_SHARD``), gathering one decoder
layer's weights at a time: the policy wraps each ``LlamaDecoderLayer`` (transformer-based auto wrap) and leaves
the tied embedding and output projection, the final norm and the loss in the root unit. Compute is in bf16
(FSDP's mixed precision, from accelerate's ``mixed_precision``), the sharded fp32 weights stay the master copy.

Checkpoints are ``SHARDED_STATE_DICT``: every process writes its shard (torch's distributed checkpoint format, in
``pytorch_model_fsdp_0/`` and ``optimizer_0/``), and accelerate's ``load_state`` puts them back on a resume with
the same number of processes; the export gathers the shards into one full state dict on the CPU
(:func:`alltalk_gui.core.engines.orpheus.tuned.checkpoint_state`). The rendezvous stays on this machine:
the app's launcher adds ``--main_process_ip 127.0.0.1`` for a one-machine config
(:mod:`alltalk_gui.core.training.launch`), and the file says so too.

``sync_module_states`` is off: every process loads the same base weights from the same folder, so there is
nothing to broadcast, and accelerate refuses it on a machine without a GPU type it knows.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from alltalk_gui.core.engines.orpheus.model import DECODER_LAYER


def fsdp_config(processes: int, mixed_precision: str = "bf16") -> dict[str, Any]:
    """accelerate's config (as ``accelerate config`` writes it) for a full fine-tune over ``processes`` GPUs."""
    if processes < 2:
        raise ValueError("FSDP shards the model across at least 2 processes")
    return {
        "compute_environment": "LOCAL_MACHINE",
        "distributed_type": "FSDP",
        "num_machines": 1,
        "machine_rank": 0,
        "num_processes": processes,
        "main_process_ip": "127.0.0.1",
        "mixed_precision": mixed_precision,
        "downcast_bf16": "no",
        "use_cpu": False,
        "fsdp_config": {
            "fsdp_version": 1,
            "fsdp_sharding_strategy": "FULL_SHARD",
            "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
            "fsdp_transformer_layer_cls_to_wrap": DECODER_LAYER,
            "fsdp_state_dict_type": "SHARDED_STATE_DICT",
            "fsdp_backward_prefetch": "BACKWARD_PRE",
            "fsdp_forward_prefetch": False,
            "fsdp_use_orig_params": True,
            "fsdp_sync_module_states": False,
            "fsdp_cpu_ram_efficient_loading": False,
            "fsdp_offload_params": False,
            "fsdp_activation_checkpointing": False,  # the engine switches on transformers' own (gradient_checkpointing)
        },
    }


def write_fsdp_config(path: str | os.PathLike[str], processes: int, mixed_precision: str = "bf16") -> Path:
    """Write :func:`fsdp_config` as YAML (atomically) and return its path, for ``accelerate launch --config_file``."""
    import yaml

    from alltalk_gui.core import atomic

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, "# Written by AllTalk GUI: Orpheus-TTS full fine-tune with FSDP on one machine.\n"
                      + yaml.safe_dump(fsdp_config(processes, mixed_precision), sort_keys=False))
    return path
