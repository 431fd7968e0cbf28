"""The dark look: status text (problems, warnings, good news) and the play icons readable on the dark palette.
The pages wrote the light look's colours into their text, 2.6:1 to 3.5:1 against the dark window (the walk of
2026-11-27); Fusion's standard play icons were dark grey on dark grey."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui import settings, style
from alltalk_gui.gui.common import status_colours
from alltalk_gui.gui.sources.import_page import ImportPage
from alltalk_gui.gui.sources.sources_model import Column
from alltalk_gui.gui.start.new_project_dialog import NewProjectDialog


def _luminance(colour: QColor) -> float:
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(colour.redF()) + 0.7152 * linear(colour.greenF()) + 0.0722 * linear(colour.blueF())


def contrast(a: QColor, b: QColor) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.fixture
def dark(qapp):
    app = QApplication.instance()
    before = app.palette()
    app.setPalette(style.build_palette(True))
    yield app.palette()
    app.setPalette(before)


def test_every_status_colour_reads_on_the_dark_palette(dark):
    assert status_colours.is_dark()
    for role in (QPalette.ColorRole.Window, QPalette.ColorRole.Base, QPalette.ColorRole.AlternateBase):
        for kind in status_colours.DARK:
            ratio = contrast(status_colours.qcolour(kind), dark.color(role))
            assert ratio >= 4.5, f"{kind} on {role.name}: {ratio:.2f}:1"


def test_the_light_look_keeps_its_colours(qapp):
    app = QApplication.instance()
    before = app.palette()
    light = style.build_palette(False)
    app.setPalette(light)
    assert not status_colours.is_dark() and status_colours.colour(status_colours.PROBLEM) == "#c62828"
    for kind in (status_colours.GOOD, status_colours.PROBLEM, status_colours.NOTE, status_colours.QUIET):
        assert contrast(status_colours.qcolour(kind), light.color(QPalette.ColorRole.Window)) >= 4.5
    app.setPalette(before)


def test_a_problem_in_the_new_project_dialog_is_readable_in_the_dark(dark, qtbot, tmp_path):
    settings.set_last_folder("projects", tmp_path)
    VoiceProject.create(tmp_path / "Ada", name="Ada")
    dialog = NewProjectDialog()
    qtbot.addWidget(dialog)
    dialog.name_edit.setText("Ada")
    assert "already holds a project" in dialog.target_label.text()
    assert "#c62828" not in dialog.target_label.text()
    assert status_colours.DARK[status_colours.PROBLEM] in dialog.target_label.text()


def test_the_import_pages_play_icons_are_light_on_the_dark_palette(dark, qtbot, tmp_path):
    wav = tmp_path / "tone.wav"
    t = np.arange(48_000) / 16_000
    sf.write(wav, (0.3 * np.sin(2 * np.pi * 220 * t)).astype("float32"), 16_000)
    page = ImportPage()
    qtbot.addWidget(page)
    page.set_project(VoiceProject.create(tmp_path / "voice"))
    page.import_paths([str(wav)])
    qtbot.waitUntil(lambda: not page.is_importing(), timeout=60_000)
    button = page.table.indexWidget(page.model.index(0, Column.PLAY))
    image = button.icon().pixmap(32, 32).toImage()
    drawn = [image.pixelColor(x, y) for x in range(32) for y in range(32) if image.pixelColor(x, y).alpha() > 200]
    assert drawn, "the icon draws something"
    base = dark.color(QPalette.ColorRole.Base)
    assert min(contrast(c, base) for c in drawn) >= 4.5


def indicators_drawn(qtbot, checked: bool) -> dict[str, list[QColor]]:
    """A check box and a radio button, shown with the app's current look: each one's indicator's pixels as drawn."""
    from PySide6.QtWidgets import QCheckBox, QRadioButton, QStyle, QStyleOptionButton, QVBoxLayout, QWidget

    holder = QWidget()
    column = QVBoxLayout(holder)
    boxes = [QCheckBox("Advanced settings"), QRadioButton("Low VRAM")]
    for box in boxes:
        box.setChecked(checked)
        column.addWidget(box)
    qtbot.addWidget(holder)
    holder.show()
    drawn = {}
    for box, element in zip(boxes, (QStyle.SubElement.SE_CheckBoxIndicator, QStyle.SubElement.SE_RadioButtonIndicator)):
        option = QStyleOptionButton()
        box.initStyleOption(option)
        rect = box.style().subElementRect(element, option, box)
        image = box.grab().toImage()
        drawn[type(box).__name__] = [image.pixelColor(x, y) for x in range(rect.left(), rect.right() + 1)
                                     for y in range(rect.top(), rect.bottom() + 1)]
    return drawn


def test_unchecked_boxes_and_radio_buttons_show_on_the_dark_palette(dark, qtbot):
    """Fusion drew them in the base colour with an outline darker than the window: 1.2:1 on the dark palette."""
    app = QApplication.instance()
    style.apply_style(app, dark=True)
    try:
        window = app.palette().color(QPalette.ColorRole.Window)
        for kind, indicator in indicators_drawn(qtbot, checked=False).items():
            assert max(contrast(c, window) for c in indicator) >= 3.0, kind
    finally:
        app.setStyleSheet("")


@pytest.mark.parametrize("dark_look", [True, False])
def test_checked_boxes_and_radio_buttons_stand_out(qtbot, dark_look):
    """A checked box was Fusion's thin grey mark in a box whose edge vanished on the dark window: fainter than an
    unchecked one (the walk of 2026-11-27). The style sheet fills it with the accent and marks it in white: the
    colours it names, as drawn, are at least 3:1 against each other and against the window, on either look."""
    import re

    from alltalk_gui.core.resources import resource_path

    sheet = style.style_sheet()
    rule = re.search(r"QCheckBox::indicator:checked[^{]*\{([^}]*)\}", sheet).group(1)
    assert "background: palette(highlight)" in rule and "check.svg" in rule
    mark = QColor(re.search(r'stroke="(#[0-9a-fA-F]{6})"', resource_path("style", "check.svg").read_text()).group(1))
    app = QApplication.instance()
    before = app.palette()
    style.apply_style(app, dark=dark_look)
    try:
        palette = app.palette()
        fill, window = palette.color(QPalette.ColorRole.Highlight), palette.color(QPalette.ColorRole.Window)
        assert contrast(mark, fill) >= 3.0 and contrast(fill, window) >= 3.0, (mark.name(), fill.name())
        for kind, indicator in indicators_drawn(qtbot, checked=True).items():
            drawn = {c.rgb() for c in indicator}
            assert fill.rgb() in drawn and mark.rgb() in drawn, kind  # the accent and the white mark
    finally:
        app.setStyleSheet("")
        app.setPalette(before)


def test_banners_take_the_dark_look(dark, qtbot):
    """A light pink error box glared out of the dark Train page; the dark look has its own, as readable."""
    from alltalk_gui.gui.common.banner import BANNER_STYLES, Banner

    banner = Banner("error", "Choose the XTTS v2 base model first.")
    qtbot.addWidget(banner)
    assert BANNER_STYLES["error"] not in banner.styleSheet()
    image = banner.grab().toImage()
    background = image.pixelColor(image.width() // 2, 2)
    assert _luminance(background) < 0.1  # a dark box on the dark page
