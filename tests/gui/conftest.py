"""GUI fixtures: every test gets its own QSettings file, so recent projects and geometry never leak."""

import pytest
from alltalk_gui.gui import settings
from alltalk_gui.gui.settings import use_settings_folder


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path, qapp):
    from alltalk_gui.gui.app import create_application

    create_application()
    use_settings_folder(tmp_path / "qsettings")
    settings.settings().clear()
    yield
