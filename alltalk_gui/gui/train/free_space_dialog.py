"""Project › Free disk space…: each training run with the space it takes, and freeing it.

A run keeps its newest checkpoints and its best, each the model with its optimizer state (gigabytes for a full
fine-tune), and every new run keeps its own. Here the user sees what each run takes and either keeps only the
checkpoint Preview and Export use, or deletes a whole run, after a question that says what goes and how much it
frees. The listing and the deleting run in workers (a run can be many gigabytes on a slow disk) through
:mod:`alltalk_gui.core.voice.run_space`, the same code as ``alltalk-gui checkpoints --keep-best / --delete-run``.
The run a training child trains now is shown and left alone. ``before_delete`` lets the window give back models
the Preview page keeps loaded from a run's files first; ``freed`` tells the pages to read the runs again.
"""

from __future__ import annotations

import time
from typing import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QDialog, QDialogButtonBox, QHBoxLayout, QHeaderView, QLabel, QMessageBox,
                               QPushButton, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

from alltalk_gui.core.engine_api.engine import EngineError, get_engine
from alltalk_gui.core.machine.disk import free_bytes, size_text
from alltalk_gui.core.project.errors import ProjectError
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.voice.run_space import (FreePlan, RunSpace, free_space, other_space, other_space_sentence,
                                              plan_freeing, runs_on_disk, thinnable)
from alltalk_gui.gui.common.project_lock import read_only_message
from alltalk_gui.gui.common.failure import failure_message, log_failure
from alltalk_gui.gui.common.workers import Worker, run_detached

COLUMNS = ("Run", "Engine", "Last written", "State", "Checkpoints", "Size", "Best only frees")


def engine_title(name: str | None) -> str:
    if name is None:
        return "—"
    try:
        return get_engine(name).title
    except EngineError:  # a run of an engine this install does not have
        return name


