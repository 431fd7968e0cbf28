"""Parler-TTS on a real CUDA GPU, in its own environment: DDP in one process (NCCL, world size 1: the model
wrapped as for several GPUs), and preview and export of a CUDA-trained checkpoint. Each profile:
``test_parler_cuda.py``."""

from __future__ import annotations

import numpy as np

from tests.gpu.parler_training import assert_trained_on_cuda, train_parler


def test_ddp_in_one_process_on_cuda(gpu_project, parler_gpu):
    """What accelerate does under ``accelerate launch`` (a NCCL process group, the model in DDP), with one process:
    the only way one GPU can run it (NCCL refuses two ranks on one device)."""
    from alltalk_gui.core.training.launch import LOOPBACK, free_port

    env = {"LOCAL_RANK": "0", "RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1",
           "MASTER_ADDR": LOOPBACK, "MASTER_PORT": str(free_port())}
    events = train_parler(gpu_project, parler_gpu, "parler_ddp1", "high", env=env)
    started = assert_trained_on_cuda(events, steps=3)
    assert started["processes"] == 1  # one rank of a process group (CPU twin: test_training.py, 2 ranks on gloo)


def test_preview_and_export_of_a_cuda_checkpoint(gpu_project, parler_gpu, tmp_path):
    import soundfile as sf

    from alltalk_gui.core.engine_api.engine import Reference
    from alltalk_gui.core.training.checkpoints import resolve_checkpoint
    from alltalk_gui.core.voice.export import ExportOptions, export_voice
    from alltalk_gui.core.voice.preview import GenerationSettings, PreviewEngine, generate_preview

    assert_trained_on_cuda(train_parler(gpu_project, parler_gpu, "parler_voice", "low"), steps=3)
    checkpoint = resolve_checkpoint(gpu_project, "latest", run="parler_voice")
    engine = PreviewEngine(device="cuda", engine="parler")
    settings = GenerationSettings.for_engine(engine.engine).with_values({"max_seconds": 0.5})
    result = generate_preview(engine, base_model_dir=checkpoint.base_model_dir, checkpoint=checkpoint,
                              text="Hello there.", references=[], language="en", settings=settings, out_dir=tmp_path,
                              reference_text=engine.engine.reference_suggestion(checkpoint))
    audio, rate = sf.read(result.wav, dtype="float32")
    assert rate == 44_100 and audio.size > 0 and np.isfinite(audio).all()
    spoken = engine.synthesize(checkpoint.base_model_dir, None, "Hello.", Reference.description("Anna speaks."), "en",
                               settings)
    assert spoken.size > 0
    engine._models.clear()
    exported = export_voice(checkpoint, tmp_path / "out", ExportOptions(format="parler", name="gpu_voice"))
    assert (exported.folder / "model.safetensors").is_file() and (exported.folder / "description.txt").is_file()
