"""Table adapter over ``VoiceProject.sources``: one row per imported recording."""

from __future__ import annotations

from enum import IntEnum

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt

from alltalk_gui.core.project.duration_guidance import format_duration
from alltalk_gui.core.project.folder import Source, VoiceProject
from alltalk_gui.gui.common.column_table import ColumnTableModel
from alltalk_gui.gui.sources.waveform_delegate import ENVELOPE_ROLE
from alltalk_gui.gui.common import status_colours

VERDICT_LABEL = {"ok": "Good", "warning": "Check", "unusable": "Unusable"}
VERDICT_KIND = {"ok": status_colours.GOOD, "warning": status_colours.WARNING, "unusable": status_colours.PROBLEM}


class Column(IntEnum):
    PLAY = 0
    WAVEFORM = 1
    NAME = 2
    LENGTH = 3
    FORMAT = 4
    PEAK = 5
    CLIPPED = 6
    SILENCE = 7
    SNR = 8
    VERDICT = 9


HEADERS = {
    Column.PLAY: "", Column.WAVEFORM: "Waveform", Column.NAME: "File", Column.LENGTH: "Length",
    Column.FORMAT: "Format", Column.PEAK: "Peak", Column.CLIPPED: "Clipped", Column.SILENCE: "Silence",
    Column.SNR: "SNR", Column.VERDICT: "Verdict",
}

HEADER_TIPS = {
    Column.PEAK: "Highest sample level in dBFS (0 dBFS is full scale).",
    Column.CLIPPED: "Share of samples at full scale: distortion the model would learn.",
    Column.SILENCE: "Share of the recording that is silence.",
    Column.SNR: "Speech level above the background noise, in dB. Above 30 dB is clean; below 15 dB is noisy.",
    Column.VERDICT: "Whether the recording is good training material, and why not.",
}


class SourcesModel(ColumnTableModel):
    COLUMNS, HEADERS, HEADER_TIPS = Column, HEADERS, HEADER_TIPS

    def __init__(self, project: VoiceProject | None = None) -> None:
        super().__init__()
        self._project = project

    def set_project(self, project: VoiceProject | None) -> None:
        self.beginResetModel()
        self._project = project
        self.endResetModel()

    def refresh(self) -> None:
        self.beginResetModel()
        self.endResetModel()

    def source(self, row: int) -> Source:
        assert self._project is not None
        return self._project.sources[row]

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() or self._project is None else len(self._project.sources)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        src = self.source(index.row())
        a = src.analysis
        col = Column(index.column())
        if role == ENVELOPE_ROLE and col == Column.WAVEFORM:
            return a.get("envelope", [])
        if role == Qt.ItemDataRole.DisplayRole:
            return _display(col, src)
        if role == Qt.ItemDataRole.ToolTipRole:
            if col == Column.VERDICT or col == Column.NAME:
                lines = [src.name, f"Imported from {src.original_path}" if src.original_path else ""]
                lines += src.reasons or ["No problems found."]
                return "\n".join(line for line in lines if line)
            if col == Column.FORMAT:
                return f"{a.get('container', '')} / {a.get('codec', '')}"
        if role == Qt.ItemDataRole.ForegroundRole and col == Column.VERDICT:
            return status_colours.qcolour(VERDICT_KIND[src.verdict]) if src.verdict in VERDICT_KIND else None
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (Column.LENGTH, Column.PEAK, Column.CLIPPED,
                                                                  Column.SILENCE, Column.SNR):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


def _measure(value: float | None, template: str) -> str:
    """A measurement for display, or an en dash where the analysis could not make one (no noise floor...)."""
    return "–" if value is None else template.format(value)


def _format_name(analysis: dict) -> str:
    """'WAV', 'FLAC', 'MP4 (AAC)': the container, plus the codec where it says something the container doesn't."""
    container = str(analysis.get("container") or "").split(",")[0].upper()
    codec = str(analysis.get("codec") or "")
    if not container:
        return codec.upper()
    if not codec or codec.lower().startswith("pcm") or codec.lower() == container.lower():
        return container
    return f"{container} ({codec.upper()})"


def _display(col: Column, src: Source) -> str | None:
    a = src.analysis
    if col == Column.NAME:
        return src.name
    if col == Column.LENGTH:
        return format_duration(src.duration_s)
    if col == Column.FORMAT:
        bits = f" {a['bit_depth']}-bit" if a.get("bit_depth") else ""
        channels = {1: "mono", 2: "stereo"}.get(a.get("channels", 0), f"{a.get('channels')} ch")
        return f"{_format_name(a)} {a.get('sample_rate', 0) / 1000:g} kHz {channels}{bits}"
    if col == Column.PEAK:
        return _measure(a.get("peak_dbfs"), "{:.1f} dB")
    if col == Column.CLIPPED:
        return _measure(a.get("clipped_fraction"), "{:.2%}")
    if col == Column.SILENCE:
        return _measure(a.get("silence_fraction"), "{:.0%}")
    if col == Column.SNR:
        snr = a.get("snr_db")
        # Above ~60 dB the "noise" is the recording's digital floor, not a room: the exact figure means nothing.
        return "> 60 dB" if snr is not None and snr > 60 else _measure(snr, "{:.0f} dB")
    if col == Column.VERDICT:
        label = VERDICT_LABEL.get(src.verdict, src.verdict)
        return f"{label}: {'; '.join(src.reasons)}" if src.reasons else label
    return None
