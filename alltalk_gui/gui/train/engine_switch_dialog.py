"""Switching the project's engine from the Train page: say what it changes, ask, then check the clips again and
write the dataset again, with progress, off the GUI thread.

The core (:mod:`alltalk_gui.core.dataset.engine_switch`) judges the clips and says what changes. Judging them means
the new engine's text check, which may import torch (XTTS v2's coqui cleaning), so it runs in a worker behind a
modal progress dialog (the clips cannot change meanwhile), as the dataset export does; the GUI thread never waits on
it. When the switch changes more than the engine (clips the new engine refuses, a dataset to write again) the user
is asked first and may keep the current engine. The clips are the Transcribe & Edit page's own open list when it
has one (one writer); its table learns of the new flags on the GUI thread, once the worker is done.
"""

from __future__ import annotations

from typing import Any, Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QProgressDialog, QWidget

from alltalk_gui.core.dataset.engine_switch import EngineSwitch, plan_switch, rewrite_dataset, switch_engine
from alltalk_gui.core.dataset.export import DatasetError, ExportReport
from alltalk_gui.core.dataset.info import format_rate
from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.transcript.segments import SegmentList, SegmentsError
from alltalk_gui.gui.common.wording import plural
from alltalk_gui.gui.common.workers import Worker
from alltalk_gui.gui.common.failure import show_failure


def needs_asking(change: EngineSwitch) -> bool:
    """Whether the switch changes more than the engine: clips refused, or a dataset written again."""
    return bool(change.now_refused) or change.rewrite


def ask(parent: QWidget, change: EngineSwitch) -> bool:
    """Show what the switch changes; True when the user goes ahead."""
    box = QMessageBox(QMessageBox.Icon.Question, f"Train with {change.new.title}?",
                      "\n\n".join(change.messages()), parent=parent)
    go = box.addButton(f"Switch to {change.new.title}", QMessageBox.ButtonRole.AcceptRole)
    box.addButton(f"Keep {change.old.title}", QMessageBox.ButtonRole.RejectRole)
    box.setDefaultButton(go)
    box.exec()
    return box.clickedButton() is go


class EngineSwitcher:
    """Runs one switch of a project's engine at a time, for the Train page.

    Args:
        open_segments: the transcript's open list, when the Transcribe & Edit page has one (else the project's
            segments.json is opened here, and closed when done).
        ask_user: asks about a switch that changes more than the engine (tests answer instead).
        done: called on the GUI thread when the switch is over: whether the engine changed, and the sentences that
            say what changed (empty when the user kept the engine).
    """

    def __init__(self, parent: QWidget, open_segments: Callable[[], SegmentList | None] | None,
                 ask_user: Callable[[EngineSwitch], bool], done: Callable[[bool, list[str]], None]) -> None:
        self.parent, self.open_segments, self.ask_user, self.done = parent, open_segments, ask_user, done
        self.worker: Worker | None = None

    def is_running(self) -> bool:
        return self.worker is not None and self.worker.is_running()

    def switch(self, project: VoiceProject, name: str) -> None:
        """Start switching to ``name``; :attr:`done` says how it ended.

        Raises:
            ProjectError: the project is open read-only (nothing changed).
        """
        project.check_writable()
        segments, owned = self._segments(project)
        if segments is False:
            self.done(False, [])
            return
        if segments is None:  # no clips: nothing to judge or to write, nothing that takes time
            change = switch_engine(project, name, None, plan=plan_switch(project, name, None))
            self.done(True, change.messages())
            return
        release = segments.close if owned else (lambda: None)
        vocab = get_engine(name).base_model_vocab()
        self._run(f"Checking the clips for {get_engine(name).title}…",
                  lambda j: plan_switch(project, name, segments, vocab),
                  lambda plan: self._decide(project, segments, plan, vocab, release), release)

    # -- the steps ------------------------------------------------------------------------------------------------
    def _decide(self, project: VoiceProject, segments: SegmentList, plan: EngineSwitch, vocab: Any,
                release: Callable[[], None]) -> None:
        if needs_asking(plan) and not self.ask_user(plan):
            release()
            self.done(False, [])
            return

        def job(j) -> tuple[EngineSwitch, ExportReport | Exception | None]:
            change = switch_engine(project, plan.new.name, segments, vocab, plan=plan, notify=False)
            if not change.rewrite:
                return change, None
            try:
                return change, rewrite_dataset(project, segments,
                                               progress=lambda done, total: j.progress.emit(done, total, ""))
            except DatasetError as exc:  # fewer than two usable clips: said, not a traceback
                return change, exc

        def finished(result: tuple[EngineSwitch, ExportReport | Exception | None]) -> None:
            change, report = result
            if change.flags_changed is not None:
                segments.announce(change.flags_changed)  # the editor's table, on its own thread
            release()
            self.done(True, _said(change, report))

        label = (f"Checking the clips and writing the dataset at {format_rate(plan.new.sample_rate)}…" if plan.rewrite
                 else f"Checking the clips for {plan.new.title}…")
        self._run(label, job, finished, release)

    def _segments(self, project: VoiceProject) -> tuple[SegmentList | None | bool, bool]:
        """(the list, whether it was opened here); (False, False) when segments.json cannot be read."""
        segments = self.open_segments() if self.open_segments is not None else None
        if segments is not None or not project.segments_file.exists():
            return segments, False
        try:
            return SegmentList.open(project), True
        except SegmentsError as exc:
            QMessageBox.warning(self.parent, "The clips cannot be read", f"{exc}\n\nThe engine was not changed.")
            return False, False

    def _run(self, label: str, job: Callable[[Any], Any], finished: Callable[[Any], None],
             release: Callable[[], None]) -> None:
        """``job`` in a worker behind a modal progress dialog (the clips cannot change while it reads them)."""
        dialog = QProgressDialog(label, "", 0, 0, self.parent)
        dialog.setWindowTitle("Switching the engine")
        dialog.setCancelButton(None)  # the new dataset is swapped in at the end; the old one stays until then
        dialog.setWindowModality(Qt.WindowModality.WindowModal)
        dialog.setMinimumDuration(300)
        worker = self.worker = Worker(job, self.parent)

        def on_progress(done: int, total: int, _label: str) -> None:
            dialog.setMaximum(total)
            dialog.setValue(done)

        def on_done(result: Any) -> None:
            dialog.reset()
            finished(result)

        def on_failed(trace: str) -> None:
            dialog.reset()
            release()
            show_failure(self.parent, "The engine switch stopped", "The switch stopped with an error; the previous "
                         "dataset was kept.", trace)
            self.done(False, [])

        worker.progress.connect(on_progress)
        worker.finished.connect(on_done)
        worker.failed.connect(on_failed)
        worker.start()


def _said(change: EngineSwitch, report: ExportReport | Exception | None) -> list[str]:
    """What changed, with how the dataset's rewrite went instead of that it will happen."""
    if report is None:
        return change.messages()
    lines = change.messages(dataset=False)
    if isinstance(report, Exception):
        return lines + [f"The dataset was not written again, and the previous one was kept: {report}"]
    written = (f"The dataset was written again at {format_rate(report.sample_rate)}: "
               f"{plural(report.train, 'training clip')} and {plural(report.eval, 'evaluation clip')}.")
    return [*lines, written, *report.notes]
