"""Asking before a drop of many files is imported: a stray drop of a whole music or home folder would otherwise
start copying and decoding thousands of files (a voice needs a handful of recordings)."""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox, QWidget

from alltalk_gui.core.project.importer import collect_files

CONFIRM_ABOVE = 300
"""More audio files than this in one drop or choice are imported only after the user says so."""


def confirm_bulk_import(parent: QWidget, paths: list[str]) -> bool:
    """True to go ahead: at most :data:`CONFIRM_ABOVE` audio files, or the user confirmed the larger number."""
    files, _rejected, _skipped = collect_files(paths)
    if len(files) <= CONFIRM_ABOVE:
        return True
    answer = QMessageBox.question(
        parent, "Import many files?",
        f"This would import {len(files):,} audio files. A voice needs a few minutes of speech, usually a handful "
        "of recordings; each file is copied into the project and decoded, which takes a while.\n\n"
        f"Import all {len(files):,}?",
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.No)
    return answer == QMessageBox.StandardButton.Yes
