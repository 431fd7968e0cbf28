"""Memory profiles and the peak-memory estimate: the data files load and validate, device adaptation says
what it changed, auto picks by free memory, and the estimate puts each profile under its target."""

import dataclasses
import json

import pytest

from alltalk_gui.core.engine_api.engine import get_engine

from alltalk_gui.core.training import profiles
from alltalk_gui.core.training.config import ConfigError, TrainConfig
from alltalk_gui.core.machine.gpu import DeviceInfo
from alltalk_gui.core.engines.xtts.memory_estimate import XTTS_V2, estimate, lora_full_params, lora_params
from alltalk_gui.core.training.profiles import (PROFILE_NAMES, ProfileError, apply_profile, choose_auto, load_profile,
                                               profile_settings)

BASE = TrainConfig(project_dir="p", base_model_dir="b")


def gpu(free_gib: float, total_gib: float = 24.0, bf16: bool = True, name: str = "Test GPU") -> DeviceInfo:
    return DeviceInfo(kind="cuda", index=0, name=name, total_gib=total_gib, free_gib=free_gib, bf16=bf16,
                      capability="8.6" if bf16 else "7.5")


CPU = DeviceInfo(kind="cpu", index=0, name="Test CPU", total_gib=24.0, free_gib=20.0, bf16=True, cores=2)


@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_each_profile_loads_validates_and_keeps_an_effective_batch_of_8(name):
    profile = load_profile(name)
    assert profile.title and profile.summary.endswith(".") and profile.target_gib > 0
    config = apply_profile(BASE, name)
    config.validate(cuda_available=True)
    assert config.profile == name
    assert config.batch_size * config.grad_accum_steps >= 8


@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_each_profile_is_estimated_under_its_target_on_11_s_clips(name):
    config = dataclasses.replace(apply_profile(BASE, name, gpu(80)), max_audio_seconds=11.0)
    assert estimate(config).total_gib <= load_profile(name).target_gib


def test_the_estimate_puts_alltalks_fp32_settings_near_the_14_gb_it_is_known_to_need():
    """AllTalk trains with coqui's own trainer, whose GPT keeps the composite GELU's and attention's tensors."""
    alltalk = dataclasses.replace(BASE, batch_size=4, mixed_precision="no", optimizer="adamw",
                                  gradient_checkpointing=False, max_audio_seconds=11.0)
    assert 11 < estimate(alltalk, streamlined=False).total_gib < 20
    assert estimate(alltalk).total_gib < estimate(alltalk, streamlined=False).total_gib - 2  # as our runs train


def test_estimate_moves_the_right_way_with_each_lever():
    high = apply_profile(BASE, "high")  # as written: 2 x 4
    parts = estimate(high)
    assert parts.trainable_params == XTTS_V2.gpt_params
    assert parts.optimizer_gib == pytest.approx(8 * XTTS_V2.gpt_params / 1024**3, rel=1e-3)
    assert estimate(dataclasses.replace(high, batch_size=8)).total_gib > parts.total_gib
    assert estimate(dataclasses.replace(high, gradient_checkpointing=True)).activations_gib < parts.activations_gib
    assert estimate(dataclasses.replace(high, optimizer="adamw8bit")).optimizer_gib < parts.optimizer_gib / 3
    assert estimate(dataclasses.replace(high, lora_rank=16)).trainable_params == lora_params(16) + lora_full_params()
    assert lora_params(16) < XTTS_V2.gpt_params / 40


def test_pre_ampere_gpus_get_fp16_and_the_cpu_gets_plain_levers_with_notes():
    settings, notes = profiles.profile_settings("medium", gpu(8, bf16=False, name="GTX 1080"))
    assert settings["mixed_precision"] == "fp16" and "GTX 1080 has no bf16" in notes[0]
    config = apply_profile(BASE, "medium", CPU)
    config.validate(cuda_available=False)  # runnable on the CPU
    assert (config.optimizer, config.mixed_precision) == ("adamw", "no")
    _, notes = profiles.profile_settings("medium", CPU)
    assert any("8-bit" in n for n in notes)


def test_a_profile_written_as_is_is_refused_on_the_cpu_naming_the_setting():
    with pytest.raises(ConfigError, match="optimizer=adamw8bit"):
        apply_profile(BASE, "medium").validate(cuda_available=False)


