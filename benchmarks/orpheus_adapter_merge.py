"""Peak RAM and time of using an Orpheus LoRA adapter as a base model, at real size, on the CPU.

An adapter folder (Unsloth's usual output) is checked from its file headers and then merged into its base in memory
when a run or a preview loads it (``engines/orpheus/adapter.py``, ``model.load_model``). This measures both on
Orpheus 3B's shapes (Llama 3.2 3B with the 156,940-token vocabulary, random bf16 weights: nothing can be
downloaded) with two rank-64 adapters made by peft as Unsloth's notebook makes them:

* ``plain``: LoRA r64 (alpha 64) on the seven projections of every decoder layer (97 M fp32 values, 389 MB);
* ``full``: the same plus ``modules_to_save=["embed_tokens", "lm_head"]`` (Orpheus's own LoRA script's choice:
  both 482 M-value vocabulary matrices carried in full, bf16; the merged model is untied).

Each case runs in a process of its own, so its peak RSS (``VmHWM``, reset between phases through
``/proc/self/clear_refs``) is its own:

* ``check``: ``files.validate_base_model(adapter)`` (JSON, safetensors headers, the tokenizers; no weights);
* ``merge``: ``model.load_model(info, weights)`` as a run calls it, with its parts timed where they end:
  ``load`` (the base's ``from_pretrained``), ``merge`` (``adapter.merge_adapter``: peft's ``from_pretrained``, the
  merge, ``merge_and_unload``) and, where a version of the engine has it apart, ``quantise`` (``quantise_nf4``).
  For ``nf4`` (Low) the merged linear layers become bitsandbytes' 4-bit NF4, which bitsandbytes 0.50 also makes
  on the CPU (the packed bytes are the ones it makes on a card, ``tests/core/engines/orpheus/test_adapter_base.py``);
  since 2026-11-27 each as soon as it is merged, inside ``merge``;
* ``touch``: every weight read once after it (what a run's first pass or its move to the card does):
  transformers maps the base's safetensors and reads a page only when it is used, so ``load`` takes a second, a
  merge reads (and copies on write) the weights it changes, and the rest comes in here;
* ``base-*``: the base alone through the same ``load_model`` (no adapter), the floor a merge is compared with.

Beside each peak: anonymous RSS sampled every 20 ms (``RssAnon``: memory the process made; ``VmHWM`` also counts
the mapped file's pages, which the kernel can drop and read again) and what the model holds at the end. Times are
wall-clock and include reading the base from disk where the page cache does not hold it; the machine's load
average is recorded beside them (the CPU is shared).

``--device cuda`` quantises Low's merged weights on the card, as a run there does (the merge itself is always on
the CPU, in bf16) and adds the card's peak allocation; ``--arch tiny`` runs on the tiny test model (the CPU twin of
the GPU kit's case, in ``tests/benchmarks/test_orpheus_adapter_merge.py``).

    python benchmarks/orpheus_adapter_merge.py --data /tmp/orpheus_adapter_data --write       # 9 GB, once
    python benchmarks/orpheus_adapter_merge.py --data /tmp/orpheus_adapter_data --cases plain-bf16,full-nf4
    python benchmarks/orpheus_adapter_merge.py --data /tmp/kit/adapters --base /tmp/orpheus_random_base --write \
        --device cuda --cases plain-nf4,full-nf4       # the GPU kit's case (run_more.sh), on call 2's base
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
GIB = 1024**3
RANK, ALPHA = 64, 64
ADAPTERS = {"plain": None, "full": ["embed_tokens", "lm_head"]}   # name -> modules_to_save
WEIGHTS = ("bf16", "nf4")                                         # Medium/High's base, Low's
CASES = tuple(f"{kind}-{w}" for kind in ("base", *ADAPTERS) for w in WEIGHTS)
# snac_24khz's config.json (hubertsiuzdak/snac_24khz): the codec's facts are what the check reads.
SNAC_24KHZ = {"sampling_rate": 24000, "encoder_dim": 48, "encoder_rates": [2, 4, 8, 8], "latent_dim": None,
              "decoder_dim": 1024, "decoder_rates": [8, 8, 4, 2], "attn_window_size": None, "codebook_size": 4096,
              "codebook_dim": 8, "vq_strides": [4, 2, 1], "noise": True, "depthwise": True}
HUB_NAME = "unsloth/orpheus-3b-0.1-ft"


# ----------------------------------------------------------------------------------------------- the data
def write_data(data: Path, base: Path, arch: str = "real") -> None:
    """The random base (``real``: config, bf16 shards, a tokenizer with Orpheus's special and 28,672 audio tokens,
    a random SNAC 24 kHz; ``tiny``: the tiny test model) and the two adapters (``data/plain``, ``data/full``), each
    written once."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from orpheus_memory_profiles import write_random_base

    if not (base / "config.json").is_file():
        write_random_base(base, arch)
    if arch == "real":
        _finish_base(base)
    for name, saved in ADAPTERS.items():
        if not (data / name / "adapter_model.safetensors").is_file():
            write_adapter(base, data / name, saved)


