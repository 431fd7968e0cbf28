"""Run ``alltalk-gui`` with a recorder of what reaches each engine's loss, call by call, marked as auto sizing's
probe or as a training step: ``python -m tests.cli.model_inputs OUT.json train DIR ...``.

A call's record is what the loss and the model see: every tensor of the batch (device, dtype, number of
dimensions), whether autocast is on and gradients are recorded as the loss starts, the model's mode, and its
trainable parameters (their device and dtype). The engines look their loss up through the module at each call,
so the recorder wraps it there; the probe is marked by wrapping ``levers.probe_micro_batch``, which the loop
imports when it probes. The record is written when the command ends, whatever its outcome.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def fingerprint(model, batch: dict[str, Any], stage: str) -> dict[str, Any]:
    import torch

    trainable = [p for p in model.parameters() if p.requires_grad]
    return {
        "stage": stage,
        "autocast": {kind: torch.is_autocast_enabled(kind) for kind in ("cpu", "cuda")},
        "grad_enabled": torch.is_grad_enabled(),
        "model_training": bool(model.training),
        "trainable": [len(trainable), sorted({f"{p.device.type}/{p.dtype}" for p in trainable})],
        "tensors": {key: [value.device.type, str(value.dtype), value.dim()]
                    for key, value in sorted(batch.items()) if isinstance(value, torch.Tensor)},
    }


def install(records: list[dict[str, Any]]) -> None:
    from alltalk_gui.core.engines.f5 import model as f5_model
    from alltalk_gui.core.engines.xtts import model as xtts_model
    from alltalk_gui.core.training import levers

    stage = ["step"]
    real_probe, real_gpt_loss, real_f5_loss = levers.probe_micro_batch, xtts_model.gpt_loss, f5_model.loss

    def probe_micro_batch(*args, **kwargs):
        stage[0] = "probe"
        try:
            return real_probe(*args, **kwargs)
        finally:
            stage[0] = "step"

    def gpt_loss(gpt, inputs, *args, **kwargs):
        if not kwargs.get("eval_mode"):
            records.append(fingerprint(gpt, inputs, stage[0]))
        return real_gpt_loss(gpt, inputs, *args, **kwargs)

    def f5_loss(cfm, batch):
        records.append(fingerprint(cfm, batch, stage[0]))
        return real_f5_loss(cfm, batch)

    levers.probe_micro_batch = probe_micro_batch
    xtts_model.gpt_loss = gpt_loss
    f5_model.loss = f5_loss


def main(argv: list[str]) -> int:
    out, args = Path(argv[0]), argv[1:]
    records: list[dict[str, Any]] = []
    install(records)
    from alltalk_gui.__main__ import main as app_main

    try:
        return app_main(args)
    finally:
        out.write_text(json.dumps(records, indent=1), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
