"""The upper half of the Train page: what the run will use, before it starts.

Device cards (found by ``alltalk-gui gpu --json`` in a child process, so torch never loads into the GUI), the
engine (XTTS v2 or F5-TTS v1, remembered in the project), the memory profile picker, the Advanced panel, and
three facts: the dataset (clips, minutes, clips still flagged, eval clips), the engine's base model (found, or
choose / download it after accepting its licence) and the disk space a run needs against what is free. The
profiles, their estimates, the Advanced fields and the base model all follow the chosen engine.
:meth:`SetupPanel.build_config` turns it all into a TrainConfig.
"""

from __future__ import annotations

import html
import json
import sys
from pathlib import Path

from PySide6.QtCore import QProcess, Qt, Signal
from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from alltalk_gui.core.dataset.info import mismatch
from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE, get_engine
from alltalk_gui.core.machine import disk
from alltalk_gui.core.training.disk_plan import DiskPlan, plan_disk
from alltalk_gui.core.training.profiles import PROFILE_NAMES
from alltalk_gui.core.training.run_config import RunConfig, build_train_config, training_device
from alltalk_gui.core.training.config import ConfigError, TrainConfig
from alltalk_gui.core.machine.gpu import DeviceInfo
from alltalk_gui.core.project.folder import ProjectError, VoiceProject
from alltalk_gui.gui.train.setup_facts import dataset_facts
from alltalk_gui.gui.train.advanced_panel import AdvancedPanel
from alltalk_gui.gui.train.base_model_choice import BaseModelChoice
from alltalk_gui.gui.train.engine_choice import EngineChoice
from alltalk_gui.gui.train.engine_environment import EngineEnvironmentBar
from alltalk_gui.gui.train.voice_prompt_editor import VoicePromptEditor
from alltalk_gui.gui.train.engine_switch_dialog import EngineSwitcher, ask as ask_switch
from alltalk_gui.gui.train.gpu_card import GpuCard
from alltalk_gui.gui.train.profile_picker import ProfilePicker
from alltalk_gui.gui.common.wording import plural
from alltalk_gui.gui.common import status_colours
from alltalk_gui.gui.common.label_links import links_by_keyboard


