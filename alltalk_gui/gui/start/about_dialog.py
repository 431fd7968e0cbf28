"""Help > About: the app's version, the versions of what it runs on, the graphics card, and the licences.

Versions are read from the installed packages' metadata, which does not import them, so the dialog opens at
once; the graphics card and PyTorch's CUDA build need torch itself and are filled in by a worker thread. Each
engine's base-model licence (``Engine.licence``) is named with its link because it limits what users may do with
the voices they make, and the packages each engine runs on (``Engine.packages``) are listed beside the app's own.
"Copy" puts the versions on the clipboard for bug reports.
"""

from __future__ import annotations

import importlib.metadata as metadata
import platform
import sys

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import Qt, qVersion
from PySide6.QtWidgets import (
    QApplication, QDialog, QDialogButtonBox, QFormLayout, QHBoxLayout, QLabel, QProgressBar, QTabWidget,
    QTextBrowser, QVBoxLayout, QWidget,
)

from alltalk_gui import __version__
from alltalk_gui.gui.common.wording import engine_titles, in_words
from alltalk_gui.gui.start import system_checks
from alltalk_gui.gui.start.first_run_page import run_check
from alltalk_gui.gui.style import app_icon

# (distribution, what it is) for the versions and licences lists: the app's own, then each engine's (components()).
APP_COMPONENTS = [
    ("PySide6", "Qt for Python (the window)"),
    ("pyqtgraph", "graphs"),
    ("torch", "PyTorch"),
    ("torchaudio", "PyTorch audio"),
    ("accelerate", "training on one or more GPUs"),
    ("openai-whisper", "transcription"),
    ("faster-whisper", "transcription"),
    ("numpy", "numbers"),
    ("soundfile", "audio files"),
    ("av", "PyAV, audio decoding with FFmpeg"),
]


def components() -> list[tuple[str, str]]:
    """The app's packages and every engine's (``Engine.packages``), each once."""
    from alltalk_gui.core.engine_api.engine import engine_names, get_engine

    found = dict(APP_COMPONENTS)
    for name in engine_names():
        for dist, what in get_engine(name).packages:
            found.setdefault(dist, what)
    return list(found.items())


def model_licences() -> str:
    """Each engine's base-model licence (Engine.licence): they limit what users may do with the voices they make."""
    from alltalk_gui.core.engine_api.engine import engine_names, get_engine

    parts = []
    for name in engine_names():
        engine = get_engine(name)
        licence = engine.licence
        parts.append(f"<p><b>{engine.title} model</b> (the weights AllTalk GUI fine-tunes): {licence.title}, "
                     f"<a href='{licence.url}'>{licence.url}</a>. {licence.summary} Read it before you use a voice "
                     f"fine-tuned from {engine.title}.</p>")
    return "".join(parts)


