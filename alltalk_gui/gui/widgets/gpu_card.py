"""One card per training device: a CUDA GPU's name, total and free memory, what other programs hold, bf16
support; or the CPU, stated plainly as "CPU only" when there is no GPU to train on."""

from __future__ import annotations

from PySide6.QtWidgets import QFrame, QLabel, QVBoxLayout, QWidget


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
            used = max(d.total_gib - d.free_gib, 0.0)
            self.title.setText(f"<b>GPU {d.index}: {d.name}</b>")
            self.details.setText(
                f"{d.total_gib:.1f} GiB total, <b>{d.free_gib:.1f} GiB free</b><br>"
                f"Other programs use {used:.1f} GiB<br>"
                f"bf16: {'yes' if d.bf16 else 'no (fp16 or fp32)'} · compute {d.capability}")
        else:
            self.title.setText(f"<b>{'CPU only' if cpu_only else 'CPU'}</b>: {d.name}")
            slow = "No CUDA GPU found: training runs on the processor, many times slower.<br>" if cpu_only else ""
            self.details.setText(f"{slow}{d.cores} cores · RAM {d.free_gib:.1f} of {d.total_gib:.1f} GiB free")
        self.setToolTip(self.details.text().replace("<br>", "\n").replace("<b>", "").replace("</b>", ""))
