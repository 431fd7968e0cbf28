"""XTTS v2: base-model files, download, model and loss, text checks, memory estimate, test model."""
