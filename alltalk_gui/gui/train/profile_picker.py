"""Memory profile picker: Low / Medium / High / Auto, each with its estimated peak memory against the free
memory of the chosen device (green fits, amber is tight, red does not fit) and its one-sentence trade-off, plus
a one-click "Low VRAM" button.

The profiles and the estimate come from :mod:`alltalk_gui.core.training.profiles` and the
engine's memory estimate; :class:`ProfileSource` is the one place that talks to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QGridLayout,
    QGroupBox,
    QLabel,
    QPushButton,
    QRadioButton,
    QWidget,
)

from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.gui.common import status_colours

# Share of the free memory an estimate may use and still count as a comfortable fit: estimates are a model,
# and allocator fragmentation and the CUDA context take a little more.
COMFORT = 0.85
FIT_KIND = {"fits": status_colours.GOOD, "tight": status_colours.WARNING, "too big": status_colours.PROBLEM}
NO_ESTIMATE_TIP = ("No memory estimate for this base model: the engine has memory figures only for the model sizes "
                   "it was measured at. Training still runs; on a GPU, Auto tries what fits on the card first.")


@dataclass(frozen=True)
class ProfileView:
    name: str
    title: str
    summary: str
    target_gib: float
    settings: dict[str, Any]


class ProfileSource:
    """The core's profiles and memory estimate for one engine (:meth:`set_engine` switches). ``available`` is
    False in a core without them (``problem`` says why), and then the page trains with the TrainConfig defaults."""

    def __init__(self, engine: str = DEFAULT_ENGINE) -> None:
        self.profiles = self.engine = None
        self.problem = ""
        # The dataset's longest training clip (seconds; None: no dataset yet): estimates and fills size for it
        # where it is shorter than the run's limit, as build_train_config does. The Train page sets it.
        self.longest_clip_s: float | None = None
        self._views: list[ProfileView] = []
        self.set_engine(engine)

    def set_engine(self, name: str) -> None:
        """Read ``name``'s profiles (``resources/profiles/<name>/``) and use its memory estimate."""
        try:
            from alltalk_gui.core.engine_api.engine import get_engine
            from alltalk_gui.core.training import profiles

            views = [ProfileView(p.name, p.title, p.summary, p.target_gib, dict(p.settings))
                     for p in profiles.all_profiles(name)]
        except (ImportError, OSError, ValueError) as exc:  # not installed, or a damaged profile file
            self.problem = str(exc)
            self.profiles = self.engine = None
            self._views = []
            return
        self.profiles, self.engine, self._views, self.problem = profiles, get_engine(name), views, ""

    @property
    def available(self) -> bool:
        return self.profiles is not None

    def all(self) -> list[ProfileView]:
        return list(self._views)

    def settings(self, name: str, device=None, config: TrainConfig | None = None) -> tuple[dict[str, Any], list[str]]:
        """The settings ``name`` sets on ``device`` (adapted: no bf16 on an old GPU, no 8-bit on the CPU, the
        micro-batch filled up to the profile's target for ``config``'s clips on a GPU...) and a note for each
        adaptation."""
        if self.profiles is None or name not in self.profiles.PROFILE_NAMES:
            return {}, []
        return self.profiles.profile_settings(name, device, self.engine.name, config, self.longest_clip_s)

    def apply(self, config: TrainConfig, name: str, device=None, auto: bool = False) -> TrainConfig:
        """``config`` with profile ``name``; ``auto``: Auto picked it (on a GPU the run then sizes its micro-batch)."""
        if self.profiles is None or name not in self.profiles.PROFILE_NAMES:
            return config
        return self.profiles.apply_profile(config, name, device, auto=auto, longest_clip_s=self.longest_clip_s)

    def auto(self, devices: list, config: TrainConfig | None = None) -> tuple[str, str]:
        """Auto's profile for ``devices`` and why (each engine ships its CPU speed calibration for the CPU case)."""
        choice = self.profiles.choose_auto(devices, config, self.longest_clip_s)
        return choice.profile, choice.reason

    def estimate_gib(self, config: TrainConfig) -> float | None:
        """Estimated peak GPU memory of ``config`` (for the dataset's longest clip); None when the estimate cannot
        be made here."""
        if self.engine is None:
            return None
        try:
            estimate = self.engine.estimate_memory(self.profiles.sized_for(config, self.longest_clip_s))
        except (OSError, ValueError):  # e.g. the calibration data file missing from a broken install
            return None
        return float(estimate.total_gib) if estimate is not None else None


def fit(estimate_gib: float | None, free_gib: float | None) -> str | None:
    """"fits", "tight" or "too big"; None when either number is unknown."""
    if estimate_gib is None or free_gib is None:
        return None
    if estimate_gib <= COMFORT * free_gib:
        return "fits"
    return "tight" if estimate_gib <= free_gib else "too big"


