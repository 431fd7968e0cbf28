"""Issue 18 item 10 in the app: a drop of more than a few hundred files is imported only after the user agrees."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QMessageBox

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui.sources import bulk_drop
from alltalk_gui.gui.sources.import_page import ImportPage


@pytest.fixture
def page(qtbot, tmp_path):
    page = ImportPage()
    qtbot.addWidget(page)
    page.set_project(VoiceProject.create(tmp_path / "voice"))
    return page


@pytest.fixture
def many(tmp_path, monkeypatch):
    monkeypatch.setattr(bulk_drop, "CONFIRM_ABOVE", 5)  # the rule, not the number: 6 empty "recordings"
    folder = tmp_path / "drop"
    folder.mkdir()
    for i in range(6):
        (folder / f"{i}.wav").write_bytes(b"")
    return folder


def test_a_large_drop_asks_first_and_no_imports_nothing(page, many, monkeypatch):
    asked = []
    monkeypatch.setattr(QMessageBox, "question",
                        lambda *a, **k: asked.append(a[2]) or QMessageBox.StandardButton.No)
    page.import_paths([str(many)])
    assert "This would import 6 audio files" in asked[0]
    assert not page.is_importing() and page.worker is None


def test_a_large_drop_is_imported_when_the_user_agrees(page, many, monkeypatch, qtbot):
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    page.import_paths([str(many)])
    assert page.worker is not None
    qtbot.waitUntil(lambda: not page.is_importing(), timeout=30000)


def test_a_small_drop_does_not_ask(page, tmp_path, monkeypatch, qtbot):
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: pytest.fail("asked for a small drop"))
    (tmp_path / "one.wav").write_bytes(b"")
    page.import_paths([str(tmp_path / "one.wav")])
    qtbot.waitUntil(lambda: not page.is_importing(), timeout=30000)