class SetupPanel(QWidget):
    changed = Signal()  # anything that changes the config or whether Start is possible
    devices_ready = Signal()
    engine_changed = Signal(str)  # the user chose another engine (saved in the project)
    flagged_requested = Signal()  # the dataset fact's flagged clips were clicked: show them in the editor

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.project: VoiceProject | None = None
        self.devices: list[DeviceInfo] = []
        self.facts: dict = {}
        self._scan: QProcess | None = None

        self.cards_box = QWidget()
        self.cards = QHBoxLayout(self.cards_box)
        self.cards.setContentsMargins(0, 0, 0, 0)
        self.cards_note = QLabel("Looking for graphics cards…")
        self.cards.addWidget(self.cards_note)
        # As tall as a card from the start (a CPU-only one, the tallest, at its narrowest): the page jumped by 40
        # px when the check ended and the card came.
        typical = GpuCard(DeviceInfo("cpu", 0, "AMD Ryzen 7 5800X 8-Core Processor", 31.3, 24.0, False, cores=16),
                          cpu_only=True)
        self.cards_box.setMinimumHeight(typical.heightForWidth(typical.minimumWidth()))
        self.picker = ProfilePicker()
        self.picker.changed.connect(lambda _n: self._refresh_config())
        # Always one line at least, empty when there is nothing to note: a note that came with the device check
        # ("16-bit autocast is slower than fp32 on most CPUs...") moved everything below it down.
        self.profile_notes = QLabel()
        self.profile_notes.setWordWrap(True)
        self.profile_notes.setMinimumHeight(self.profile_notes.fontMetrics().lineSpacing())
        self.advanced = AdvancedPanel()
        self.advanced.changed.connect(self._advanced_changed)

        self.engine_choice = EngineChoice()
        self.engine_choice.changed.connect(self._engine_chosen)
        # Switching re-checks the clips and writes the dataset again (engine_switch_dialog.py); the main window gives
        # the switcher the transcript page's open list, so the clips have one writer.
        self.switcher = EngineSwitcher(self, None, lambda change: self.ask_switch(change), self._switched)
        self.switch_note = QLabel(objectName="engineSwitchNote")  # what the last switch changed
        self.switch_note.setWordWrap(True)
        self.switch_note.setStyleSheet("#engineSwitchNote { border: none; border-left: 3px solid #b26a00; "
                                       "padding: 2px 0 2px 8px; }")
        self.switch_note.hide()
        self.environment = EngineEnvironmentBar()  # the chosen engine's own Python environment, when it is missing
        self.environment.ready.connect(self.changed)
        self.voice_prompt = VoicePromptEditor()  # the words a speaker/description engine learns the voice under
        self.base = BaseModelChoice(self)
        self.base.changed.connect(self.refresh_facts)
        self.dataset_label = QLabel()
        self.disk_label = QLabel()
        for label in (self.dataset_label, self.disk_label):
            label.setWordWrap(True)
            label.setTextFormat(Qt.TextFormat.RichText)
        self.dataset_label.linkActivated.connect(lambda _link: self.flagged_requested.emit())
        # Short names for the base-model widgets (the same download the first-run page offers).
        self.base_label, self.choose_base = self.base.label, self.base.choose_button
        self.base_download = self.base.download
        self.download_base, self.download_progress = self.base_download.button, self.base_download.progress
        self.download_base.clicked.connect(self._lock_engine_while_downloading)
        self.base_download.finished.connect(lambda _folder: self.engine_choice.setEnabled(True))
        self.base_download.failed.connect(lambda _error: self.engine_choice.setEnabled(True))
        facts = QGridLayout()
        facts.setColumnStretch(1, 1)
        facts.addWidget(QLabel("<b>Dataset</b>"), 0, 0)
        facts.addWidget(self.dataset_label, 0, 1, 1, 3)
        facts.addWidget(QLabel("<b>Base model</b>"), 1, 0)
        facts.addWidget(self.base_label, 1, 1)
        facts.addWidget(self.choose_base, 1, 2)
        facts.addWidget(self.download_base, 1, 3)
        facts.addWidget(self.download_progress, 2, 1, 1, 3)
        facts.addWidget(QLabel("<b>Disk</b>"), 3, 0)
        facts.addWidget(self.disk_label, 3, 1, 1, 3)

        top = QHBoxLayout()  # the device card beside the facts: one band instead of two
        top.addWidget(self.cards_box)
        top.addLayout(facts, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.engine_choice)  # the first choice, across the page: each engine's line on one line
        layout.addWidget(self.switch_note)
        layout.addWidget(self.environment)
        layout.addLayout(top)
        layout.addWidget(self.voice_prompt)
        layout.addWidget(self.picker)
        layout.addWidget(self.profile_notes)
        layout.addWidget(self.advanced)

    # -- project and facts ------------------------------------------------------------------------------------
    def set_project(self, project: VoiceProject | None) -> None:
        self.project = project
        self.switch_note.hide()
        self.advanced.reset_changes()
        self.engine_choice.set_language(project.language if project is not None else "")
        self.show_engine(project.engine if project is not None else DEFAULT_ENGINE)

    # -- engine -------------------------------------------------------------------------------------------------
    @property
    def engine(self) -> str:
        """The registry name of the engine the run trains with."""
        return self.engine_choice.engine()

    def show_engine(self, name: str) -> None:
        """Show ``name``'s profiles, estimates, Advanced fields and base model (not saved in the project)."""
        self.engine_choice.show_engine(name)
        engine = get_engine(self.engine)
        self.picker.set_engine(engine.name)
        self.advanced.set_engine(engine)
        self.base.set_engine(engine.name)
        self.environment.set_engine(engine)
        self.voice_prompt.set_context(engine, self.project)
        if self.devices:
            self.picker.set_devices(self.devices, self.base_config())  # Auto's pick for this engine
        self.refresh_facts()

    def _engine_chosen(self, name: str) -> None:
        """The user picked ``name``: switch the project to it (its clips checked again and its dataset written again
        at the engine's rate, after asking when that changes more than the engine); shown once that is done."""
        if self.project is None:
            self.show_engine(name)
            self.engine_changed.emit(name)
            return
        self.engine_choice.setEnabled(False)  # one switch at a time
        try:
            self.switcher.switch(self.project, name)
        except (ProjectError, OSError):  # read-only (another program has it open): this session only
            self.engine_choice.setEnabled(True)
            self.show_engine(name)
            self._show_switch_note([f"The project is open read-only, so {get_engine(name).title} is used for this "
                                    "session only; its clips and dataset were left as they are."])
            self.engine_changed.emit(name)

    def ask_switch(self, change) -> bool:
        """Whether to go ahead with a switch that changes more than the engine (tests answer for the user)."""
        return ask_switch(self, change)

    def _switched(self, switched: bool, lines: list[str]) -> None:
        """The switch is over: show the project's engine (the new one, or the old one the user kept) and what
        changed."""
        self.engine_choice.setEnabled(not self.base_download.is_running())
        if self.project is not None:
            self.show_engine(self.project.engine)  # reads the dataset's facts again too
        if switched:
            self._show_switch_note(lines)
            self.engine_changed.emit(self.engine)

    def _show_switch_note(self, lines: list[str]) -> None:
        self.switch_note.setText("<br>".join(html.escape(line) for line in lines))
        self.switch_note.setVisible(bool(lines))

    def _lock_engine_while_downloading(self) -> None:
        """A download is for the engine it started with: the choice waits until it ends."""
        self.engine_choice.setEnabled(not self.base_download.is_running())

    def refresh_facts(self) -> None:
        if self.project is None:
            return
        f = self.facts = dataset_facts(self.project)
        if f["longest_s"] != self.picker.source.longest_clip_s:
            self.picker.source.longest_clip_s = f["longest_s"]  # what the profiles' estimates size for
            if self.devices:
                self.picker.set_devices(self.devices, self.base_config())  # Auto's pick for these clips
        if f["error"] or not f["train"]:
            self.dataset_label.setText(status_colours.span(status_colours.PROBLEM, "No dataset yet: export it on the "
                                                           "Transcribe &amp; Edit step first."))
        else:
            flagged = f["flagged"]
            # A link, as it looks: it opens the editor on the Flagged clips.
            amber = status_colours.colour(status_colours.WARNING)
            fix = (f", <a href='flagged' style='color:{amber}'>{plural(flagged, 'flagged clip')} in it</a> (listen "
                   "to them first)" if flagged else ", no flagged clips" if flagged == 0 else "")
            # Written for another engine or rate (an older project, a switch made read-only): say so, and how to mend.
            misfit = mismatch(self.project.dataset_dir, get_engine(self.engine))
            warn = "<br>" + status_colours.span(status_colours.WARNING, html.escape(misfit)) if misfit else ""
            self.dataset_label.setText(f"{plural(f['train'], 'training clip')} ({f['minutes']:.1f} min in all), "
                                       f"{plural(f['eval'], 'eval clip')}{fix}.{warn}")
        links_by_keyboard(self.dataset_label)
        self.base.refresh()
        self._refresh_config()

    def base_model_dir(self) -> Path | None:
        """The chosen engine's base-model folder (None: not chosen yet)."""
        return self.base.folder()

    def _refresh_disk(self, config: TrainConfig) -> None:
        """The disk fact: what the run's checkpoints and an export need against what is free, red when it is not
        enough, with the number of checkpoints kept that would fit (Start asks again: :meth:`disk_plan`)."""
        if self.project is None:
            return
        plan = self.disk_plan(config)
        if plan is None:
            self.disk_label.setText(f"{disk.size_text(disk.free_bytes(self.project.runs_dir))} free")
            return
        colour = status_colours.colour(status_colours.GOOD if plan.enough else status_colours.PROBLEM)
        parts = f"{plan.keep_last} kept" + (" + the best" if plan.best else "") + " + one being written"
        text = (f"About {disk.size_text(plan.needed_bytes())} needed for checkpoints and an export ({plan.checkpoints} "
                f"checkpoints of about {disk.size_text(plan.checkpoint_bytes)}: {parts}; "
                f"{disk.size_text(plan.export_bytes)} for an export), {disk.size_text(plan.free_bytes)} free.")
        if not plan.enough:
            fewer = plan.keep_last_that_fits()
            text += (f" Not enough: keep {fewer} (Advanced settings: Checkpoints kept) or free some space."
                     if fewer is not None else " Not enough even with one checkpoint kept: free some space.")
        self.disk_label.setText(f"<span style='color:{colour}'>{text}</span>")

    def _advanced_changed(self) -> None:
        try:  # e.g. fewer checkpoints kept: the disk fact follows
            self._refresh_disk(self.build_config())
        except ConfigError:  # an unreadable value: Start says so
            pass
        self.changed.emit()

    def disk_plan(self, config: TrainConfig) -> DiskPlan | None:
        """The core's disk plan of ``config`` (None without a base model to judge the checkpoint size by)."""
        try:
            return plan_disk(config)
        except OSError:  # the project's disk cannot be asked (gone, no permission): training will say so
            return None

    # -- devices ------------------------------------------------------------------------------------------------
    def scan_devices(self) -> None:
        """List the devices in a child process (it imports torch; the GUI process does not)."""
        if self._scan is not None or self.devices:
            return
        self._scan = QProcess(self)
        self._scan.finished.connect(self._scanned)
        self._scan.start(sys.executable, ["-m", "alltalk_gui", "gpu", "--json"])

    def stop_scan(self) -> None:
        """The window closes: end a device listing still at work (its torch import takes seconds). Left to Qt, the
        process was killed as the page was destroyed, with "QProcess: Destroyed while process is still running"."""
        scan, self._scan = self._scan, None
        if scan is not None and scan.state() != QProcess.ProcessState.NotRunning:
            scan.finished.disconnect(self._scanned)
            scan.kill()
            scan.waitForFinished(5000)

    def _scanned(self, code: int, _status) -> None:
        out = bytes(self._scan.readAllStandardOutput()).decode("utf-8", "replace")
        try:
            self.devices = [DeviceInfo.from_dict(d) for d in json.loads(out)] if code == 0 else []
        except (ValueError, TypeError):
            self.devices = []
        self._scan = None
        self.set_devices(self.devices)

    def set_devices(self, devices: list[DeviceInfo]) -> None:
        self.devices = devices
        while self.cards.count():
            item = self.cards.takeAt(0)
            if item.widget() is not None:
                item.widget().hide()  # gone at once, not when the deferred delete comes round
                item.widget().deleteLater()
        if not devices:
            self.cards.addWidget(QLabel("The devices could not be listed; training picks the GPU if there is one."))
        cuda = [d for d in devices if d.kind == "cuda"]
        for d in cuda or devices:
            self.cards.addWidget(GpuCard(d, cpu_only=not cuda))
        self.picker.set_devices(devices, self.base_config())
        self.advanced.processes = self.processes
        self._refresh_config()
        self.devices_ready.emit()

    @property
    def cuda_available(self) -> bool:
        return any(d.kind == "cuda" for d in self.devices)

    @property
    def processes(self) -> int:
        """One training process per CUDA GPU (accelerate launch for more than one)."""
        return max(1, sum(1 for d in self.devices if d.kind == "cuda"))

    # -- config -------------------------------------------------------------------------------------------------
    def base_config(self) -> TrainConfig:
        """The project's config before profile and user changes."""
        folder = self.base_model_dir()
        project = self.project
        return TrainConfig(engine=self.engine, project_dir=str(project.root) if project else "",
                           base_model_dir=str(folder or ""), language=project.language if project else "")

    def training_device(self) -> DeviceInfo | None:
        """The device a run trains on: the GPU with the most free memory, else the CPU (None: not listed yet)."""
        return training_device(self.devices)

    def profile_settings(self) -> dict:
        name = self.picker.resolved()
        filled = None if self.picker.choice() == "auto" else self.base_config()  # Auto sizes on the card instead
        return self.picker.source.settings(name, self.training_device(), filled)[0] if name else {}

    def build_config(self) -> TrainConfig:
        """The profile's config (adapted to the device) with the user's Advanced changes on top; not validated.

        Raises:
            ConfigError: an Advanced field cannot be read.
        """
        config = self._run_config(self.advanced.overrides()).config
        if config.judge and not config.judge_whisper_model:  # the judge listens with the Transcribe step's model
            from alltalk_gui.gui.preview.preview_page import transcription_model

            config.judge_whisper_model = transcription_model() or ""
        return config

    def _run_config(self, overrides: dict | None) -> RunConfig:
        """The core's config for the chosen profile (Auto's pick as shown) and ``overrides``."""
        name = self.picker.resolved()
        usable = self.picker.source.available and name in PROFILE_NAMES  # a broken install trains with defaults
        return build_train_config(self.project, self.base_model_dir(), profile=name if usable else None,
                                  devices=self.devices, overrides=overrides, auto=self.picker.choice() == "auto",
                                  engine=self.engine, longest_clip_s=self.facts.get("longest_s"))

    def _refresh_config(self) -> None:
        base = self.base_config()
        device = self.training_device()
        built = self._run_config(None)
        profiled = built.config
        self.advanced.show_config(profiled, self.profile_settings())
        notes = built.notes
        self.profile_notes.setText(" ".join(notes))
        if device is not None:
            where = "the GPU" if device.kind == "cuda" else "RAM"
            self.picker.show_estimates(base, device.free_gib, where, device)
        try:
            self._refresh_disk(self.build_config())
        except ConfigError:  # an unreadable Advanced value: the panel says so when Start is pressed
            self._refresh_disk(profiled)
        self.changed.emit()
