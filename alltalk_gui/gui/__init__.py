"""The PySide6 desktop app. Never imports torch at module level, so the window opens fast."""