def _finish_base(base: Path) -> None:
    """What ``write_random_base`` leaves out and the check reads: the tokenizer and the codec."""
    import torch
    from snac import SNAC

    from alltalk_gui.core.engines.orpheus.tiny_model import build_tokenizer

    if not (base / "tokenizer.json").is_file():
        build_tokenizer(SNAC_24KHZ["codebook_size"]).save_pretrained(str(base))
    codec = base / "snac"
    if not (codec / "pytorch_model.bin").is_file():
        codec.mkdir(exist_ok=True)
        (codec / "config.json").write_text(json.dumps(SNAC_24KHZ))
        torch.manual_seed(0)
        torch.save(SNAC(**SNAC_24KHZ).state_dict(), codec / "pytorch_model.bin")


def write_adapter(base: Path, out: Path, modules_to_save: list[str] | None) -> None:
    """An adapter as peft (and Unsloth, which calls it) saves one: peft's LoRA on the base's architecture, built on
    the meta device (the base's 6.6 GB are never needed: an adapter holds only its own tensors), its own tensors
    then drawn (B too, so a merge changes the model) and written by ``save_pretrained``."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    from alltalk_gui.core.engines.orpheus.model import LORA_TARGETS

    config = AutoConfig.from_pretrained(base)
    with torch.device("meta"):
        lm = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    lora = LoraConfig(r=RANK, lora_alpha=ALPHA, target_modules=list(LORA_TARGETS), modules_to_save=modules_to_save,
                      task_type="CAUSAL_LM")
    model = get_peft_model(lm, lora)
    generator = torch.Generator().manual_seed(1)
    for module_name, module in model.named_modules():
        for name, parameter in list(module._parameters.items()):
            full = f"{module_name}.{name}"
            if parameter is None or not ("lora_" in full or "modules_to_save" in full):
                continue
            value = torch.randn(parameter.shape, generator=generator, dtype=torch.float32) * 0.02
            module._parameters[name] = torch.nn.Parameter(value.to(parameter.dtype), requires_grad=False)
    model.peft_config["default"].base_model_name_or_path = HUB_NAME
    partial = out.with_name(out.name + ".partial")
    model.save_pretrained(str(partial), safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (partial / name).write_bytes((base / name).read_bytes())
    partial.rename(out)


# ----------------------------------------------------------------------------------------------- one case
def status_kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class Peaks:
    """Peak RSS of a phase: ``VmHWM`` (reset at each start) and ``RssAnon`` sampled every 20 ms."""

    def __init__(self) -> None:
        self.anon = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.anon = max(self.anon, status_kib("RssAnon"))

    def start(self) -> float:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")  # resets VmHWM to the current RSS
        self.anon = status_kib("RssAnon")
        return time.perf_counter()

    def end(self, started: float) -> dict[str, float]:
        self.anon = max(self.anon, status_kib("RssAnon"))
        return {"seconds": round(time.perf_counter() - started, 2),
                "peak_rss_gib": round(status_kib("VmHWM") / 2**20, 3),
                "peak_anon_gib": round(self.anon / 2**20, 3),
                "rss_after_gib": round(status_kib("VmRSS") / 2**20, 3),
                "anon_after_gib": round(status_kib("RssAnon") / 2**20, 3)}


def run_case(case: str, data: Path, base: Path, device: str = "cpu") -> dict[str, Any]:
    """One case in this process (see the module docstring)."""
    kind, weights = case.split("-")
    os.environ["ALLTALK_GUI_CONFIG_DIR"] = str(data / "settings")
    import torch

    from alltalk_gui.core import app_settings
    from alltalk_gui.core.engines.orpheus import adapter as adapter_module
    from alltalk_gui.core.engines.orpheus import model as orpheus_model
    from alltalk_gui.core.engines.orpheus.files import BASE_MODEL_SETTING, validate_base_model

    app_settings.set_value(BASE_MODEL_SETTING, str(base))
    folder = base if kind == "base" else data / kind
    on_cuda = device == "cuda" and weights == "nf4"  # only the 4-bit weights are made on the card
    peaks = Peaks()
    record: dict[str, Any] = {"case": case, "adapter": kind, "base_weights": weights,
                              "device": torch.cuda.get_device_name() if on_cuda else "cpu",
                              "load_average_at_start": os.getloadavg()[0],
                              "imported_rss_gib": round(status_kib("VmRSS") / 2**20, 3)}
    started = peaks.start()
    info = validate_base_model(folder)
    record["check"] = peaks.end(started)

    parts: dict[str, Any] = {}

    def timed_part(name: str, function):
        def wrapper(*args, **kwargs):
            result = function(*args, **kwargs)
            parts[name] = {"at_s": round(time.perf_counter() - merge_started, 2),
                           "peak_rss_gib_so_far": round(status_kib("VmHWM") / 2**20, 3),
                           "peak_anon_gib_so_far": round(max(peaks.anon, status_kib("RssAnon")) / 2**20, 3),
                           "anon_after_gib": round(status_kib("RssAnon") / 2**20, 3)}
            return result
        return wrapper

    orpheus_model.load_lm = timed_part("load", orpheus_model.load_lm)
    adapter_module.merge_adapter = timed_part("merge", adapter_module.merge_adapter)
    orpheus_model.quantise_nf4 = timed_part("quantise", orpheus_model.quantise_nf4)
    merge_started = peaks.start()
    lm = orpheus_model.load_model(info, weights, device if on_cuda else "cpu")
    record["merge"] = {**peaks.end(merge_started), "parts": parts}
    if on_cuda:
        record["merge"]["cuda_peak_allocated_gib"] = round(torch.cuda.max_memory_allocated() / GIB, 3)
    # Low keeps an untied input embedding in host memory, outside the parameters (model.HostEmbedding): counted too
    host = [] if isinstance(lm.get_input_embeddings(), torch.nn.Embedding) else [lm.get_input_embeddings().weight]
    started = peaks.start()
    with torch.no_grad():
        for parameter in [*lm.parameters(), *host]:  # one value of every 4 KiB page
            flat = parameter.detach().reshape(-1)
            flat[::max(1, 4096 // flat.element_size())].float().sum()
    record["touch"] = peaks.end(started)
    record["load_average_at_end"] = os.getloadavg()[0]
    embedding, head = lm.get_input_embeddings().weight, lm.get_output_embeddings().weight
    record["tied"] = head is embedding
    record["embedding_on_host_bytes"] = sum(p.numel() * p.element_size() for p in host)
    in_parameters = sum(p.numel() * p.element_size() for p in lm.parameters())
    record["model_bytes_gib"] = round((in_parameters + record["embedding_on_host_bytes"]) / GIB, 3)
    record["untied_changed"] = None if record["tied"] else bool(not torch.equal(head, embedding))
    return record


# ----------------------------------------------------------------------------------------------- the run
def machine() -> dict[str, Any]:
    import bitsandbytes
    import peft
    import torch
    import transformers

    return {"machine": f"{platform.node()}: {os.cpu_count()} CPUs, "
                       f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / GIB:.1f} GiB RAM",
            "torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__,
            "bitsandbytes": bitsandbytes.__version__, "python": platform.python_version()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="folder of the base and adapters (written by --write)")
    parser.add_argument("--write", action="store_true", help="write the base and the adapters there (once)")
    parser.add_argument("--base", type=Path, help="the random base folder (default: DATA/base)")
    parser.add_argument("--arch", choices=("real", "tiny"), default="real", help="Orpheus 3B's shapes, or the tiny model")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="cuda: Low's 4-bit weights are quantised on the card (the merge stays on the CPU)")
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--out", type=Path, help="JSON file of the records (default: benchmarks/results/...)")
    parser.add_argument("--label", default="", help="added to the default file name (before/after a change)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    base = opts.base or opts.data / "base"
    if opts.child:
        print(json.dumps(run_case(opts.child, opts.data, base, opts.device)))
        return 0
    if opts.write:
        started = time.perf_counter()
        write_data(opts.data, base, opts.arch)
        print(f"written in {time.perf_counter() - started:.0f} s: {opts.data}")
    cases = [c for c in opts.cases.split(",") if c]
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown cases {unknown}; choose from {', '.join(CASES)}")
    if not cases:
        return 0
    records = []
    for case in cases:
        done = subprocess.run([sys.executable, __file__, "--data", str(opts.data), "--base", str(base), "--device",
                               opts.device, "--child", case],
                              capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        record = json.loads(lines[-1]) if done.returncode == 0 and lines else {
            "case": case, "error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
        record.update(date=time.strftime("%Y-%m-%d"), arch=opts.arch, **machine())
        print(json.dumps(record), flush=True)
        records.append(record)
    label = f"_{opts.label}" if opts.label else ""
    out = opts.out or RESULTS / f"orpheus_adapter_merge_{time.strftime('%Y-%m-%d')}_{opts.device}{label}.json"
    out.write_text(json.dumps(records, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
