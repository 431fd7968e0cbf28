"""Shown on the first start (and from Help > Check this computer): what the app needs, and whether it is here.

Three checks run off the GUI thread, each with a busy bar while it works: the graphics card (loading PyTorch
takes seconds, so it never happens on the GUI thread), free disk space, and the base model of the engine new
projects start with (``DEFAULT_ENGINE``; its title, licence, download and check all come from the engine), whose
folder can be chosen here; the other engines' base models are chosen on the Train step, and the page says so. The
user can also accept that model's licence and pick the default memory profile.
Nothing blocks: "Continue" is always available, since every step can be done later.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import QCoreApplication, Qt, Signal, Slot
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QFileDialog, QFrame, QGridLayout, QHBoxLayout, QLabel, QMessageBox, QProgressBar,
    QPushButton, QScrollArea, QVBoxLayout, QWidget,
)

from alltalk_gui.core import app_settings
from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE, get_engine
from alltalk_gui.gui import settings
from alltalk_gui.gui.start import system_checks
from alltalk_gui.gui.style import app_icon
from alltalk_gui.gui.start.system_checks import OK, PROBLEM, WARNING, Check
from alltalk_gui.gui.common.base_model_download import BaseModelDownload
from alltalk_gui.gui.common.workers import Worker
from alltalk_gui.gui.common.failure import failure_message, log_failure
from alltalk_gui.gui.common.wording import engine_titles, in_words
from alltalk_gui.gui.common.label_links import links_by_keyboard

log = logging.getLogger("alltalk_gui")

FIRST_RUN_KEY = "first_run/completed"
PROFILE_KEY = "training/default_profile"
PROFILES = [("auto", "Automatic (chosen from the graphics memory)"), ("low", "Low memory"),
            ("medium", "Medium"), ("high", "High (fastest, needs the most memory)")]

def steps_text() -> str:
    """The four steps, naming every engine this install has."""
    return f"""