@pytest.mark.parametrize("free_gib, expected", [(80, "high"), (14, "high"), (8, "medium"), (5, "low"), (4, "low")])
def test_auto_picks_the_fastest_profile_that_fits_90_percent_of_free_memory(free_gib, expected):
    choice = choose_auto([CPU, gpu(free_gib)])
    assert choice.profile == expected
    assert f"{free_gib:.1f} GiB free" in choice.reason
    need = estimate(apply_profile(BASE, expected, gpu(free_gib))).total_gib
    assert need <= 0.9 * free_gib


def test_auto_with_too_little_memory_says_what_to_do_and_cpu_only_says_it_takes_hours():
    choice = choose_auto([gpu(1.5)])
    assert choice.profile == "low" and "close other programs" in choice.reason
    choice = choose_auto([CPU])
    assert choice.profile == "high"
    assert choice.reason.startswith("No CUDA GPU was found: training runs on the CPU, about 12 hours for 10 epochs "
                                    "of 6 minutes of audio on 2 cores")


def test_auto_on_the_cpu_gives_the_hours_for_the_configs_dataset_and_epochs(tmp_path):
    """4 epochs of 3 minutes (one 180 s clip) on 2 cores: 4 x 180 s x 12.1 s of work per second of audio."""
    import numpy as np
    import soundfile

    (tmp_path / "dataset" / "wavs").mkdir(parents=True)
    soundfile.write(tmp_path / "dataset" / "wavs" / "a.wav", np.zeros(180 * 22050, dtype=np.float32), 22050)
    (tmp_path / "dataset" / "metadata_train.csv").write_text("audio_file|text|speaker_name\nwavs/a.wav|Hi.|s\n")
    config = dataclasses.replace(BASE, project_dir=str(tmp_path), epochs=4)
    assert "about 2.5 hours for 4 epochs of 3 minutes of audio on 2 cores" in choose_auto([CPU], config).reason


def test_auto_uses_the_gpu_with_most_free_memory():
    small, big = gpu(3, name="Small"), dataclasses.replace(gpu(20, name="Big"), index=1)
    assert "Big" in choose_auto([small, big]).reason


@pytest.mark.parametrize(
    "body, message",
    [
        ('title = "x"\nsummary = "y."\ntarget_gib = 1\n[settings]\nbatch_sise = 2\n', "'batch_sise' is not a training"),
        ('title = "x"\nsummary = "y."\ntarget_gib = 1\n[settings]\nbatch_size = "two"\n', "must be a int"),
        ('title = "x"\nsummary = "y."\ntarget_gib = 1\n[settings]\nlora_rank = -1\n', "lora_rank cannot be negative"),
        ('title = "x"\nsummary = "y."\n[settings]\n', "missing key"),
        ('title = "x"\nsummary = "y."\ntarget_gib = 1\n[settings]\n[size_targets]\nlarge = "8"\n',
         "size_targets.large must be a number of GiB above 0"),
        ('title = "x"\nsummary = "y."\ntarget_gib = 1\nsize_targets = 8\n[settings]\n', "must be a table"),
        ('title = "x\n', "low.toml"),
    ],
)
def test_a_broken_profile_file_names_the_problem(tmp_path, monkeypatch, body, message):
    (tmp_path / "profiles" / "xtts").mkdir(parents=True)
    (tmp_path / "profiles" / "xtts" / "low.toml").write_text(body, encoding="utf-8")
    monkeypatch.setattr(type(get_engine("xtts")), "profiles_dir", lambda self: tmp_path / "profiles" / self.name)
    with pytest.raises(ProfileError, match=message):
        load_profile("low")


def test_unknown_profile_name():
    with pytest.raises(ProfileError, match="choose one of low, medium, high or auto"):
        load_profile("ultra")


def test_auto_on_a_gpu_also_sizes_the_micro_batch_and_a_chosen_profile_does_not():
    gpu = DeviceInfo(kind="cuda", index=0, name="RTX 3060", total_gib=12.0, free_gib=11.0, bf16=True, capability="8.6")
    cpu = DeviceInfo(kind="cpu", index=0, name="CPU", total_gib=24.0, free_gib=20.0, bf16=True, cores=2)
    assert apply_profile(TrainConfig(), "medium", gpu, auto=True).auto_micro_batch
    assert not apply_profile(TrainConfig(), "medium", gpu).auto_micro_batch
    assert not apply_profile(TrainConfig(), "high", cpu, auto=True).auto_micro_batch  # no probe on the CPU


# The micro-batch filled up to the profile's target on a GPU (profiles.fill_micro_batch): a CUDA-only branch,
# exercised here with a card's description.
CARD = DeviceInfo(kind="cuda", index=0, name="Test card", total_gib=24.0, free_gib=23.0, bf16=True,
                  capability="8.9")


