"""Test-wide settings: Qt runs offscreen, nothing reaches the network."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Tests never download: huggingface_hub and transformers stay offline.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
