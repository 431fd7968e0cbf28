"""The Qt-free core: projects, audio, transcription, datasets and training. Used by the GUI, the CLI and the
training child process alike; it never imports PySide6, pyqtgraph or the GUI (an import-linter contract)."""
