"""GUI fixtures: every test gets its own QSettings file, so recent projects and geometry never leak."""

import pytest
from PySide6.QtCore import QSettings


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path, qapp):
    from alltalk_gui.gui.app import create_application

    create_application()
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "qsettings"))
    QSettings().clear()
    yield
