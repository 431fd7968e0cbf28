"""Memory profiles: named sets of TrainConfig values that fit an engine's fine-tuning on 4, 6-8 and 12 GB cards.

The profiles are data (``resources/profiles/<engine>/<name>.toml``, each commented); this module reads and checks them,
applies one to a TrainConfig, adapts it to the device it will run on, and picks one for ``auto``.

Device adaptation is the only place a profile's values change: on a GPU without bf16 (before Ampere) bf16
becomes fp16 with loss scaling, and on the CPU the CUDA-only levers (8-bit optimizers, 16-bit
autocast) are replaced by their plain equivalents, each with a note saying so. Values a user sets after
applying a profile are never adapted: an impossible one is refused by ``TrainConfig.validate``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from alltalk_gui.core.training.config import ConfigError, TrainConfig
from alltalk_gui.core.training.cpu_estimate import estimate_for_config
from alltalk_gui.core.machine.gpu import DeviceInfo, cpu_cores
from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE, get_engine
from alltalk_gui.core.training.toml import TOMLDecodeError, loads as toml_loads

PROFILE_NAMES = ("low", "medium", "high")
# auto leaves this share of the free memory unused: other programs, the desktop and allocator spikes need it.
AUTO_HEADROOM = 0.90
# Auto's pick for a base model the engine has no memory figures for: the middle profile, whose micro-batch the
# probe then fits to the card (High could need more than any micro-batch saves; Low gives up speed for nothing known).
UNSIZED_CHOICE = "medium"
# A profile's micro-batch is filled up to this share of its memory target (fill_micro_batch): the estimates came
# within 10 % of the H100's and H200's peaks, most of them above; the share keeps a filled profile off its limit.
FILL_SHARE = 0.95

_PROFILE_KEYS = {"title", "summary", "target_gib", "settings"}
_OPTIONAL_KEYS = {"size_targets"}


class ProfileError(ValueError):
    """A profile file is missing or malformed; the message names the file and the key."""


@dataclass(frozen=True)
class Profile:
    name: str
    title: str
    summary: str  # the trade-off in one sentence
    target_gib: float  # the GPU memory it is designed to fit
    settings: dict[str, Any] = field(default_factory=dict)  # TrainConfig fields it sets
    # The target for a base model of another size, by the engine's name for it (Engine.model_size): Parler-TTS
    # Large v1's Low fits an 8 GB card where Mini's fits a 4 GB one.
    size_targets: dict[str, float] = field(default_factory=dict)

    def target_for(self, size: str | None) -> float:
        """The memory target (GiB) for a base model of ``size`` (None: the size the profile is written for)."""
        return self.size_targets.get(size, self.target_gib) if size else self.target_gib


@dataclass(frozen=True)
class AutoChoice:
    profile: str
    reason: str


def load_profile(name: str, engine: str = DEFAULT_ENGINE) -> Profile:
    """Read and check ``resources/profiles/<engine>/<name>.toml``.

    Raises:
        ProfileError: unknown name, unreadable TOML, unknown keys, or a setting TrainConfig does not have or
            of the wrong type.
    """
    if name not in PROFILE_NAMES:
        raise ProfileError(f"Unknown profile '{name}'; choose one of {', '.join(PROFILE_NAMES)} or auto.")
    try:
        path = get_engine(engine).profiles_dir() / f"{name}.toml"
    except FileNotFoundError as exc:
        raise ProfileError(str(exc)) from exc
    try:
        data = toml_loads(path.read_text(encoding="utf-8"))
    except (OSError, TOMLDecodeError) as exc:
        raise ProfileError(f"{path}: {exc}") from exc
    unknown = sorted(set(data) - _PROFILE_KEYS - _OPTIONAL_KEYS)
    missing = sorted(_PROFILE_KEYS - set(data))
    if unknown or missing:
        raise ProfileError(f"{path}: unknown key(s) {unknown} / missing key(s) {missing}.")
    _check_settings(path.name, data["settings"], engine)
    return Profile(name, str(data["title"]), str(data["summary"]), float(data["target_gib"]), dict(data["settings"]),
                   _size_targets(path.name, data.get("size_targets", {})))


def all_profiles(engine: str = DEFAULT_ENGINE) -> list[Profile]:
    return [load_profile(name, engine) for name in PROFILE_NAMES]


def sized_for(config: TrainConfig, longest_clip_s: float | None) -> TrainConfig:
    """``config`` as a memory estimate should see it: its ``max_audio_seconds`` lowered to the dataset's longest
    training clip when that is known and shorter (every micro-batch is padded to its longest clip, and clips above
    the limit are left out: :mod:`alltalk_gui.core.dataset.clip_lengths`). Only for estimating: the run keeps its
    limit."""
    if longest_clip_s is None or longest_clip_s >= config.max_audio_seconds:
        return config
    return config.with_values({"max_audio_seconds": longest_clip_s})


def profile_settings(name: str, device: DeviceInfo | None = None, engine: str = DEFAULT_ENGINE,
                     config: TrainConfig | None = None, longest_clip_s: float | None = None
                     ) -> tuple[dict[str, Any], list[str]]:
    """The profile's settings adapted to ``device`` (None: as written), and a note for each adaptation.

    With ``config`` (the run's other settings, its clip length above all) on a CUDA device, the micro-batch is
    also filled up to the profile's memory target (:func:`fill_micro_batch`), for the dataset's longest training
    clip where ``longest_clip_s`` gives it."""
    profile = load_profile(name, engine)
    settings = dict(profile.settings)
    notes: list[str] = []
    if device is None:
        return settings, notes
    on_cuda = device.kind == "cuda"
    if settings.get("mixed_precision") == "bf16" and on_cuda and not device.bf16:
        settings["mixed_precision"] = "fp16"
        notes.append(f"{device.name} has no bf16: using fp16 with loss scaling.")
    if not on_cuda:
        if settings.get("optimizer") in ("adamw8bit", "paged_adamw8bit"):
            settings["optimizer"] = "adamw"
            notes.append("8-bit optimizers need a CUDA GPU: using AdamW (more memory, which the CPU has).")
        if settings.get("mixed_precision") not in (None, "no"):
            settings["mixed_precision"] = "no"
            notes.append("16-bit autocast is slower than fp32 on most CPUs: training in fp32.")
    if on_cuda and config is not None:
        notes.extend(fill_micro_batch(profile, settings, config.with_values({"engine": engine}), device,
                                      longest_clip_s))
    return settings, notes


def fill_micro_batch(profile: Profile, settings: dict[str, Any], config: TrainConfig, card: DeviceInfo,
                     longest_clip_s: float | None = None) -> list[str]:
    """On a GPU: the largest micro-batch that divides the profile's effective batch and whose estimated peak (the
    engine's estimate at the clip length the run keeps: the profile's or ``config``'s limit, or the dataset's
    ``longest_clip_s`` where shorter) stays within :data:`FILL_SHARE` of the profile's target (for the base model's
    size: :meth:`Profile.target_for`) and within what Auto would use of the ``card``'s free memory, with the
    accumulation that keeps the effective batch; never smaller than the profile's own. In ``settings``, in place;
    a note says so.

    A step's fixed cost is paid per micro-batch (the host's dispatch, the optimizer waits for the last), so fewer,
    fuller micro-batches train the same effective batch faster (the H100's and H200's runs: XTTS's Low took 2.1 and
    3.2 s a step in 8 micro-batches of one clip). The profiles' own micro-batches were chosen before the estimates
    were checked against those cards; the target is the promise, the micro-batch is how fast it is kept."""
    micro = int(settings.get("batch_size", config.batch_size))
    accum = int(settings.get("grad_accum_steps", config.grad_accum_steps))
    effective = micro * accum
    engine = get_engine(config.engine)
    run = sized_for(config.with_values(settings), longest_clip_s)
    size = getattr(engine, "model_size", None)  # optional in the Engine protocol
    target = profile.target_for(size(run) if size else None)
    limit = min(FILL_SHARE * target, AUTO_HEADROOM * card.free_gib)
    best, best_gib = micro, None
    for size in range(micro + 1, effective + 1):
        if effective % size:
            continue
        found = engine.estimate_memory(run.with_values({"batch_size": size, "grad_accum_steps": effective // size}))
        if found is None:  # no figures for this base model's size: the profile as written
            return []
        if found.total_gib <= limit:
            best, best_gib = size, found.total_gib
    if best == micro:
        return []
    settings["batch_size"], settings["grad_accum_steps"] = best, effective // best
    return [f"{profile.title} runs {best} clip(s) per micro-batch x {effective // best} on this card (written "
            f"{micro} x {accum}, the same {effective} a step, faster): about {best_gib:.1f} GiB on clips up to "
            f"{run.max_audio_seconds:.3g} s, within its {target:g} GiB."]


def apply_profile(config: TrainConfig, name: str, device: DeviceInfo | None = None, *,
                  auto: bool = False, longest_clip_s: float | None = None) -> TrainConfig:
    """A copy of ``config`` with profile ``name``'s settings (adapted to ``device`` when given; on a GPU filled for
    the dataset's ``longest_clip_s`` where given).

    ``auto``: the profile was picked by :func:`choose_auto`; on a GPU the run then also sizes its micro-batch
    itself (``auto_micro_batch``: at most 90 % of the free memory, the largest micro-batch that fits).
    """
    # Auto's run sizes its micro-batch on the card itself (up to the card, not the profile's target): no filling.
    settings, _ = profile_settings(name, device, config.engine, None if auto else config, longest_clip_s)
    sized = auto and device is not None and device.kind == "cuda"
    return config.with_values({**settings, "profile": name, "auto_micro_batch": sized})


def choose_auto(devices: list[DeviceInfo], config: TrainConfig | None = None,
                longest_clip_s: float | None = None) -> AutoChoice:
    """The profile for ``auto``: the fastest whose estimated peak fits 90 % of the best GPU's free memory.

    ``config`` supplies the settings a profile does not set (clip length above all); defaults otherwise. The
    estimates are for the dataset's ``longest_clip_s`` where it is known and shorter than the limit. With no
    GPU it is High on the CPU where the RAM holds it, else the fastest that fits (:func:`_cpu_choice`), and the
    reason says how many hours that takes on the config's dataset (or on
    :data:`~alltalk_gui.core.training.cpu_estimate.REFERENCE_MINUTES` of audio when there is none yet).
    """
    base = config or TrainConfig()
    gpus = [d for d in devices if d.kind == "cuda"]
    if not gpus:
        cpu = next((d for d in devices if d.kind == "cpu"), None)
        name, memory = _cpu_choice(base, cpu, longest_clip_s)
        hours = estimate_for_config(apply_profile(base, name, cpu), cpu.cores if cpu else cpu_cores()).sentence()
        title = load_profile(name, base.engine).title
        return AutoChoice(name, f"No CUDA GPU was found: training runs on the CPU, {hours} (the {title} "
                                f"profile's batches, in fp32){memory}.")
    gpu = max(gpus, key=lambda d: d.free_gib)
    budget = AUTO_HEADROOM * gpu.free_gib
    estimate = get_engine(base.engine).estimate_memory
    # An engine has no figures for a base model of a size it does not know (None): such a profile is not judged.
    # Each profile as Auto would run it (its micro-batch then probed on the card): judged as written, not filled.
    needs = {name: estimate(sized_for(apply_profile(base, name, gpu, auto=True), longest_clip_s))
             for name in PROFILE_NAMES}
    known = [name for name in reversed(PROFILE_NAMES) if needs[name] is not None]  # high, medium, low
    if not known:
        return AutoChoice(UNSIZED_CHOICE, f"There are no memory figures for this base model's size, so Auto cannot "
                                          f"judge it ahead of training: {load_profile(UNSIZED_CHOICE, base.engine).title}"
                                          f", with the micro-batch tried out on {gpu.name} before training starts.")
    for name in known:
        need = needs[name].total_gib
        if need <= budget:
            return AutoChoice(name, f"{load_profile(name, base.engine).title}: needs about {need:.1f} GiB; {gpu.name} has "
                                    f"{gpu.free_gib:.1f} GiB free (using at most {budget:.1f}).")
    need = needs[known[-1]].total_gib
    return AutoChoice(known[-1], f"Even {load_profile(known[-1], base.engine).title} needs about {need:.1f} GiB and "
                                 f"{gpu.name} has only {gpu.free_gib:.1f} GiB free: close other programs using the GPU, "
                                 "or train on the CPU.")


def _cpu_choice(base: TrainConfig, cpu: DeviceInfo | None, longest_clip_s: float | None) -> tuple[str, str]:
    """Auto's profile on the CPU and what the RAM has to do with it (", ..." or ""): High, the fastest, where its
    estimated peak fits 90 % of the free RAM (or no estimate or RAM figure is known), else the fastest that fits,
    else Low. High was taken whatever it needed: Orpheus-TTS's full fine-tune of 3.3 B parameters (about 26 GiB)
    was Auto's pick beside its own red "~26.0 GiB of 20.9 GiB free"."""
    if cpu is None or not cpu.free_gib:
        return "high", ""
    budget = AUTO_HEADROOM * cpu.free_gib
    estimate = get_engine(base.engine).estimate_memory

    def needs(name: str):  # asked one profile at a time: High alone where it fits (on the GUI thread)
        return estimate(sized_for(apply_profile(base, name, cpu), longest_clip_s))

    high = needs("high")
    if high is None or high.total_gib <= budget:
        return "high", ""
    for name in ("medium", "low"):
        found = needs(name)
        if found is not None and found.total_gib <= budget:
            return name, (f"; High would need about {high.total_gib:.1f} GiB and the RAM has "
                          f"{cpu.free_gib:.1f} GiB free")
    low = found  # the loop's last: Low's
    need = f"about {low.total_gib:.1f} GiB" if low is not None else "more"
    return "low", f"; even Low needs {need} and the RAM has only {cpu.free_gib:.1f} GiB free: close other programs"


def _size_targets(file: str, table: Any) -> dict[str, float]:
    if not isinstance(table, dict):
        raise ProfileError(f"{file}: [size_targets] must be a table of a model size and its GiB.")
    for size, gib in table.items():
        if isinstance(gib, bool) or not isinstance(gib, (int, float)) or gib <= 0:
            raise ProfileError(f"{file}: size_targets.{size} must be a number of GiB above 0, found {gib!r}.")
    return {str(size): float(gib) for size, gib in table.items()}


def _check_settings(file: str, settings: Any, engine: str) -> None:
    if not isinstance(settings, dict):
        raise ProfileError(f"{file}: [settings] must be a table.")
    config = TrainConfig(engine=engine, project_dir="-", base_model_dir="-")
    for key, value in settings.items():
        try:
            kind = config.kind(key)
        except ConfigError:
            kind = None
        if kind is None or key in ("profile", "engine", "options"):
            raise ProfileError(f"{file}: '{key}' is not a training setting.")
        ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            ok = True
        if not ok:
            raise ProfileError(f"{file}: '{key}' must be a {kind.__name__}, found {value!r}.")
    try:
        config.with_values(settings).validate(cuda_available=True)
    except ConfigError as exc:
        raise ProfileError(f"{file}: {exc}") from exc
