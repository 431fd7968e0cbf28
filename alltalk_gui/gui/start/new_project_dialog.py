"""Ask for a new project's name, language and folder."""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtWidgets import (
    QComboBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton,
    QWidget,
)

from alltalk_gui.core.engine_api import languages
from alltalk_gui.core.portability.portable_names import portable_name
from alltalk_gui.core.project.long_paths import project_path_problem
from alltalk_gui.gui import settings
from alltalk_gui.gui.common import status_colours

# The languages XTTS v2 was trained on (its config's "languages"), from the app's one list.
LANGUAGES = [(lang.code, lang.name) for lang in languages.LANGUAGES]


class NewProjectDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("New voice project")
        self.name_edit = QLineEdit(placeholderText="e.g. Grandma's voice")
        self.language_combo = QComboBox()
        for code, label in LANGUAGES:
            self.language_combo.addItem(f"{label} ({code})", code)
        self.parent_edit = QLineEdit(settings.last_folder("projects"))
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        folder_row = QHBoxLayout()
        folder_row.addWidget(self.parent_edit, 1)
        folder_row.addWidget(browse)
        self.target_label = QLabel()
        self.target_label.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Create")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)

        form = QFormLayout(self)
        form.addRow("Name:", self.name_edit)
        form.addRow("Language:", self.language_combo)
        form.addRow("Save in:", folder_row)
        form.addRow("", self.target_label)
        form.addRow(self.buttons)
        self.name_edit.textChanged.connect(self._update)
        self.parent_edit.textChanged.connect(self._update)
        self.resize(520, self.sizeHint().height())
        self._update()

    @property
    def name(self) -> str:
        return self.name_edit.text().strip()

    @property
    def language(self) -> str:
        return self.language_combo.currentData()

    @property
    def folder(self) -> Path:
        # The name as typed where every system takes it ("Ada's voice" stays so: it was "Ada_s voice"); only what
        # Windows refuses in a folder name becomes "_", no dot or space may end it, and "CON" becomes "CON_".
        return Path(self.parent_edit.text()).expanduser() / portable_name(self.name, fallback="voice")

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Where to keep the project", self.parent_edit.text())
        if folder:
            self.parent_edit.setText(folder)

    def _update(self) -> None:
        ok = bool(self.name) and Path(self.parent_edit.text()).expanduser().is_dir()
        exists = ok and (self.folder / "project.json").exists()
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(ok and not exists)
        if not self.name:
            self.target_label.setText("")
        elif exists:
            self.target_label.setText(status_colours.span(status_colours.PROBLEM,
                                                          f"{self.folder} already holds a project."))
        elif not ok:
            self.target_label.setText(status_colours.span(status_colours.PROBLEM,
                                                          "Choose an existing folder to save in."))
        else:
            too_deep = project_path_problem(self.folder)  # Windows without long paths only
            if too_deep:
                self.target_label.setText(f"The project will be created in {html.escape(str(self.folder))}<br>"
                                          f"<span style='color:#e65100'>{html.escape(too_deep)}</span>")
                # The form layout does not grow the dialog for the wrapped warning's lines: it would be cut off.
                wanted = self.layout().heightForWidth(self.width())
                if wanted > self.height():
                    self.resize(self.width(), wanted)
            else:
                self.target_label.setText(f"The project will be created in {self.folder}")