class FreeSpaceDialog(QDialog):
    freed = Signal()  # something was deleted: the pages read the runs again

    def __init__(self, project: VoiceProject, before_delete: Callable[[], None] = lambda: None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.project = project
        self.before_delete = before_delete
        self.runs: list[RunSpace] = []
        self.worker: Worker | None = None
        self._deleting = False
        self._close_when_done = False
        self._started = 0.0
        self.setWindowTitle("Free disk space")
        self.resize(860, 420)
        layout = QVBoxLayout(self)
        self.summary = QLabel("Measuring the runs…")
        self.summary.setWordWrap(True)
        layout.addWidget(self.summary)
        self.table = QTreeWidget()
        self.table.setHeaderLabels(COLUMNS)
        header = self.table.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)  # run names may be long; numbers stay whole
        for column in (5, 6):
            self.table.headerItem().setTextAlignment(column, Qt.AlignmentFlag.AlignRight)
        self.table.setRootIsDecorated(False)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        layout.addWidget(self.table, 1)
        buttons = QHBoxLayout()
        self.keep_best = QPushButton("&Keep only the best checkpoint")
        self.keep_best.setToolTip("Delete the run's other checkpoints; keep the one Preview and Export use")
        self.keep_best.clicked.connect(lambda: self._free_selected(keep_best=True))
        self.delete = QPushButton("&Delete run…")
        self.delete.setToolTip("Delete the run with all its checkpoints")
        self.delete.clicked.connect(lambda: self._free_selected(keep_best=False))
        self.keep_all = QPushButton("Keep only the best of &every run")
        self.keep_all.clicked.connect(self._free_every_run)
        for button in (self.keep_best, self.delete):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(self.keep_all)
        layout.addLayout(buttons)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.status)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.reject)
        layout.addWidget(close)
        self._update_buttons()
        self.refresh()

    # -- reading --------------------------------------------------------------------------------------------
    def refresh(self) -> None:
        root = self.project.root
        project = self.project
        self._work(lambda _job: (runs_on_disk(root), free_bytes(root), other_space(project)), self._show)

    def _show(self, result: tuple[list[RunSpace], int, list[tuple[str, int]]]) -> None:
        self.runs, free, others = result
        selected = self.selected()
        self.table.clear()
        for run in self.runs:
            count = len(run.checkpoints)
            best = f"step {run.best.step}" if run.best is not None else "no checkpoint"
            spare = size_text(run.freed_by_keeping_best) if run.freed_by_keeping_best else "—"
            written = time.strftime("%Y-%m-%d %H:%M", time.localtime(run.modified))
            item = QTreeWidgetItem([run.name, engine_title(run.engine), written, run.state,
                                    f"{count} (uses {best})" if count else "none", size_text(run.size_bytes), spare])
            item.setToolTip(0, str(run.folder))
            item.setToolTip(4, run.best_reason or "This run wrote no complete checkpoint.")
            for column in (5, 6):
                item.setTextAlignment(column, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            item.setData(0, Qt.ItemDataRole.UserRole, run.name)
            self.table.addTopLevelItem(item)
            if selected is not None and run.name == selected.name:
                item.setSelected(True)
        total = sum(run.size_bytes for run in self.runs)
        spare = sum(run.freed_by_keeping_best for run in thinnable(self.runs))
        if not self.runs:
            text = f"This project has no training runs yet. {size_text(free)} free on its disk."
        else:
            text = (f"The {len(self.runs)} training run{'s' * (len(self.runs) != 1)} of “{self.project.name}” take "
                    f"{size_text(total)}; {size_text(free)} free on that disk. A checkpoint holds the model and its "
                    "optimizer state. Preview and Export use one per run (the judge's pick, else the lowest eval "
                    "loss); the others are only needed to resume from them.")
            if spare:
                text += f" Keeping only the best of every run frees {size_text(spare)}."
        besides = other_space_sentence(others)
        self.summary.setText(f"{text} {besides}" if besides else text)
        self._update_buttons()

    def selected(self) -> RunSpace | None:
        items = self.table.selectedItems()
        name = items[0].data(0, Qt.ItemDataRole.UserRole) if items else None
        return next((run for run in self.runs if run.name == name), None)

    def _update_buttons(self) -> None:
        busy = self.is_busy()
        run = self.selected()
        usable = run is not None and not run.training_now and not busy and not self.project.read_only
        self.keep_best.setEnabled(usable and bool(run.freed_by_keeping_best))
        self.delete.setEnabled(usable)
        self.keep_all.setEnabled(not busy and not self.project.read_only
                                 and bool(thinnable(self.runs)))
        if self.project.read_only:
            self.status.setText(read_only_message(self.project))

    # -- freeing --------------------------------------------------------------------------------------------
    def _free_selected(self, keep_best: bool) -> None:
        run = self.selected()
        if run is None:
            return
        self._ask_and_free(dict(keep_best=[run.name]) if keep_best else dict(delete=[run.name]))

    def _free_every_run(self) -> None:
        self._ask_and_free(dict(every_run=True))

    def _ask_and_free(self, request: dict) -> None:
        try:
            plan = plan_freeing(self.project.root, **request)
        except ProjectError as exc:  # went away or started training since the list was read
            self.status.setText(str(exc))
            self.refresh()
            return
        if not plan.steps() or not self.confirm(plan):
            return
        self.before_delete()
        root = self.project.root
        self._started = time.monotonic()
        self.status.setText("Deleting…")
        self._deleting = True
        self._work(lambda _job: free_space(root, plan), self._freed)

    def confirm(self, plan: FreePlan) -> bool:
        """Ask before deleting; the default answer keeps everything."""
        steps = plan.steps()
        listed = f" {steps[0]}." if len(steps) == 1 else ":" + "".join(f"\n  • {step}" for step in steps)
        text = ("This will" + listed + "\n\nDeleted checkpoints cannot be brought back"
                + (", and a run can then resume only from the checkpoint kept." if plan.keep_best else "."))
        box = QMessageBox(QMessageBox.Icon.Warning, "Delete checkpoints?", text, parent=self)
        delete = box.addButton(f"Delete ({size_text(plan.bytes)})", QMessageBox.ButtonRole.DestructiveRole)
        cancel = box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(cancel)
        box.setEscapeButton(cancel)
        box.exec()
        return box.clickedButton() is delete

    def _freed(self, freed) -> None:
        self._deleting = False
        text = f"Freed {size_text(freed.bytes)} in {time.monotonic() - self._started:.1f} s."
        if freed.problems:
            text += " " + " ".join(freed.problems)
        self.status.setText(text)
        self.freed.emit()
        self.refresh()

    # -- workers --------------------------------------------------------------------------------------------
    def _work(self, job, done) -> None:
        """Run ``job`` off the GUI thread, kept until it ends even if the dialog closes meanwhile."""
        self.worker = run_detached(Worker(job))
        self.worker.finished.connect(done)
        self.worker.failed.connect(self._failed)
        self.worker.finished.connect(self._ended)
        self.worker.failed.connect(self._ended)
        self._update_buttons()

    def _failed(self, traceback_text: str) -> None:
        self._deleting = False
        log_failure("Freeing disk space stopped with an error", traceback_text)
        self.status.setText(f"Could not free the space: {failure_message(traceback_text)}")
        self.refresh()

    def _ended(self, _result: object) -> None:
        if self._close_when_done and not self.is_busy():
            super().reject()

    def is_busy(self) -> bool:
        return self.worker is not None and self.worker.is_running()

    def reject(self) -> None:
        """Close; a delete in progress finishes first (a half-deleted checkpoint helps nobody), then it closes."""
        if self.is_busy() and self._deleting:
            self._close_when_done = True
            self.status.setText("Finishing the delete in progress; the window closes when it is done…")
            return
        super().reject()
