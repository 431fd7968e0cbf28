"""A run on several processes uses the engine's own accelerate config (``Engine.accelerate_config``) when the user
gave none: written into the run folder, named in the launch command."""

from __future__ import annotations

import yaml

from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.training import launch
from alltalk_gui.core.training.config import TrainConfig


def test_the_engines_config_is_written_into_the_run_and_launched_with(tmp_path, monkeypatch):
    config = TrainConfig(project_dir=str(tmp_path), run_name="r")
    assert launch.engine_accelerate_config(config, 2) is None  # XTTS v2: accelerate's default, nothing written
    fsdp = {"distributed_type": "FSDP", "fsdp_config": {"fsdp_sharding_strategy": "FULL_SHARD"}}
    monkeypatch.setattr(type(get_engine("xtts")), "accelerate_config", lambda self, cfg, processes: fsdp)
    path = launch.engine_accelerate_config(config, 4)
    assert path == str(config.run_dir / launch.ENGINE_ACCELERATE_CONFIG)
    assert yaml.safe_load(open(path, encoding="utf-8")) == {**fsdp, "num_processes": 4}
    cmd = launch.launch_command(tmp_path / "c.json", tmp_path / "e.jsonl", resume=False, processes=4,
                                accelerate_config=path)
    assert cmd[cmd.index("--config_file") + 1] == path
