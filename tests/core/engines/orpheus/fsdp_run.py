"""Two CPU processes (gloo) training the tiny Orpheus model under torch's FSDP, configured as the app's FSDP config
file asks accelerate to: ``python -m tests.core.engines.orpheus.fsdp_run CONFIG BASE DATASET OUT``.

accelerate runs FSDP only on GPU-type devices (its AcceleratorState leaves FSDP out for MULTI_CPU), so on the CPU
this module does the one step ``Accelerator.prepare`` would: it wraps the model in ``FullyShardedDataParallel``
with the keyword arguments accelerate passes (read from its own :class:`FullyShardedDataParallelPlugin`, built
from the environment accelerate's launcher derives from our config file). Everything else is the real code:
accelerate's launcher parsing, its plugin and wrap policy, its sharded checkpoint save and load
(``save_fsdp_model``/``save_fsdp_optimizer``), and the engine's model, loss, data and checkpoint gathering.

accelerate's FSDP1 load of a sharded optimizer fills only state the optimizer already holds: a resume must give
a new optimizer its state first (``resume`` does, as torch's DCP API does before loading).

Two phases in the same two processes (starting processes is most of the test's time): ``straight`` trains 4 steps,
saving a sharded checkpoint after step 2 and the gathered full weights after steps 2 and 4; ``resume`` builds a new
model and optimizer, loads the step-2 checkpoint from disk and trains steps 3-4. Each rank trains on its own clip.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

STEPS = 4
SAVE_AT = 2


def launcher_env(config_file: str) -> dict[str, str]:
    """The environment ``accelerate launch --config_file`` gives its processes for our config (FSDP_* included)."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import prepare_multi_gpu_env

    args = launch_command_parser().parse_args(["--config_file", config_file, "train.py"])
    args, _defaults, _mp = _validate_launch_command(args)
    return prepare_multi_gpu_env(args)


def worker(rank: int, world: int, config_file: str, base: str, dataset: str, out: str, port: int) -> None:
    import torch
    from accelerate import PartialState
    from accelerate.utils import FullyShardedDataParallelPlugin

    from alltalk_gui.core.engines.orpheus import codec as snac
    from alltalk_gui.core.engines.orpheus.data import collate, load_audio, load_dataset, make_samples
    from alltalk_gui.core.engines.orpheus.files import load_tokenizer, special_tokens, validate_base_model

    torch.set_num_threads(1)
    os.environ.update(launcher_env(config_file))
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))
    state = PartialState(cpu=True)  # accelerate's process state: gloo on the CPU
    plugin = FullyShardedDataParallelPlugin()  # from the FSDP_* variables, as accelerate builds it
    info = validate_base_model(base)
    tokenizer = load_tokenizer(base)
    special = special_tokens(base, info.codec, tokenizer)
    train, _ = load_dataset(dataset, tokenizer, special, info.codec, info.context, min_seconds=1.0, max_seconds=30.0)
    codec = snac.load_codec(info.codec_dir)
    samples = make_samples(train[rank:rank + 1], special, lambda p: snac.encode(codec, load_audio(p, 24000)))
    batch = collate(samples, special.pad)
    for phase in ("straight", "resume"):
        run_phase(phase, rank, state, plugin, base, special, batch, Path(out))
    torch.distributed.destroy_process_group()


def run_phase(phase: str, rank: int, state, plugin, base: str, special, batch, out_dir: Path) -> None:
    """One phase on a new model and optimizer (see the module's docstring)."""
    import torch
    from accelerate.utils.fsdp_utils import load_fsdp_model, load_fsdp_optimizer, save_fsdp_model, save_fsdp_optimizer
    from torch.distributed.fsdp import FullStateDictConfig, FullyShardedDataParallel as FSDP, StateDictType

    from alltalk_gui.core.engines.orpheus.model import OrpheusLM, load_lm, loss, set_checkpointing
    from alltalk_gui.core.training.levers import init_optimizer_state

    torch.manual_seed(0)
    model = OrpheusLM(load_lm(base, "fp32"), special)
    set_checkpointing(model.lm, True)  # as the High profile, the full fine-tune FSDP is for, trains it
    plugin.set_auto_wrap_policy(model)
    fsdp = FSDP(model, sharding_strategy=plugin.sharding_strategy, cpu_offload=plugin.cpu_offload,
                auto_wrap_policy=plugin.auto_wrap_policy, mixed_precision=plugin.mixed_precision_policy,
                sync_module_states=plugin.sync_module_states, backward_prefetch=plugin.backward_prefetch,
                forward_prefetch=plugin.forward_prefetch, use_orig_params=plugin.use_orig_params,
                limit_all_gathers=plugin.limit_all_gathers, device_id=torch.device("cpu"))
    optimizer = torch.optim.AdamW(fsdp.parameters(), lr=1e-2)
    checkpoint = out_dir / "checkpoint"
    first = 1
    if phase == "resume":
        load_fsdp_model(plugin, state, fsdp, str(checkpoint))
        # accelerate's FSDP1 sharded optimizer load reads only the state entries the optimizer already has, and a
        # new AdamW has none until its first step: without this the moments of the saved run are silently lost
        # (measured here). The training loop's resume does the same under FSDP, with this function.
        init_optimizer_state(optimizer)
        load_fsdp_optimizer(plugin, state, optimizer, fsdp, str(checkpoint))
        assert optimizer.state  # the moments are back
        first = SAVE_AT + 1
    units = sum(isinstance(m, FSDP) for m in fsdp.modules())
    for step in range(first, STEPS + 1):
        value = loss(fsdp, batch)["loss"]
        value.backward()
        fsdp.clip_grad_norm_(1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if phase == "straight" and step == SAVE_AT:
            save_fsdp_model(plugin, state, fsdp, str(checkpoint))
            save_fsdp_optimizer(plugin, state, optimizer, fsdp, str(checkpoint))
        if step in (SAVE_AT, STEPS):
            policy = FullStateDictConfig(offload_to_cpu=False, rank0_only=False)  # offloading segfaults on the CPU
            with FSDP.state_dict_type(fsdp, StateDictType.FULL_STATE_DICT, policy):
                full = fsdp.state_dict()
            if rank == 0:
                torch.save({"state": full, "units": units, "loss": float(value)}, out_dir / f"{phase}_step{step}.pt")
        state.wait_for_everyone()


def main() -> None:
    import socket

    import torch.multiprocessing as mp

    config_file, base, dataset, out = sys.argv[1:5]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(2, config_file, base, dataset, out, port), nprocs=2)


if __name__ == "__main__":
    main()
