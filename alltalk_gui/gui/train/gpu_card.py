"""One card per training device: a CUDA GPU's name, total and free memory, what other programs hold (named, where
the driver says), bf16 support; or the CPU, stated plainly as "CPU only" when there is no GPU to train on."""

from __future__ import annotations

import html

from PySide6.QtWidgets import QFrame, QLabel, QVBoxLayout, QWidget

from alltalk_gui.core.machine.gpu import other_use
from alltalk_gui.gui.common import status_colours


class GpuCard(QFrame):
    def __init__(self, device, cpu_only: bool = False, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.device = device
        self.setObjectName("checkCard")  # the style sheet's card look
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setMinimumWidth(280)
        self.title = QLabel()
        self.details = QLabel()
        self.details.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.addWidget(self.title)
        layout.addWidget(self.details)
        d = device
        if d.kind == "cuda":
            others = other_use(d)
            self.title.setText(f"<b>GPU {d.index}: {d.name}</b>")
            self.details.setText(
                f"{d.total_gib:.1f} GiB total, <b>{d.free_gib:.1f} GiB free</b><br>"
                f"{html.escape(others[:1].upper() + others[1:]) if others else 'Nothing else is using it'}<br>"
                f"bf16: {'yes' if d.bf16 else 'no (fp16 or fp32)'} · compute {d.capability}"
                + (f" · driver {html.escape(d.driver)}" if d.driver else ""))
        else:
            self.title.setText(f"<b>{'CPU only' if cpu_only else 'CPU'}</b>: {d.name}")
            slow = "No CUDA GPU found: training runs on the processor, many times slower.<br>" if cpu_only else ""
            self.details.setText(f"{slow}{d.cores} cores · RAM {d.free_gib:.1f} of {d.total_gib:.1f} GiB free")
        if getattr(d, "warning", ""):  # e.g. a PyTorch without kernels for this card
            warning = status_colours.span(status_colours.PROBLEM, html.escape(d.warning))
            self.details.setText(self.details.text() + "<br>" + warning)
        tip = html.unescape(self.details.text().replace("<br>", "\n").replace("<b>", "").replace("</b>", ""))
        for p in getattr(d, "processes", ()):  # each other program on the card, with its pid and memory
            used = f"{p.used_gib:.1f} GiB" if p.used_gib is not None else "memory not reported"
            tip += f"\n  {p.label_with_pid}: {used}"
        self.setToolTip(tip)