def _estimate(engine: str, config: TrainConfig) -> float:
    from alltalk_gui.core.engine_api.engine import get_engine

    return get_engine(engine).estimate_memory(config).total_gib


@pytest.mark.parametrize("engine, seconds", [("xtts", 11.0), ("f5", 30.0), ("orpheus", 30.0), ("parler", 10.0)])
@pytest.mark.parametrize("name", ["low", "medium", "high"])
def test_a_profile_fills_its_micro_batch_up_to_its_target_and_keeps_the_effective_batch(engine, seconds, name):
    profile = load_profile(name, engine)
    written = profile.settings
    config = apply_profile(TrainConfig(engine=engine, max_audio_seconds=seconds), name, CARD)
    effective = written["batch_size"] * written["grad_accum_steps"]
    assert config.batch_size * config.grad_accum_steps == effective
    assert config.batch_size >= written["batch_size"] and effective % config.batch_size == 0
    limit = min(profiles.FILL_SHARE * profile.target_gib, profiles.AUTO_HEADROOM * CARD.free_gib)
    if config.batch_size > written["batch_size"]:
        assert _estimate(engine, config) <= limit
    # No larger divisor of the effective batch would have kept within the target.
    for size in range(config.batch_size + 1, effective + 1):
        if effective % size == 0:
            bigger = config.with_values({"batch_size": size, "grad_accum_steps": effective // size})
            assert _estimate(engine, bigger) > limit, (size, _estimate(engine, bigger))


def test_filling_is_said_and_happens_only_on_a_gpu():
    settings, notes = profile_settings("low", CARD, "xtts", TrainConfig(max_audio_seconds=11.0))
    assert (settings["batch_size"], settings["grad_accum_steps"]) == (8, 1)  # XTTS Low: 1 x 8 as written
    assert any("runs 8 clip(s) per micro-batch x 1 on this card (written 1 x 8" in n and "within its 3.5 GiB" in n
               for n in notes)
    small = DeviceInfo(kind="cuda", index=0, name="4 GB card", total_gib=4.0, free_gib=3.4, bf16=True,
                       capability="8.6")  # F5's Low fills to 4 x 2 (3.4 GiB) where the card has room, not here
    f5_low, f5_notes = profile_settings("low", CARD, "f5", TrainConfig(engine="f5", max_audio_seconds=11.6))
    assert f5_low["batch_size"] == 4
    assert "on clips up to 30 s" in f5_notes[0]  # the clip length the estimate used: F5's Low sets 30 s
    assert profile_settings("low", small, "f5", TrainConfig(engine="f5"))[0]["batch_size"] == 2
    cpu = DeviceInfo(kind="cpu", index=0, name="CPU", total_gib=24.0, free_gib=20.0, bf16=True, cores=2)
    on_cpu, _ = profile_settings("low", cpu, "xtts", TrainConfig(max_audio_seconds=11.0))
    assert (on_cpu["batch_size"], on_cpu["grad_accum_steps"]) == (1, 8)
    as_written, _ = profile_settings("low", CARD, "xtts")  # without the run's config: as written
    assert (as_written["batch_size"], as_written["grad_accum_steps"]) == (1, 8)


def test_longer_clips_fill_less():
    """XTTS's High (2 x 4 as written, 12 GiB) on a 12 GB card, on a dataset of clips up to 4, 6 and 11 s."""
    card = gpu(11.5, total_gib=12.0)
    sizes = [apply_profile(TrainConfig(engine="xtts", max_audio_seconds=s), "high", card).batch_size
             for s in (4.0, 6.0, 11.0)]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] == 8 > sizes[-1] >= 2, sizes


def test_a_model_without_memory_figures_keeps_the_profile_as_written(tmp_path):
    import json

    folder = tmp_path / "parler_small"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"decoder": {"hidden_size": 64}}))
    config = apply_profile(TrainConfig(engine="parler", base_model_dir=str(folder)), "low", CARD)
    written = load_profile("low", "parler").settings
    assert (config.batch_size, config.grad_accum_steps) == (written["batch_size"], written["grad_accum_steps"])


