"""The main window: a sidebar of steps, the current step's page, and the Project menu.

Steps are listed in ``STEPS``, each with the class of its page; the window builds one page per step and talks
to it only through :class:`~alltalk_gui.gui.common.step_page.StepPage`. The steps are enabled once a project is
open. A project opened read-only (another program holds it, or a training runs in it) shows the
:class:`~alltalk_gui.gui.common.owner_bar.OwnerBar` above the steps: who holds it, Stop for a training, and
"Open for editing" once it is free.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QByteArray, QRect, QSize, Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QFileDialog, QHBoxLayout, QListWidget, QListWidgetItem, QMainWindow, QMessageBox, QStackedWidget, QVBoxLayout,
    QWidget,
)

from alltalk_gui.core.project.folder import ProjectError, VoiceProject
from alltalk_gui.core.project.long_paths import project_path_problem
from alltalk_gui.gui import settings
from alltalk_gui.gui.common.step_page import CloseAnswer, StepPage
from alltalk_gui.gui.common.wording import plural
from alltalk_gui.gui.common.owner_bar import OwnerBar
from alltalk_gui.gui.common.project_lock import PROGRAM, lock_or_read_only
from alltalk_gui.gui.start.about_dialog import AboutDialog
from alltalk_gui.gui.start.new_project_dialog import NewProjectDialog
from alltalk_gui.gui.start.first_run_page import FirstRunPage
from alltalk_gui.gui.sources.import_page import ImportPage
from alltalk_gui.gui.preview.preview_page import PreviewPage
from alltalk_gui.gui.train.free_space_dialog import FreeSpaceDialog
from alltalk_gui.gui.train.train_page import TrainPage
from alltalk_gui.gui.transcript.transcript_page import TranscriptPage
from alltalk_gui.gui.start.welcome_page import WelcomePage


PREFERRED_SIZE = (1100, 720)  # the first size on a screen with room for it; smaller screens get their free area
FRAME_GUESS = (8, 36)  # title bar and borders (px) assumed until the window manager has framed the window


@dataclass(frozen=True)
class Step:
    title: str
    summary: str
    page: type  # the page's class (a QWidget that is a StepPage)


STEPS = [
    Step("Import", "Add and check the recordings.", ImportPage),
    Step("Transcribe & Edit", "Whisper transcribes the recordings and cuts them into clips; you correct the "
         "text and the cuts.", TranscriptPage),
    Step("Train", "Fine-tune the engine's base model with a memory profile that fits your GPU, with live memory "
         "and loss graphs.", TrainPage),
    Step("Preview & Export", "Listen to the new voice next to the original model and export it for AllTalk or as "
         "a model folder of the engine's own.", PreviewPage),
]


class MainWindow(QMainWindow):
    def __init__(self) -> None:
        super().__init__()
        self.project: VoiceProject | None = None
        self._fitted_framed = False
        self._closing = False  # closeEvent waits for the pages' work to end
        self.setWindowTitle("AllTalk GUI")
        self.setAcceptDrops(True)

        self.sidebar = QListWidget(objectName="stepSidebar")
        self.sidebar.setFixedWidth(200)
        self.sidebar.setIconSize(QSize(20, 20))
        self.sidebar.setSpacing(2)
        self.stack = QStackedWidget()
        self.welcome = WelcomePage()
        self.welcome.new_requested.connect(self.new_project)
        self.welcome.open_requested.connect(self.open_project_dialog)
        self.welcome.open_path.connect(self.open_project)
        self.stack.addWidget(self.welcome)
        self.first_run = FirstRunPage()
        self.first_run.done.connect(self._update_steps)
        self.stack.addWidget(self.first_run)

        # One page per step, built here by name so that the steps' signals can be wired to each other.
        self.import_page = ImportPage()
        self.transcript_page = TranscriptPage()
        self.train_page = TrainPage()
        self.preview_page = PreviewPage()
        by_class = {type(p): p for p in (self.import_page, self.transcript_page, self.train_page, self.preview_page)}
        self.pages: list[StepPage] = [by_class[step.page] for step in STEPS]
        for number, (step, page) in enumerate(zip(STEPS, self.pages), start=1):
            item = QListWidgetItem(f"{number}  {step.title}")
            item.setToolTip(step.summary)
            item.setSizeHint(QSize(180, 40))
            self.sidebar.addItem(item)
            self.stack.addWidget(page)
            page.status_message.connect(lambda text: self.statusBar().showMessage(text, 8000))
        self.import_page.sources_changed.connect(self.transcript_page.sources_changed)
        # An engine switch on the Train page re-checks the clips the Transcribe & Edit page has open (one writer).
        self.train_page.setup.switcher.open_segments = lambda: self.transcript_page.segments
        self.transcript_page.recordings_added.connect(lambda: self.import_page.set_project(self.project))
        preview_row = self.pages.index(self.preview_page)
        self.train_page.preview_requested.connect(lambda: self.sidebar.setCurrentRow(preview_row))
        # A starting run sizes itself from the card's free memory: the voices the Preview page keeps loaded go first.
        self.train_page.run.running_changed.connect(lambda running: running and self.preview_page.release_models())
        self.train_page.free_space_requested.connect(self.free_disk_space)
        transcript_row = self.pages.index(self.transcript_page)
        self.train_page.flagged_requested.connect(lambda: (self.sidebar.setCurrentRow(transcript_row),
                                                           self.transcript_page.show_flagged()))
        self.sidebar.currentRowChanged.connect(self._show_step)

        self.owner_bar = OwnerBar()
        self.owner_bar.edit_requested.connect(self._open_for_editing)
        central = QWidget()
        layout = QHBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.sidebar)
        right = QVBoxLayout()
        right.setContentsMargins(0, 0, 0, 0)
        right.addWidget(self.owner_bar)
        right.addWidget(self.stack, 1)
        layout.addLayout(right, 1)
        self.setCentralWidget(central)
        self._build_menus()
        self._update_steps()
        self._restore_geometry()
        self.statusBar().showMessage("Create a voice project or open one to begin.")

    # -- menus ----------------------------------------------------------------------------------------------
    def _build_menus(self) -> None:
        menu = self.menuBar().addMenu("&Project")
        self._action(menu, "&New…", self.new_project, QKeySequence.StandardKey.New)
        self._action(menu, "&Open…", self.open_project_dialog, QKeySequence.StandardKey.Open)
        self.recent_menu = menu.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        self.close_action = self._action(menu, "&Close project", self.close_project, QKeySequence.StandardKey.Close)
        self.free_space_action = self._action(menu, "&Free disk space…", self.free_disk_space)
        menu.addSeparator()
        self._action(menu, "&Quit", self.close, QKeySequence.StandardKey.Quit)
        # The transcript editor's actions with their shortcuts, so they can be found without hovering; they act
        # on the Transcribe & Edit step, so the menu is enabled there only.
        self.edit_menu = self.menuBar().addMenu("&Edit")
        self.edit_menu.addActions(self.transcript_page.editor.menu_actions())
        self.edit_menu.setEnabled(False)
        self.stack.currentChanged.connect(
            lambda: self.edit_menu.setEnabled(self.stack.currentWidget() is self.transcript_page))
        help_menu = self.menuBar().addMenu("&Help")
        self._action(help_menu, "&Check this computer…", self.show_first_run)
        self._action(help_menu, "&About AllTalk GUI", self._about)

    def _action(self, menu, text: str, slot, shortcut=None) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(shortcut)
        action.triggered.connect(slot)
        menu.addAction(action)
        return action

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        recent = settings.recent_projects()
        for folder in recent:
            action = self.recent_menu.addAction(folder)
            action.triggered.connect(lambda _=False, f=folder: self.open_project(f))
        if not recent:
            self.recent_menu.addAction("No recent projects").setEnabled(False)

    def free_disk_space(self) -> None:
        """Show what each training run takes on disk and free it (the Preview page's models are given back first:
        they may be read from a run about to go)."""
        if self.project is None:
            return
        dialog = FreeSpaceDialog(self.project, before_delete=self.preview_page.release_models, parent=self)
        dialog.freed.connect(self.train_page.runs_changed)
        dialog.freed.connect(self.preview_page.refresh)
        dialog.exec()
        dialog.deleteLater()

    def _about(self) -> None:
        AboutDialog(self).exec()

    def show_first_run(self) -> None:
        """Show the first-run page (GPU, disk, base model) and run its checks; Continue returns to the steps."""
        self.sidebar.setCurrentRow(-1)
        self.stack.setCurrentWidget(self.first_run)
        self.first_run.start_checks()

    # -- projects -------------------------------------------------------------------------------------------
    def new_project(self) -> None:
        dialog = NewProjectDialog(self)
        if dialog.exec() != NewProjectDialog.DialogCode.Accepted:
            return
        try:
            project = VoiceProject.create(dialog.folder, name=dialog.name, language=dialog.language)
        except ProjectError as exc:
            QMessageBox.warning(self, "Cannot create the project", str(exc))
            return
        settings.set_last_folder("projects", dialog.folder.parent)
        if lock_or_read_only(self, project):
            self.set_project(project)
            if self.project is not project:  # refused while an import or a training runs
                project.release_lock()
            else:
                self._warn_if_too_deep(project)

    def open_project_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Open a voice project", settings.last_folder("projects"))
        if folder:
            self.open_project(folder)

    def open_project(self, folder: str) -> bool:
        if self.project is not None and self.project.root == Path(folder).expanduser().absolute():
            return True  # already open here (and this window holds its lock)
        try:
            project = VoiceProject.open(folder)
        except ProjectError as exc:
            QMessageBox.warning(self, "Cannot open the project", str(exc))
            self.welcome.refresh()
            return False
        settings.set_last_folder("projects", Path(folder).parent)
        if not lock_or_read_only(self, project):
            return False
        self.set_project(project)
        if self.project is not project:  # refused while an import or a training runs
            project.release_lock()
            return False
        self._warn_if_too_deep(project)
        self._offer_windows_names(project)  # before the orphans: adopting them imports in the background
        if not project.read_only:
            self._offer_orphans(project)
        return True

    def _warn_if_too_deep(self, project: VoiceProject) -> None:
        """On Windows without long paths: say now when files inside the project would pass MAX_PATH."""
        problem = project_path_problem(project.root)
        if problem:
            QMessageBox.warning(self, "The project folder's path is too long", problem)

    def _offer_windows_names(self, project: VoiceProject) -> None:
        """Names in the project Windows cannot hold (made on Linux, or by a version that copied recordings under
        their own names): say which and what to do; rename the recordings' copies if the user agrees."""
        from alltalk_gui.core.project.windows_names import rename_recordings, summary, worth_saying

        problems = worth_saying(project)
        if not problems:
            return
        renamable = not project.read_only and any(p.recording and not p.missing for p in problems)
        box = QMessageBox(QMessageBox.Icon.Warning, "Names Windows cannot use", summary(problems), parent=self)
        rename = box.addButton("Rename the recordings", QMessageBox.ButtonRole.AcceptRole) if renamable else None
        box.addButton("Not now" if renamable else "OK", QMessageBox.ButtonRole.RejectRole)
        box.exec()
        if rename is None or box.clickedButton() is not rename:
            return
        try:
            renamed = rename_recordings(project)
        except ProjectError as exc:
            QMessageBox.warning(self, "Cannot rename the recordings", str(exc))
            return
        self.statusBar().showMessage(
            f"Renamed {plural(len(renamed), 'recording copy', 'recording copies')} for Windows.", 8000)

    def _offer_orphans(self, project: VoiceProject) -> None:
        """Files an interrupted import left in the project without recording them: import or remove them, if the
        user agrees (nothing happens unasked)."""
        from alltalk_gui.core.project.orphans import find_orphans, remove_orphans

        orphans = find_orphans(project)
        if not orphans:
            return
        box = QMessageBox(QMessageBox.Icon.Question, "Files left by an interrupted import",
                          f"{orphans.summary()}.\n\nImport them as recordings (they are checked like any "
                          "import; working copies without a recording are removed), or remove them all?", parent=self)
        adopt = box.addButton("Import them", QMessageBox.ButtonRole.AcceptRole)
        remove = box.addButton("Remove them", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton("Not now", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(adopt)
        box.exec()
        if box.clickedButton() is adopt:
            self.sidebar.setCurrentRow(0)  # the import page shows the progress and what was refused
            self.import_page.adopt(orphans)
        elif box.clickedButton() is remove:
            problems = remove_orphans(project, orphans)
            self.statusBar().showMessage(" ".join(problems) or f"Removed {plural(len(orphans.files), 'file')}.", 8000)

    def set_project(self, project: VoiceProject | None) -> None:
        for page in self.pages:
            message = page.busy_message()
            if message:
                QMessageBox.information(self, "Still working", message)
                return
        if self.project is not None and self.project is not project:
            self.project.release_lock()
        self.project = project
        self.owner_bar.show_project(project)
        for page in self.pages:
            page.set_project(project)
        if project is not None:
            settings.add_recent_project(project.root)
            read_only = " (read-only)" if project.read_only else ""
            self.setWindowTitle(f"{project.name}{read_only} — AllTalk GUI")
            self.statusBar().showMessage(f"Opened {project.root}", 5000)
        else:
            self.setWindowTitle("AllTalk GUI")
            self.welcome.refresh()
        self._update_steps()

    def close_project(self) -> None:
        self.set_project(None)

    def _open_for_editing(self) -> None:
        """The read-only project's holder is gone (a training has ended): become its writer, and let every step
        load it again as writable (the transcript editor opened its clips read-only)."""
        project = self.project
        if project is None:
            return
        try:
            project.take_lock(PROGRAM)
        except (ProjectError, OSError) as exc:
            QMessageBox.information(self, "Still open elsewhere", str(exc))
            self.owner_bar.show_project(project)
            return
        self.set_project(project)  # the same project again: every page loads it afresh, writable

    # -- steps ----------------------------------------------------------------------------------------------
    def _update_steps(self) -> None:
        has_project = self.project is not None
        self.close_action.setEnabled(has_project)
        self.free_space_action.setEnabled(has_project)
        for row, page in enumerate(self.pages):
            item = self.sidebar.item(row)
            enabled = has_project
            flags = Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEnabled if enabled else Qt.ItemFlag.NoItemFlags
            item.setFlags(flags)
        if has_project:
            self.sidebar.setCurrentRow(0)
            self._show_step(0)
        else:
            self.sidebar.setCurrentRow(-1)
            self.stack.setCurrentWidget(self.welcome)

    def _show_step(self, row: int) -> None:
        if 0 <= row < len(self.pages) and self.project is not None:
            self.stack.setCurrentWidget(self.pages[row])

    # -- window ---------------------------------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        if self.project is None:
            self.statusBar().showMessage("Create or open a project first, then drop the recordings again.", 8000)
            return
        self.sidebar.setCurrentRow(0)
        self.import_page.dropEvent(event)

    def ask_on_close(self, works: list[str], training: bool) -> CloseAnswer:
        """The one question when several pages work: stop all, let a training go on, or keep the window open."""
        box = QMessageBox(QMessageBox.Icon.Question, "Still working",
                          "Closing now stops:\n" + "\n".join(f"\N{BULLET} {work}" for work in works), parent=self)
        stop = box.addButton("Stop all, save a training checkpoint and close" if training else "Stop all and close",
                             QMessageBox.ButtonRole.AcceptRole)
        detach = (box.addButton("Keep training in the background, stop the rest and close",
                                QMessageBox.ButtonRole.DestructiveRole) if training else None)
        box.addButton("Don't close", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(stop)
        box.exec()
        clicked = box.clickedButton()
        return (CloseAnswer.STOP if clicked is stop else CloseAnswer.DETACH if detach is not None and clicked is detach
                else CloseAnswer.KEEP)

    def screen_area(self) -> QRect:
        """The part of the screen a window may cover (the desktop's panels and docks left out)."""
        screen = self.screen() or QGuiApplication.primaryScreen()
        return screen.availableGeometry() if screen is not None else QRect(0, 0, *PREFERRED_SIZE)

    def _restore_geometry(self) -> None:
        """The saved size and place, or the preferred size; either way no larger than the screen, and on it. A
        geometry saved on a bigger monitor (or the old fixed 1100x720) must not open past a 1024x600 screen's edge."""
        geometry = settings.settings().value("window/geometry")
        if not (isinstance(geometry, QByteArray) and self.restoreGeometry(geometry)):
            self.resize(*PREFERRED_SIZE)
        self.fit_to_screen()

    def fit_to_screen(self) -> None:
        """Shrink the window to the screen's free area (its frame included) and move it fully onto it."""
        if self.isMaximized() or self.isFullScreen():
            return
        area = self.screen_area()
        frame = self.frameGeometry().size() - self.geometry().size()  # title bar and borders, once shown
        # Before the window manager has framed the window its frame is unknown: leave room for a typical one.
        frame_w, frame_h = (frame.width(), frame.height()) if frame.height() > 0 else FRAME_GUESS
        width = min(self.width(), area.width() - frame_w)
        height = min(self.height(), area.height() - frame_h)
        if (width, height) != (self.width(), self.height()):
            self.resize(max(width, self.minimumSizeHint().width()), max(height, 1))
        x = min(max(self.x(), area.left()), area.right() + 1 - self.width() - frame_w)
        y = min(max(self.y(), area.top()), area.bottom() + 1 - self.height() - frame_h)
        self.move(max(x, area.left()), max(y, area.top()))

    def showEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().showEvent(event)
        if not self._fitted_framed:  # once framed, the real title bar's height is known: fit again with it
            self._fitted_framed = True
            QTimer.singleShot(0, self, self._fit_once_framed)

    def _fit_once_framed(self) -> None:
        if self.frameGeometry().height() > self.geometry().height():
            self.fit_to_screen()

    def closeEvent(self, event: QCloseEvent) -> None:
        """Work on one page: that page asks what to do with it. Work on several (a transcription while a training
        runs): one question for all, and nothing is stopped before it is answered; a page that asked on its own
        had stopped its work before the next page's "Don't close". Then each page ends its work in the steps'
        order, waiting with the event loop running: the transcription first (its worker ends Whisper's child
        process at once, giving the CPU or GPU back to the training's checkpoint), then the training (a checkpoint;
        killed after its stop timeout, so no child is left behind), then a take."""
        if self._closing:  # a second close while the first one waits for the work to end
            event.ignore()
            return
        works = [work for work in (page.close_work() for page in self.pages) if work]
        decided = self.ask_on_close(works, self.train_page.close_work() is not None) if len(works) > 1 else None
        self._closing = True
        try:
            closing = decided != CloseAnswer.KEEP and all(page.confirm_close(decided) for page in self.pages)
        finally:
            self._closing = False
        if not closing:
            event.ignore()
            return
        settings.settings().setValue("window/geometry", self.saveGeometry())
        if self.project is not None:
            self.project.release_lock()
        super().closeEvent(event)
