"""Training: TrainConfig, profiles, the loop, data, memory levers, runner, events and checkpoints."""
