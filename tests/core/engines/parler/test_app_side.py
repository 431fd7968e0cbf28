"""The half of the Parler engine that runs in the app itself imports none of Parler's code (it cannot: the app's
transformers is 5.x) and no torch at all, so the registry, the set-up pages and the CLI stay quick; the other half
says where it must run when called in the wrong interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

APP_SIDE = ("engine", "files", "description", "download", "export", "memory_estimate", "environment")


def test_the_app_side_modules_import_no_parler_and_no_torch():
    code = ("import json, sys\n"
            + "".join(f"import alltalk_gui.core.engines.parler.{m}\n" for m in APP_SIDE)
            + "from alltalk_gui.core.engine_api.engine import get_engine\n"
            + "e = get_engine('parler'); e.validate_base_model; e.text_checker('en')\n"
            + "print(json.dumps(sorted(m for m in ('torch', 'parler_tts', 'dac', 'transformers') if m in sys.modules)))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


def test_parlers_half_refuses_the_apps_interpreter():
    from alltalk_gui.core.engines.parler.upstream import NotInParlerEnvironment, parler

    with pytest.raises(NotInParlerEnvironment, match="runs in its own environment \\(transformers 4.46.1\\)"):
        parler()