class ProfilePicker(QGroupBox):
    """Emits ``changed`` with the chosen name ("low", "medium", "high" or "auto")."""

    changed = Signal(str)
    low_vram_clicked = Signal()  # after Low VRAM is selected: the page starts a run with it

    def __init__(self, source: ProfileSource | None = None, parent: QWidget | None = None) -> None:
        super().__init__("Memory profile", parent)
        self.source = source or ProfileSource()
        self.group = QButtonGroup(self)
        self.buttons: dict[str, QRadioButton] = {}
        self.fit_labels: dict[str, QLabel] = {}
        self.summaries: dict[str, QLabel] = {}
        self.auto_reason = QLabel()
        self.auto_reason.setWordWrap(True)
        self.auto_choice: str | None = None
        grid = QGridLayout(self)
        grid.setColumnStretch(2, 1)
        views = self.source.all()
        for row, view in enumerate(views):
            button = QRadioButton(view.title)
            button.setToolTip(view.summary)
            self.group.addButton(button)
            self.buttons[view.name] = button
            fit_label = QLabel()
            summary = QLabel(view.summary)
            summary.setWordWrap(True)  # normal text colour: in grey they looked disabled
            grid.addWidget(button, row, 0)
            grid.addWidget(fit_label, row, 1)
            grid.addWidget(summary, row, 2)
            self.fit_labels[view.name] = fit_label
            self.summaries[view.name] = summary
        if views:
            auto = QRadioButton("Auto")
            auto.setToolTip("Pick the profile that fits the detected graphics card")
            self.group.addButton(auto)
            self.buttons["auto"] = auto
            grid.addWidget(auto, len(views), 0)
            grid.addWidget(self.auto_reason, len(views), 1, 1, 2)
            self.low_vram = QPushButton("Low VRAM")
            self.low_vram.setToolTip("One click: start training with the profile that needs the least graphics "
                                     "memory (the settings are checked first)")
            self.low_vram.clicked.connect(lambda: (self.choose("low"), self.low_vram_clicked.emit()))
            grid.addWidget(self.low_vram, 0, 3)
            auto.setChecked(True)
        else:
            self.low_vram = QPushButton("Low VRAM")
            self.low_vram.setEnabled(False)
            note = QLabel("Memory profiles are not available in this installation "
                          f"({self.source.problem or 'no profiles found'}): the settings below start from the "
                          "training defaults.")
            note.setWordWrap(True)
            grid.addWidget(note, 0, 0)
        self.group.buttonToggled.connect(self._toggled)

    def set_engine(self, name: str) -> None:
        """Show ``name``'s profiles (the same three names, their own settings, titles and trade-offs); the
        choice stays. Call :meth:`set_devices` and :meth:`show_estimates` again afterwards."""
        self.source.set_engine(name)
        for view in self.source.all():
            if view.name in self.buttons:
                self.buttons[view.name].setText(view.title)
                self.buttons[view.name].setToolTip(view.summary)
                self.summaries[view.name].setText(view.summary)

    def choice(self) -> str | None:
        for name, button in self.buttons.items():
            if button.isChecked():
                return name
        return None

    def resolved(self) -> str | None:
        """The concrete profile: the chosen one, or what Auto picked."""
        name = self.choice()
        return self.auto_choice if name == "auto" else name

    def choose(self, name: str) -> None:
        if name in self.buttons:
            self.buttons[name].setChecked(True)

    def _toggled(self, button, checked: bool) -> None:
        if checked:
            self.changed.emit(self.choice() or "")

    def set_devices(self, devices: list, config: TrainConfig | None = None) -> None:
        """Auto's choice and its reason for these devices (core.gpu.DeviceInfo)."""
        if not self.source.available or not devices:
            return
        try:
            self.auto_choice, reason = self.source.auto(devices, config)
        except (OSError, ValueError) as exc:  # the estimate Auto relies on cannot be made here
            self.auto_choice, reason = "low", f"the memory estimate is unavailable ({exc}); Low is the safe choice"
        title = self.buttons[self.auto_choice].text() if self.auto_choice in self.buttons else self.auto_choice
        # Most reasons begin with the profile's title ("High: needs about 8.9 GiB; ..."): say it once.
        self.auto_reason.setText(f"→ {reason}" if reason.startswith(title) else f"→ {title}: {reason}")
        if self.choice() == "auto":
            self.changed.emit("auto")

    def show_estimates(self, base: TrainConfig, free_gib: float | None, where: str, device=None) -> None:
        """Each profile's estimated peak on ``device`` against ``free_gib`` on ``where`` ("the GPU", "RAM")."""
        for name, label in self.fit_labels.items():
            estimate = self.source.estimate_gib(self.source.apply(base, name, device))
            verdict = fit(estimate, free_gib)
            if estimate is None:  # a base model of a size the engine never measured (a custom or test model)
                label.setText(status_colours.span(status_colours.QUIET, "no estimate"))
                label.setToolTip(NO_ESTIMATE_TIP)
                continue
            free = f" of {free_gib:.1f} GiB free" if free_gib is not None else ""
            colour = status_colours.colour(FIT_KIND[verdict]) if verdict in FIT_KIND else "palette(text)"
            label.setText(f"<span style='color:{colour}'>● ~{estimate:.1f} GiB{free}</span>")
            label.setToolTip(f"Estimated peak memory on {where}: {estimate:.1f} GiB"
                             f"{' — ' + verdict if verdict else ''}")
