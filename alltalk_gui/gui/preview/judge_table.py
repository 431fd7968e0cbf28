"""The checkpoint judge's table on the Preview page: one row per judged step of the run (the base model first),
with its likeness to the speaker, word (or character) error rate, predicted MOS and length problems, and a play
button per judged sentence, so the scores can be checked by ear. The judge's choice is marked and its reason shown
above the table.

Reads the run's ``judge/`` folder (:mod:`alltalk_gui.core.voice.judge.scores`): no model loads here.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (QAbstractItemView, QHBoxLayout, QHeaderView, QLabel, QPushButton, QTableWidget,
                               QTableWidgetItem, QVBoxLayout, QWidget)

from alltalk_gui.gui.common.audio_player import AudioPlayer
from alltalk_gui.gui.common.status_colours import WARNING, span

COLUMNS = ("Step", "Likeness", "WER", "MOS", "Length", "Judged sentences")


class JudgeTable(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.player = AudioPlayer(self)
        self.player.playing_changed.connect(self._playing)
        self.title = QLabel()
        self.title.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        # Keyboard: Tab leaves the table (it walked every cell and each row's play buttons, so Generate, Compare
        # and Export were out of reach); the arrows move between steps, the row shown chosen; Enter or Space plays
        # the current step's first judged sentence, 1-9 its sentence of that number. The rows' play buttons are for
        # the mouse only (as the import table's).
        self.table.setTabKeyNavigation(False)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        keys = [(key, 0) for key in (Qt.Key.Key_Space, Qt.Key.Key_Return, Qt.Key.Key_Enter)]
        keys += [(Qt.Key.Key_1 + i, i) for i in range(9)]
        self.table.setToolTip("↑ ↓ choose a step; Enter or Space plays its first judged sentence, 1 to 9 the "
                              "sentence of that number")
        for key, sentence in keys:
            QShortcut(QKeySequence(key), self.table, lambda s=sentence: self.play_current(s),
                      context=Qt.ShortcutContext.WidgetShortcut)
        header = self.table.horizontalHeader()
        for i in range(len(COLUMNS) - 1):
            header.setSectionResizeMode(i, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(len(COLUMNS) - 1, QHeaderView.ResizeMode.Stretch)
        self.buttons: dict[str, QPushButton] = {}  # wav path -> its play button
        self.row_wavs: list[list[Path]] = []  # each row's judged sentences, in order
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.table)

    def show_run(self, run_dir: Path | None) -> None:
        """Show the judged steps of ``run_dir`` (None: nothing to show)."""
        from alltalk_gui.core.training.checkpoints import run_checkpoints
        from alltalk_gui.core.voice.judge.available import unavailable_reason
        from alltalk_gui.core.voice.judge.best import choose, overtraining
        from alltalk_gui.core.voice.judge.scores import read_scores

        self.player.stop()
        self.table.setRowCount(0)
        self.buttons = {}
        self.row_wavs = []
        why = unavailable_reason()
        scores = read_scores(run_dir) if run_dir is not None else []
        if why and not scores:
            self.title.setText(f"<b>Checkpoint judge</b>: hidden. {why}")
            self.table.hide()
            return
        if not scores:
            self.title.setText("<b>Checkpoint judge</b>: this run's checkpoints were not scored (the judge was off). "
                               "Score them with: <code>alltalk-gui judge PROJECT</code>")
            self.table.hide()
            return
        picked = choose(scores, [c.step for c in run_checkpoints(run_dir)])
        best = picked[0].step if picked else None
        warning = overtraining(scores)
        text = ("<b>Checkpoint judge</b>: the scores of each judged step; ★ marks its choice (see Best above)"
                if picked else "<b>Checkpoint judge</b>: only the base model was scored so far")
        if warning:
            text += f"<br>{span(WARNING, warning, self)}"
        self.title.setText(text)
        self.table.show()
        measure = next((s.measure for s in scores if s.error_rate is not None), "wer")
        self.table.setHorizontalHeaderItem(2, QTableWidgetItem(measure.upper()))
        for row, step in enumerate(scores):
            self.table.insertRow(row)
            name = "base model" if step.step == 0 else f"step {step.step}" + ("  ★ best" if step.step == best else "")
            cells = (name, _number(step.likeness), _number(step.error_rate), _number(step.mos, 1),
                     f"{step.length_problems} of {len(step.sentences)}" if step.length_problems else "ok")
            for column, value in enumerate(cells):
                item = QTableWidgetItem(value)
                if step.step == best:
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
                self.table.setItem(row, column, item)
            self.table.setCellWidget(row, len(COLUMNS) - 1, self._players(step))
            self.row_wavs.append([step.wav(i) for i in range(len(step.sentences))])
        self.table.resizeRowsToContents()
        rows = sum(self.table.rowHeight(r) for r in range(self.table.rowCount()))
        self.table.setFixedHeight(min(170, rows + self.table.horizontalHeader().height() + 4))

    def _players(self, step) -> QWidget:
        box = QWidget()
        row = QHBoxLayout(box)
        row.setContentsMargins(2, 0, 2, 0)
        for i, sentence in enumerate(step.sentences):
            path = step.wav(i)
            button = QPushButton(f"▶ {i + 1}")
            button.setToolTip(f"“{sentence.text}” — heard: “{sentence.verdict.transcript or ''}”; "
                              + "; ".join(f"{k}: {v}" for k, v in sentence.verdict.readings().items()))
            button.setEnabled(path.is_file())
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            button.clicked.connect(lambda _=False, p=path: self.player.toggle(p))
            self.buttons[str(path)] = button
            row.addWidget(button)
        row.addStretch(1)
        return box

    def play_current(self, sentence: int = 0) -> None:
        """Play (or stop) judged sentence ``sentence`` of the current row, when there is one to play."""
        row = self.table.currentRow()
        wavs = self.row_wavs[row] if 0 <= row < len(self.row_wavs) else []
        if sentence < len(wavs) and wavs[sentence].is_file():
            self.player.toggle(wavs[sentence])

    def _playing(self, path: str) -> None:
        for wav, button in self.buttons.items():
            label = button.text().split(" ", 1)[1]
            button.setText(f"■ {label}" if wav == path else f"▶ {label}")


def _number(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"
