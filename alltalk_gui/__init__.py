"""AllTalk GUI: turn a few minutes of recorded voice into a fine-tuned XTTS v2 voice model."""

__version__ = "0.1.0"
