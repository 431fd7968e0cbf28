"""Building coqui's GPT for training and its inference model prints no transformers remark about GPT-2's
placeholder bos/eos ids (``engines/xtts/gpt.py``), while transformers' other config warnings still come through."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
from transformers import GPT2Config
from alltalk_gui.core.engines.xtts.model import load_gpt, load_inference_model
load_gpt(sys.argv[1])
load_inference_model(sys.argv[1])
GPT2Config(vocab_size=10, pad_token_id=99)  # another config's bad id: still reported
"""


def test_coqui_gpt_configs_build_without_the_placeholder_token_id_warning(tiny):
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tiny)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "bos_token_id must be" not in done.stderr and "eos_token_id must be" not in done.stderr
    assert "pad_token_id must be" in done.stderr


def test_making_the_tiny_test_model_prints_no_placeholder_token_id_warning(tmp_path):
    """``alltalk-gui make-test-model --engine xtts`` builds coqui's Xtts without the GPT module: it printed the
    remark twice."""
    done = subprocess.run([sys.executable, "-m", "alltalk_gui", "make-test-model", str(tmp_path / "tiny"), "--engine",
                           "xtts"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "token_id must be" not in done.stderr