def test_the_datasets_longest_clip_fills_the_micro_batch_further():
    """F5's High (2 x 4 as written, 16 GiB, sized for 30 s) on a 24 GB card: clips of at most 20 s fill it to 4 x 2,
    of at most 12 s to 8 x 1, and the note names the length it sized for; a longest clip above the limit changes
    nothing (the run leaves such clips out)."""
    def filled(longest):
        settings, notes = profile_settings("high", CARD, "f5", TrainConfig(engine="f5"), longest)
        return (settings["batch_size"], settings["grad_accum_steps"]), notes

    assert filled(None)[0] == filled(40.0)[0] == (2, 4)
    (micro, notes) = filled(20.0)
    assert micro == (4, 2) and "on clips up to 20 s" in notes[0]
    assert filled(12.0)[0] == (8, 1)
    config = TrainConfig(engine="f5", max_audio_seconds=30.0)
    assert profiles.sized_for(config, 12.0).max_audio_seconds == 12.0
    assert profiles.sized_for(config, 45.0) is config and profiles.sized_for(config, None) is config


def test_auto_judges_the_profiles_at_the_datasets_longest_clip():
    """On an 8 GB card Auto picks F5's Medium for clips up to 30 s, and High where every clip is under 4 s."""
    card = gpu(7.6, total_gib=8.0)
    assert choose_auto([card], TrainConfig(engine="f5")).profile == "medium"
    assert choose_auto([card], TrainConfig(engine="f5"), 3.5).profile == "high"


def _parler_base(folder, size: str):
    """A Parler-TTS base-model folder as far as its size goes: config.json's decoder of Mini v1 or Large v1."""
    from alltalk_gui.core.engines.parler.memory_estimate import SIZES

    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"decoder": SIZES[size]}), encoding="utf-8")
    return folder


def test_a_profile_fills_up_to_the_target_of_the_base_models_size(tmp_path):
    """Parler's Low promises 4 GiB with Mini v1 and 8 GiB with Large v1 ([size_targets] in its file): Large's
    micro-batch on 10 s clips is filled up to 8 (8 x 1: 6.3 GiB by the estimate, 6.31 GiB measured on an H200),
    where Mini's target would have left it as written (2 x 4: 4.8 GiB, already over 4)."""
    low = load_profile("low", "parler")
    assert (low.target_gib, low.target_for("large"), low.target_for("mini"), low.target_for(None)) == (4, 8, 4, 4)
    engine = get_engine("parler")
    run = TrainConfig(engine="parler", max_audio_seconds=10.0)
    large = run.with_values({"base_model_dir": str(_parler_base(tmp_path / "large", "large"))})
    mini = run.with_values({"base_model_dir": str(_parler_base(tmp_path / "mini", "mini"))})
    assert (engine.model_size(large), engine.model_size(mini), engine.model_size(run)) == ("large", "mini", None)
    # Low keeps clips up to 30 s; a dataset whose longest clip is 10 s is sized for 10 s (as the Train page does).
    settings, notes = profile_settings("low", CARD, "parler", large, longest_clip_s=10.0)
    assert (settings["batch_size"], settings["grad_accum_steps"]) == (8, 1)
    assert "within its 8 GiB" in notes[0]
    assert _estimate("parler", large.with_values({**settings, "max_audio_seconds": 10.0})) <= profiles.FILL_SHARE * 8
    on_30s = profile_settings("low", CARD, "parler", large)[0]  # 30 s clips: 4 x 2 (7.5 GiB; 8 x 1 is 10.7)
    assert (on_30s["batch_size"], on_30s["grad_accum_steps"]) == (4, 2)
    written = low.settings["batch_size"], low.settings["grad_accum_steps"]
    filled_as_mini = profile_settings("low", CARD, "parler", mini, longest_clip_s=10.0)[0]
    assert (filled_as_mini["batch_size"], filled_as_mini["grad_accum_steps"]) == (8, 1)  # Mini's 2.6 GiB fits 4
    # Held to Mini's 4 GiB, Large would stay as written.
    assert profiles.fill_micro_batch(dataclasses.replace(low, size_targets={}), dict(low.settings), large, CARD,
                                     longest_clip_s=10.0) == []
    assert written == (2, 4)


def test_an_engine_without_model_size_is_held_to_the_written_target(monkeypatch):
    """model_size is optional in the Engine protocol (a plug-in written before it still loads): such an engine's
    profiles are held to their own target_gib."""
    from alltalk_gui.core.engine_api.engine import OPTIONAL_MEMBERS, interface_members

    assert "model_size" in OPTIONAL_MEMBERS and "model_size" not in interface_members()
    engine = get_engine("xtts")
    assert not hasattr(engine, "model_size")
    settings, notes = profile_settings("low", CARD, "xtts", TrainConfig(max_audio_seconds=11.0))
    assert settings["batch_size"] == 8 and "within its 3.5 GiB" in notes[0]