def version_of(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def licence_of(dist: str) -> str:
    """The licence a package declares: its SPDX expression, its short License field, or its classifiers."""
    try:
        meta = metadata.metadata(dist)
    except metadata.PackageNotFoundError:
        return "not installed"
    expression = meta.get("License-Expression")
    if expression:
        return expression
    field = (meta.get("License") or "").strip()
    if field and "\n" not in field and len(field) <= 60:  # some packages paste the whole licence text here
        return field
    classifiers = [c.rsplit("::", 1)[-1].strip() for c in meta.get_all("Classifier") or []
                   if c.startswith("License ::")]
    return ", ".join(classifiers) or "see the package"


def version_rows() -> list[tuple[str, str]]:
    rows = [("AllTalk GUI", __version__),
            ("Python", f"{platform.python_version()} ({platform.python_implementation()})"),
            ("Qt", qVersion()), ("PySide6", pyside_version)]
    rows += [(dist, version_of(dist)) for dist, _ in components() if dist != "PySide6"]
    frozen = " (frozen build)" if getattr(sys, "frozen", False) else ""
    rows.append(("System", f"{platform.system()} {platform.release()} {platform.machine()}{frozen}"))
    return rows


class AboutDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("About AllTalk GUI")
        self.resize(620, 560)
        icon = QLabel()
        icon.setPixmap(app_icon().pixmap(80, 80))
        heading = QLabel(f"<h2 style='margin:0'>AllTalk GUI {__version__}</h2>"
                         f"<p>Fine-tunes a text-to-speech model ({in_words(engine_titles())}) on a few minutes "
                         "of someone's recorded voice, step by step, on your own computer.</p>", wordWrap=True)
        top = QHBoxLayout()
        top.addWidget(icon, 0, Qt.AlignmentFlag.AlignTop)
        top.addSpacing(10)
        top.addWidget(heading, 1)

        self.tabs = QTabWidget()
        self.tabs.addTab(self._versions_tab(), "Versions")
        self.tabs.addTab(self._licences_tab(), "Licences")

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.copy_button = buttons.addButton("Copy versions", QDialogButtonBox.ButtonRole.ActionRole)
        self.copy_button.clicked.connect(self.copy_versions)
        buttons.rejected.connect(self.reject)

        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(buttons)
        run_check(self._probe_gpu, self._show_gpu)

    def _versions_tab(self) -> QWidget:
        tab = QWidget()
        form = QFormLayout(tab)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignRight)
        for name, version in version_rows():
            form.addRow(f"{name}:", QLabel(version, textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse))
        self.cuda_label = QLabel("…")
        form.addRow("PyTorch build:", self.cuda_label)
        self.gpu_label = QLabel("Looking for graphics cards (loading PyTorch)…", wordWrap=True,
                                textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse)
        self.gpu_busy = QProgressBar()
        self.gpu_busy.setRange(0, 0)
        self.gpu_busy.setTextVisible(False)
        self.gpu_busy.setMaximumHeight(8)
        gpu_box = QVBoxLayout()
        gpu_box.addWidget(self.gpu_label)
        gpu_box.addWidget(self.gpu_busy)
        form.addRow("Graphics card:", gpu_box)
        return tab

    def _licences_tab(self) -> QWidget:
        rows = "".join(f"<tr><td>{dist}</td><td>{what}</td><td>{licence_of(dist)}</td></tr>"
                       for dist, what in components())
        text = (
            f"<p><b>AllTalk GUI</b>: {licence_of('alltalk-gui')} (Mozilla Public License 2.0).</p>"
            f"{model_licences()}"
            "<p><b>Whisper models</b> (OpenAI): MIT.</p>"
            "<p>AllTalk GUI runs on these packages, each under its own licence (as the package declares it):</p>"
            f"<table cellspacing='0' cellpadding='3'><tr><th align='left'>Package</th><th align='left'>Used for"
            f"</th><th align='left'>Licence</th></tr>{rows}</table>"
        )
        self.licences = QTextBrowser(openExternalLinks=True)
        self.licences.setHtml(text)
        return self.licences

    # -- graphics card --------------------------------------------------------------------------------------
    @staticmethod
    def _probe_gpu() -> tuple[system_checks.Check, str]:
        return system_checks.check_gpu(), system_checks.torch_build()

    def _show_gpu(self, result: tuple[system_checks.Check, str] | system_checks.Check) -> None:
        self.gpu_busy.hide()
        if isinstance(result, system_checks.Check):  # the probe failed; run_check turned that into a Check
            self.gpu_label.setText(f"Could not be checked: {result.details}")
            self.cuda_label.setText("unknown")
            return
        check, build = result
        self.gpu_label.setText(check.headline)
        self.cuda_label.setText(build)

    def version_text(self) -> str:
        lines = [f"{name}: {version}" for name, version in version_rows()]
        lines.append(f"PyTorch build: {self.cuda_label.text()}")
        lines.append(f"Graphics card: {self.gpu_label.text()}")
        return "\n".join(lines)

    def copy_versions(self) -> None:
        QApplication.clipboard().setText(self.version_text())
