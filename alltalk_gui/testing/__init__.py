"""Helpers for tests and smoke runs: synthetic speech and tiny randomly initialised models.

Nothing here pretends to be a real voice or a real model; it exists so that the real code paths can run on
machines that cannot download XTTS v2 or Whisper weights.
"""