<p>Making a voice takes four steps, each on its own page in the sidebar:</p>
<ol>
<li><b>Import</b> 3 to 10 minutes of one person speaking, as clean as you can get it.</li>
<li><b>Transcribe &amp; edit</b>: Whisper writes down the words and cuts the audio into clips; you fix mistakes.</li>
<li><b>Train</b>: {in_words(engine_titles())} learns the voice (you choose the engine on that page). On an NVIDIA
graphics card this takes minutes to an hour.</li>
<li><b>Preview &amp; export</b>: listen, compare with the original model, and export for AllTalk or in the engine's
own format.</li>
</ol>
"""

GLYPH = {OK: ("✓", "#2e7d32"), WARNING: ("!", "#b26a00"), PROBLEM: ("✕", "#c62828")}

# Workers still running; kept here so a page closed mid-check does not destroy a running QThread.
_running: set[Worker] = set()


def first_run_pending() -> bool:
    return not settings.settings().value(FIRST_RUN_KEY, False, type=bool)


def set_first_run_done() -> None:
    settings.settings().setValue(FIRST_RUN_KEY, True)


def default_profile() -> str:
    """The memory profile new training runs start from: "auto", "low", "medium" or "high"."""
    value = str(settings.settings().value(PROFILE_KEY, "auto"))
    return value if value in dict(PROFILES) else "auto"


def wait_for_checks(ms: int = 30000) -> None:
    """Let running checks end before the app quits (a QThread destroyed while running aborts the process)."""
    for worker in list(_running):
        worker.wait(ms)


def run_check(fn: Callable[[], Any], on_done: Callable[[Any], None]) -> Worker:
    """Run ``fn()`` in a worker thread; ``on_done`` gets its result, or a PROBLEM :class:`Check` if it raised."""
    worker = Worker(lambda job: fn())
    _running.add(worker)

    def finished(result: object) -> None:
        _running.discard(worker)
        on_done(result)

    def failed(trace: str) -> None:
        _running.discard(worker)
        log_failure("A first-run check failed.", trace)
        on_done(Check(PROBLEM, "The check itself failed.", failure_message(trace)))

    worker.finished.connect(finished)
    worker.failed.connect(failed)
    worker.start()
    return worker


class CheckCard(QFrame):
    """One check: a title, a busy bar while it runs, then a coloured mark, a headline and an explanation."""

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent, objectName="checkCard")
        self.result: Check | None = None
        self.mark = QLabel(alignment=Qt.AlignmentFlag.AlignCenter)
        self.mark.setFixedSize(26, 26)
        self.title = QLabel(f"<b>{title}</b>")
        self.busy = QProgressBar()
        self.busy.setRange(0, 0)  # indeterminate: the check cannot say how far it is
        self.busy.setTextVisible(False)
        self.busy.setMaximumHeight(8)
        self.headline = QLabel(wordWrap=True, textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details = QLabel(wordWrap=True, textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse)
        self.extra = QHBoxLayout()
        self.extra.setContentsMargins(0, 0, 0, 0)

        grid = QGridLayout(self)
        grid.setContentsMargins(14, 10, 14, 12)
        grid.setHorizontalSpacing(12)
        grid.addWidget(self.mark, 0, 0, 2, 1, Qt.AlignmentFlag.AlignTop)
        grid.addWidget(self.title, 0, 1)
        grid.addLayout(self.extra, 0, 2, Qt.AlignmentFlag.AlignRight)
        grid.addWidget(self.headline, 1, 1, 1, 2)
        grid.addWidget(self.busy, 2, 1, 1, 2)
        grid.addWidget(self.details, 3, 1, 1, 2)
        grid.setColumnStretch(1, 1)

    def set_busy(self, text: str) -> None:
        self.result = None
        self.mark.setText("…")
        self.mark.setStyleSheet("color: palette(window-text); border: 1px solid palette(mid); border-radius: 13px;")
        self.headline.setText(text)
        self.details.setText("")
        self.details.hide()
        self.busy.show()

    def set_result(self, check: Check) -> None:
        self.result = check
        glyph, colour = GLYPH[check.status]
        self.mark.setText(glyph)
        self.mark.setStyleSheet(f"background: {colour}; color: white; border-radius: 13px; font-weight: bold;")
        self.busy.hide()
        self.headline.setText(f"<b>{_escape(check.headline)}</b>")
        self.details.setText(_escape(check.details))
        self.details.show()


class FirstRunPage(QWidget):
    done = Signal()  # the user pressed Continue

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        icon = QLabel()
        icon.setPixmap(app_icon().pixmap(64, 64))
        title = QLabel("<h1 style='margin:0'>Welcome to AllTalk GUI</h1>"
                       "<p style='margin:0'>Before your first voice, a quick look at this computer.</p>")
        header = QHBoxLayout()
        header.addWidget(icon)
        header.addSpacing(8)
        header.addWidget(title, 1)
        steps = QLabel(steps_text(), wordWrap=True)

        self.gpu_card = CheckCard("Graphics card")
        self.disk_card = CheckCard("Disk space")
        self.engine = get_engine(DEFAULT_ENGINE)  # the engine a new project starts with
        self.model_card = CheckCard(f"{self.engine.title} base model (the default engine)")
        self.choose_model = QPushButton("Choose folder…")
        self.choose_model.clicked.connect(self.choose_base_model)
        self.model_card.extra.addWidget(self.choose_model)
        # The Train page's download, offered once the licence below is accepted.
        self.base_download = BaseModelDownload(self)
        self.base_download.finished.connect(lambda folder: self.use_base_model(str(folder)))
        self.base_download.failed.connect(lambda error: self.model_card.set_result(
            Check(PROBLEM, "The download failed", error)))
        self.model_card.extra.addWidget(self.base_download.button)
        self.model_card.layout().addWidget(self.base_download.progress, 4, 1, 1, 2)

        self.licence = QCheckBox()
        self.licence_label = QLabel(wordWrap=True, openExternalLinks=True)
        self.licence.toggled.connect(self._licence_toggled)
        licence_row = QHBoxLayout()
        licence_row.addWidget(self.licence, 0, Qt.AlignmentFlag.AlignTop)
        licence_row.addWidget(self.licence_label, 1)

        self.profile = QComboBox()
        for key, label in PROFILES:
            self.profile.addItem(label, key)
        self.profile.setCurrentIndex(max(0, self.profile.findData(default_profile())))
        self.profile.currentIndexChanged.connect(
            lambda: settings.settings().setValue(PROFILE_KEY, self.profile.currentData()))
        profile_row = QHBoxLayout()
        profile_row.addWidget(QLabel("Default memory profile for training:"))
        profile_row.addWidget(self.profile)
        profile_row.addStretch(1)

        self.recheck = QPushButton("Check again")
        self.recheck.clicked.connect(self.start_checks)
        self.continue_button = QPushButton("Continue")
        self.continue_button.setDefault(True)
        self.continue_button.clicked.connect(self._continue)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.recheck)
        buttons.addWidget(self.continue_button)

        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(32, 24, 32, 24)
        layout.setSpacing(10)
        layout.addLayout(header)
        layout.addWidget(steps)
        for card in (self.gpu_card, self.disk_card, self.model_card):
            layout.addWidget(card)
        others = [title for title in engine_titles() if title != self.engine.title]
        self.other_engines = QLabel(
            f"{in_words(others, 'and')}: {'its base model is' if len(others) == 1 else 'their base models are'} chosen "
            "or downloaded on the Train step, after accepting the engine's licence, when you choose that engine there.",
            wordWrap=True)
        self.other_engines.setVisible(bool(others))
        layout.addWidget(self.other_engines)
        layout.addSpacing(4)
        layout.addLayout(licence_row)
        layout.addLayout(profile_row)
        layout.addStretch(1)
        layout.addLayout(buttons)
        scroll = QScrollArea(widgetResizable=True, frameShape=QFrame.Shape.NoFrame)
        scroll.setWidget(body)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scroll)

        self._pending = 0
        self._show_licence_state()
        app = QCoreApplication.instance()
        if app is not None and not app.property("alltalkWaitsForChecks"):
            app.aboutToQuit.connect(wait_for_checks)
            app.setProperty("alltalkWaitsForChecks", True)

    # -- checks ---------------------------------------------------------------------------------------------
    def is_checking(self) -> bool:
        return self._pending > 0

    @Slot()
    def start_checks(self) -> None:
        """Run the three checks (again). Ignored while a round is still running."""
        if self.is_checking():
            return
        self._pending = 3
        self.recheck.setEnabled(False)
        self.gpu_card.set_busy("Looking for graphics cards (loading PyTorch takes a few seconds)…")
        run_check(system_checks.check_gpu, lambda c: self._finished(self.gpu_card, c))
        self.disk_card.set_busy("Measuring free space…")
        folder = settings.last_folder("projects")
        run_check(lambda: system_checks.check_disk(folder), lambda c: self._finished(self.disk_card, c))
        self.model_card.set_busy("Checking the base model…")
        run_check(system_checks.check_base_model, lambda c: self._finished(self.model_card, c))

    def _finished(self, card: CheckCard, check: Check) -> None:
        card.set_result(check)
        self._pending -= 1
        if self._pending == 0:
            self.recheck.setEnabled(True)
            # One line per round: the frozen-app smoke test waits for it to know torch loaded in the build.
            log.info("First-run checks finished: graphics card: %s | disk: %s | base model: %s",
                     *(c.result.headline if c.result else "not checked"
                       for c in (self.gpu_card, self.disk_card, self.model_card)))

    @Slot()
    def choose_base_model(self) -> None:
        start = str(system_checks.base_model_folder() or Path.home())
        folder = QFileDialog.getExistingDirectory(self, f"Choose the {self.engine.title} base-model folder", start)
        if folder:
            self.use_base_model(folder)

    def use_base_model(self, folder: str) -> None:
        """Validate ``folder`` in the background; remember it only if it holds a usable model."""
        self.choose_model.setEnabled(False)
        self.model_card.set_busy(f"Checking {folder}…")
        self._pending += 1
        self.recheck.setEnabled(False)

        def checked(check: Check) -> None:
            if check.status == OK:
                try:
                    system_checks.set_base_model_folder(folder)
                except (OSError, app_settings.SettingsError) as exc:
                    check = Check(PROBLEM, check.headline, f"The choice could not be saved: {exc}")
            self.choose_model.setEnabled(True)
            self._finished(self.model_card, check)

        run_check(lambda: system_checks.check_base_model(folder), checked)

    # -- licence and continue -------------------------------------------------------------------------------
    def _show_licence_state(self) -> None:
        try:
            accepted = self.engine.licence_accepted()
        except app_settings.SettingsError:
            accepted = False
        self.licence.blockSignals(True)
        self.licence.setChecked(accepted)
        self.licence.blockSignals(False)
        self.licence.setEnabled(not accepted)
        self.base_download.button.setEnabled(accepted and not self.base_download.is_running())
        engine, licence = self.engine, self.engine.licence
        self.base_download.button.setToolTip(
            f"Download {engine.title} from the Hugging Face Hub ({engine.download_size}) into a folder you choose"
            if accepted else f"Accept the {licence.title} below first")
        done = " (accepted)" if accepted else ""
        self.licence_label.setText(
            f"I have read the <a href='{licence.url}'>{licence.title}</a>{done}, under which the {engine.title} "
            f"model is released. {licence.summary} Read it to see how it applies to the voices you make.")
        links_by_keyboard(self.licence_label)

    def _licence_toggled(self, checked: bool) -> None:
        if not checked:
            return
        try:
            self.engine.accept_licence()
        except (OSError, app_settings.SettingsError) as exc:
            QMessageBox.warning(self, "Cannot save the acceptance", str(exc))
        self._show_licence_state()

    def _continue(self) -> None:
        set_first_run_done()
        self.done.emit()


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
