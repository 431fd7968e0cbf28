"""The checkpoint judge: scores speech for intelligibility, likeness to the speaker, naturalness and length sanity,
so the best checkpoint is chosen by ear-like measures instead of the eval loss alone.

``judge.py`` holds the :class:`~.judge.Judge` and its :class:`~.judge.Verdict`; ``likeness.py``,
``naturalness.py`` and ``length.py`` the three kinds of measure; ``thresholds.py`` where each turns from good to
bad, with the measurements behind them; ``available.py`` whether the optional ``judge`` extra is installed.
Nothing here knows an engine: checkpoints are spoken through the engine interface like any preview.
"""
