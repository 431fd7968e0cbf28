"""Whether the judge can run here: its two models come with the optional ``judge`` extra.

Answered from the installed packages alone (no import of torch or the models), so the GUI can hide the judge and
say why at once. The install scripts install the extra (``packaging/setup_env.sh``); an install without it still
trains, previews and exports, with the eval loss choosing the best checkpoint as before.
"""

from __future__ import annotations

from alltalk_gui.core.audio import speaker

# The modules the judge imports (distribution in brackets): the speaker encoder's (resemblyzer, webrtcvad), and
# distillmos (distillmos), which needs xls_r_sqa (xls-r-sqa) for its configuration.
MODULES = speaker.MODULES + (("distillmos", "distillmos"), ("xls_r_sqa", "xls-r-sqa"))


def missing_packages() -> list[str]:
    """The judge's packages that are not installed (empty when it can run)."""
    return speaker.missing_packages(MODULES)


def unavailable_reason() -> str | None:
    """One sentence saying why the judge cannot run here, or None when it can."""
    missing = missing_packages()
    if not missing:
        return None
    return (f"The checkpoint judge needs {speaker.not_installed(missing)}: run the install again (bash "
            "packaging/run.sh), or see the README's 'Checkpoint judge'. Without it the best checkpoint is the one "
            "with the lowest eval loss.")
