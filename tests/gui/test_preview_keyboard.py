"""The Preview page as a keyboard user meets it: Tab walks the page top to bottom and leaves the judge's table
(it walked every cell and each row's play buttons, so Generate, Compare with and Export were out of reach), the
arrows choose a judged step and Enter plays it; each take's play button is one stop, its waveform none. And as a
dark-palette user sees it: the page's coloured text (the judge's warning, errors, the export's verdicts) takes the
dark look's colours, never the light look's."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import soundfile as sf
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractButton, QApplication, QLabel, QScrollArea, QWidget

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.voice.judge.judge import Verdict
from alltalk_gui.core.voice.judge.length import LengthCheck
from alltalk_gui.core.voice.judge.scores import SentenceScore, StepScores, step_folder, write_scores
from alltalk_gui.core.voice.preview import GenerationSettings, PreviewResult
from alltalk_gui.gui.common import status_colours
from alltalk_gui.gui.preview.preview_page import PreviewPage
from tests.trained_voice import trained_voice


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """A copy of the trained voice's project whose run the judge scored (the base model and both checkpoints,
    two sentences each, over-training warned of), with one saved take in previews/."""
    voice = trained_voice(tmp_path_factory)
    root = tmp_path_factory.mktemp("judged") / "project"
    shutil.copytree(voice.project, root, ignore=shutil.ignore_patterns("previews"))
    run = next(p for p in (root / "runs").iterdir() if p.is_dir())
    for step, likeness, wer in ((0, 0.5, 0.1), (2, 0.8, 0.1), (4, 0.7, 0.9)):
        sentences = []
        folder = step_folder(run, step)
        folder.mkdir(parents=True)
        for i in range(2):
            sf.write(str(folder / f"sentence_{i + 1}.wav"), np.zeros(2400, np.float32), 24000)
            sentences.append(SentenceScore(f"Sentence {i + 1}.", f"sentence_{i + 1}.wav", _verdict(likeness, wer)))
        write_scores(run, StepScores.of(step, None if step == 0 else f"checkpoint_{step}", sentences, 1.0))


    _saved_take(root / "previews")
    return root


def _verdict(likeness: float, wer: float) -> Verdict:
    length = LengthCheck(duration_s=0.1, spoken_s=0.1, tail_s=0.0, tail_is_sound=False, end_level_db=-40.0)
    return Verdict(likeness=likeness, mos=3.5, error_rate=wer, measure="wer", transcript="sentence", length=length)


def _saved_take(folder) -> None:
    """One take of the base model in ``folder``, as the page saves it."""
    folder.mkdir(parents=True, exist_ok=True)
    wav = folder / "20261127-120000_hello_base.wav"
    sf.write(str(wav), np.sin(np.linspace(0, 300, 12000)).astype(np.float32) * 0.3, 24000)
    result = PreviewResult(wav=wav, info=wav.with_suffix(".json"), label="base", text="Hello.", language="en",
                           checkpoint=None, checkpoint_label="base model", references=[],
                           settings=GenerationSettings(), sample_rate=24000, duration_s=0.5, generation_s=1.0)
    result.info.write_text(json.dumps(result.to_dict()), encoding="utf-8")


@pytest.fixture
def page(qtbot, judged):
    window = QWidget()  # a top-level window holding the page: focus moves only inside an active window
    qtbot.addWidget(window)
    page = PreviewPage(window)
    window.resize(1024, 700)
    page.resize(1024, 700)
    page.set_project(VoiceProject.open(judged))
    window.show()
    qtbot.waitExposed(window)
    window.activateWindow()
    yield page
    page.player.stop()
    page.judge_table.player.stop()


def tab_chain(page: PreviewPage, start: QWidget, stops: int = 80) -> list[QWidget]:
    """The widgets Tab gives the focus to, from ``start``, until it comes back round (at most ``stops``)."""
    start.setFocus(Qt.FocusReason.TabFocusReason)
    chain = [QApplication.focusWidget()]
    for _ in range(stops):
        QApplication.sendEvent(QApplication.focusWidget(), _tab())
        QApplication.processEvents()
        widget = QApplication.focusWidget()
        if widget is chain[0] or widget is None:
            break
        chain.append(widget)
    return chain


def _name(widget: QWidget) -> str:
    text = widget.text() if hasattr(widget, "text") and callable(widget.text) else ""
    return f"{type(widget).__name__}({widget.objectName() or text or widget.toolTip()[:30]})"


def _tab():
    from PySide6.QtGui import QKeyEvent

    return QKeyEvent(QKeyEvent.Type.KeyPress, Qt.Key.Key_Tab, Qt.KeyboardModifier.NoModifier)


def test_tab_leaves_the_judge_table_and_reaches_generate_compare_and_export(page):
    table = page.judge_table.table
    assert not table.isHidden() and table.rowCount() == 3
    page.export_panel.folder.setText(str(page.project.root.parent / "exports"))  # Export can be pressed
    chain = tab_chain(page, page.checkpoint_box)
    names = [_name(w) for w in chain]
    assert chain.count(table) == 1, names  # one stop, not one per cell
    assert not any(isinstance(w, QAbstractButton) and table.isAncestorOf(w) for w in chain), names  # its ▶ buttons
    for widget in (page.generate_button, page.compare_button, page.compare_box, page.export_panel.button):
        assert widget in chain, (widget, names)
    # Top to bottom: the inputs, the table, the generation settings, the buttons, the takes, the export.
    order = [chain.index(w) for w in (page.checkpoint_box, table, page.generation.toggle, page.generate_button,
                                      page.compare_button, page.rows[0].takes[0].play_button,
                                      page.export_panel.button)]
    assert order == sorted(order), names
    take = page.rows[0].takes[0]
    assert take.play_button in chain and take.plot not in chain  # the take's play button is a stop, its plot none
    assert not any(isinstance(w, QScrollArea) for w in chain), names  # no invisible stops: the lists follow the focus


def test_arrows_choose_a_step_and_enter_or_a_number_plays_its_sentence(page, qtbot):
    table, judge = page.judge_table.table, page.judge_table
    table.setFocus(Qt.FocusReason.TabFocusReason)
    table.setCurrentCell(0, 0)
    qtbot.keyClick(table, Qt.Key.Key_Down)
    assert table.currentRow() == 1 and table.selectionModel().isRowSelected(1)
    qtbot.keyClick(table, Qt.Key.Key_Return)
    assert judge.player.current == str(judge.row_wavs[1][0])
    qtbot.keyClick(table, Qt.Key.Key_2)  # the second judged sentence of that step
    assert judge.player.current == str(judge.row_wavs[1][1])
    qtbot.keyClick(table, Qt.Key.Key_Space)
    assert judge.player.current == str(judge.row_wavs[1][0])
    qtbot.keyClick(table, Qt.Key.Key_Space)  # again: stops
    assert judge.player.current == ""


@pytest.fixture
def dark(qapp):
    """The app in the dark look (gui/style.build_palette(dark=True)) for one test."""
    from alltalk_gui.gui.style import build_palette

    before = qapp.palette()
    qapp.setPalette(build_palette(dark=True))
    yield
    qapp.setPalette(before)


LIGHT_ONLY = ("#c62828", "#b26a00", "#b36b00", "#2e7d32", "#1565c0", "#757575", "#ef6c00", "palette(mid)")


def test_in_the_dark_look_the_page_writes_the_dark_looks_colours(dark, qtbot, judged):
    page = PreviewPage()
    qtbot.addWidget(page)
    page.set_project(VoiceProject.open(judged))
    dark_colours = status_colours.DARK
    texts = {"judge": page.judge_table.title.text()}
    assert "Over-training" in texts["judge"] and dark_colours[status_colours.WARNING] in texts["judge"]
    page.export_panel.show_error("The folder cannot be written.")
    texts["export error"] = page.export_panel.result.text()
    assert dark_colours[status_colours.PROBLEM] in texts["export error"]
    page._on_failed("Traceback (most recent call last):\n"  # an error the page expects: said under the buttons
                    "alltalk_gui.core.voice.preview.PreviewError: the vocabulary does not know 'þ'\n")
    texts["failure"] = page.message.text()
    assert dark_colours[status_colours.PROBLEM] in texts["failure"]
    row = page.rows[0]
    texts["sentence"] = row.findChild(QLabel).text()
    assert dark_colours[status_colours.QUIET] in texts["sentence"]
    texts["placeholder"] = page.placeholder.styleSheet()
    for where, text in texts.items():
        assert not any(light in text for light in LIGHT_ONLY), (where, text)
    take = row.takes[0]
    assert take.curve.opts["pen"].color().name() == dark_colours[status_colours.QUIET]  # the base take's waveform
    # Back to the light look: the waveform follows at once, text written from then on is the light look's.
    from alltalk_gui.gui.style import build_palette

    QApplication.instance().setPalette(build_palette(dark=False))
    QApplication.processEvents()
    assert take.curve.opts["pen"].color().name() == status_colours.LIGHT[status_colours.QUIET]
    page.export_panel.show_error("x")
    assert status_colours.LIGHT[status_colours.PROBLEM] in page.export_panel.result.text()


def test_at_1024x700_with_the_judges_table_a_whole_take_is_in_view(page, qtbot):
    """The takes' list got what was left over (about 90 px: no waveform in sight); a row fits in it now."""
    row = page.rows[0]
    qtbot.waitUntil(lambda: page.takes_list.viewport().height() > 0)
    assert page.takes_list.viewport().height() >= row.sizeHint().height()
