"""Render resources/icons/alltalk-gui.svg to the PNG sizes desktops and installers ask for.

Run after editing the SVG: ``python packaging/render_icons.py``. Uses Qt's SVG renderer (PySide6 is already a
dependency), offscreen, so it needs no display and no other image tool.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ICONS = Path(__file__).resolve().parent.parent / "resources" / "icons"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def render(svg: Path, size: int, target: Path) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"{svg} is not a valid SVG")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    if not image.save(str(target)):
        raise SystemExit(f"cannot write {target}")


def main() -> int:
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])  # QImage text/paint needs an app
    svg = ICONS / "alltalk-gui.svg"
    for size in SIZES:
        render(svg, size, ICONS / f"alltalk-gui-{size}.png")
    print(f"rendered {len(SIZES)} sizes into {ICONS}")
    del app
    return 0


if __name__ == "__main__":
    sys.exit(main())
