"""F5-TTS's sampling steps (NFE: each step is two passes of the model) with what each choice costs in time.

Quality rises with the steps and so does the time: on a GPU a take is a matter of seconds whatever the choice,
on a CPU it is minutes, so the choice shows an estimate per take. The estimate is
:func:`alltalk_gui.core.engines.f5.synthesis.cpu_seconds_estimate` with the cost of one pass measured on the
project's 2-core development machine (one thread, the real-size model; see that module's docstring): an
estimate for a small CPU, which a faster one beats. The length of the new speech is guessed from the reference
clip's speaking rate, as F5-TTS itself guesses it. Whether there is a GPU is asked of NVML (no torch here).
"""

from __future__ import annotations

from functools import lru_cache

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QWidget

@lru_cache(maxsize=1)
def gpu_present() -> bool:
    """Whether NVML sees an NVIDIA GPU (asked once; the preview then runs on it)."""
    from alltalk_gui.core.machine.nvml import read_gpus

    return bool(read_gpus())  # None without NVML (no driver): no GPU


def take_seconds(nfe: int, reference_seconds: float, reference_text: str, text: str, speed: float = 1.0) -> float:
    """Estimated CPU seconds for one take of ``text`` after a reference clip of ``reference_seconds``."""
    from alltalk_gui.core.engines.f5.files import HOP_LENGTH, SAMPLE_RATE
    from alltalk_gui.core.engines.f5.synthesis import CPU_SECONDS_PER_FRAME_PASS, cpu_seconds_estimate, estimate_frames

    frames_per_second = SAMPLE_RATE / HOP_LENGTH
    reference_frames = int(reference_seconds * frames_per_second)
    new_frames = estimate_frames(reference_frames, reference_text, text, speed) - reference_frames
    return cpu_seconds_estimate(CPU_SECONDS_PER_FRAME_PASS, reference_seconds, new_frames / frames_per_second, nfe)


def duration_words(seconds: float) -> str:
    """"about 40 s", "about 6 min"."""
    if seconds < 90:
        return f"about {max(5, round(seconds / 5) * 5):.0f} s"
    return f"about {seconds / 60:.0f} min" if seconds < 5400 else f"about {seconds / 3600:.1f} h"


class NfeChoice(QWidget):
    """Emits ``changed`` when the user picks another number of steps."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        from alltalk_gui.core.engines.f5.synthesis import CPU_SECONDS_PER_FRAME_PASS, DEFAULT_NFE, NFE_CHOICES

        self.choices = NFE_CHOICES
        self.caption = QLabel("Sampling steps (NFE)")
        self.box = QComboBox()
        for nfe in NFE_CHOICES:
            self.box.addItem(str(nfe), nfe)
        self.box.setToolTip("Steps of F5-TTS's sampling, each two passes of the model: more steps, cleaner "
                            f"speech, proportionally more time ({DEFAULT_NFE} is F5-TTS's default; 16 is twice as fast "
                            "and still clear)")
        self.caption.setToolTip(self.box.toolTip())
        self.box.currentIndexChanged.connect(lambda _i: (self._update_note(), self.changed.emit()))
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.note.setToolTip(f"Estimated from the measured cost of one pass of the real-size model on a 2-core CPU "
                             f"with one thread ({CPU_SECONDS_PER_FRAME_PASS * 1000:.1f} ms per frame of audio): a "
                             "faster CPU takes less, a GPU a few seconds.")
        self._estimates: dict[int, float] = {}
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.caption)
        layout.addWidget(self.box)
        layout.addWidget(self.note, 1)
        self.set_value(DEFAULT_NFE)

    def value(self) -> int:
        return int(self.box.currentData())

    def set_value(self, nfe: int) -> None:
        """Select ``nfe``, adding it to the list when it is not one of the usual choices (a saved setting)."""
        index = self.box.findData(nfe)
        if index < 0:
            self.box.addItem(str(nfe), nfe)
            index = self.box.count() - 1
        self.box.setCurrentIndex(index)

    def show_estimate(self, reference_seconds: float, reference_text: str, text: str, speed: float = 1.0) -> None:
        """Each choice's time per take for this reference and sentence (on the CPU), or that a GPU is fast."""
        if gpu_present():
            self._estimates = {}
        elif reference_seconds > 0 and reference_text and text:
            self._estimates = {int(self.box.itemData(i)): take_seconds(int(self.box.itemData(i)), reference_seconds,
                                                                       reference_text, text, speed)
                               for i in range(self.box.count())}
        else:
            self._estimates = {}
        for i in range(self.box.count()):
            nfe = int(self.box.itemData(i))
            estimate = self._estimates.get(nfe)
            self.box.setItemText(i, f"{nfe}  ({duration_words(estimate)})" if estimate is not None else str(nfe))
        self._update_note()

    def _update_note(self) -> None:
        if gpu_present():
            self.note.setText("On the GPU a take needs seconds whatever the choice.")
            return
        estimate = self._estimates.get(self.value())
        if estimate is None:
            self.note.setText("On the CPU a take needs minutes: fewer steps are faster.")
            return
        self.note.setText(f"{duration_words(estimate)} per take on the CPU (estimated for 2 cores; A/B makes two)")
