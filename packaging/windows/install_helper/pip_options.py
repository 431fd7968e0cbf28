"""pip options that keep working behind company networks.

* **TLS-inspecting proxies.** Many company networks re-sign HTTPS with their own root certificate, which
  Windows trusts (it is in the certificate store) but pip's bundled certifi list does not. pip 24.2 and later
  verify through the system store (truststore) by default; pip 23.3 to 24.1 do so with
  ``--use-feature=truststore``; older ones cannot without the truststore package, which they could not download
  through such a proxy anyway. The environment's pip is upgraded first, with the flag where it helps, so every
  later step has a pip that uses the store.
* **Mirrors set in pip.ini.** ``--index-url`` on the command line replaces an ``index-url`` the user (or their
  company) configured, e.g. an internal mirror, and from a network that only reaches the mirror nothing
  installs. PyTorch's index is therefore added with ``--extra-index-url``: the pinned ``torch==2.9.1+cu126``
  exists only there, and everything else still comes from the configured index. A command-line
  ``--extra-index-url`` replaces configured extra indexes, so those are repeated.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

TRUSTSTORE_DEFAULT = (24, 2)
TRUSTSTORE_FLAG = (23, 3)


def parse_pip_version(text: str) -> Optional[Tuple[int, ...]]:
    """(24, 0) from "pip 24.0 from C:\\...\\pip (python 3.11)"; None when it is not pip's answer."""
    match = re.match(r"pip (\d+)\.(\d+)", text.strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


def truststore_args(pip_version: Optional[Tuple[int, ...]]) -> List[str]:
    """What makes this pip verify HTTPS through Windows' certificate store."""
    if pip_version is not None and TRUSTSTORE_FLAG <= pip_version < TRUSTSTORE_DEFAULT:
        return ["--use-feature=truststore"]
    return []


def parse_pip_config(text: str) -> Dict[str, List[str]]:
    """``pip config list`` output ("global.index-url='https://mirror/simple'") as {"index-url": [...], ...};
    values with several URLs (one per line, or space-separated) become lists."""
    config: Dict[str, List[str]] = {}
    for line in text.splitlines():
        match = re.match(r"\s*[\w-]+\.([\w-]+)\s*=\s*'?(.*?)'?\s*$", line)
        if match:
            config.setdefault(match.group(1), []).extend(match.group(2).replace("\\n", " ").split())
    return config


def torch_index_args(index_url: str, pip_config: Dict[str, List[str]]) -> List[str]:
    """Arguments that make PyTorch's ``index_url`` available without replacing a configured index."""
    extra = list(dict.fromkeys([index_url, *pip_config.get("extra-index-url", [])]))
    args: List[str] = []
    for url in extra:
        args += ["--extra-index-url", url]
    return args
