"""Orpheus training data: every clip checked against its length limits and the model's context with all problems
listed at once, sequences scoring only the answer, and batches that pad, mask and split."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from alltalk_gui.core.audio.decode import write_wav
from alltalk_gui.core.dataset.metadata import EVAL_CSV, TRAIN_CSV, MetadataRow, read_metadata, write_metadata
from alltalk_gui.core.engines.orpheus.data import Sample, batch_size, collate, load_dataset, sequence_length, \
    split_batch
from alltalk_gui.core.engines.orpheus.files import load_tokenizer, special_tokens, validate_base_model
from alltalk_gui.core.engines.orpheus.tokens import IGNORE
from alltalk_gui.core.training.data import DatasetError


@pytest.fixture(scope="module")
def parts(tiny_orpheus):
    info = validate_base_model(tiny_orpheus)
    tokenizer = load_tokenizer(tiny_orpheus)
    return tokenizer, special_tokens(tiny_orpheus, info.codec, tokenizer), info


def load(dataset, parts, context=None, **limits):
    tokenizer, special, info = parts
    return load_dataset(dataset, tokenizer, special, info.codec, context or info.context,
                        min_seconds=limits.get("min_seconds", 1.0), max_seconds=limits.get("max_seconds", 30.0))


def test_the_clips_and_their_prompts(project, parts):
    train, evals = load(project / "dataset", parts)
    assert len(train) == 4 and len(evals) == 1
    clip = train[0]
    tokenizer, special, info = parts
    assert clip.speaker == "tester" and clip.prompt[0] == special.start_of_human
    assert tokenizer.decode(list(clip.prompt[1:-4]), skip_special_tokens=True) == f"tester: {clip.text}"
    assert clip.length == sequence_length(len(clip.prompt), clip.seconds, info.codec)


def test_every_problem_is_listed_at_once(project, parts, tmp_path):
    dataset = shutil.copytree(project / "dataset", tmp_path / "dataset")
    rows = read_metadata(dataset / TRAIN_CSV)
    write_wav(dataset / "wavs" / "long.wav", np.zeros(24000 * 12, np.float32), 24000)
    write_wav(dataset / "wavs" / "short.wav", np.zeros(12000, np.float32), 24000)
    rows += [MetadataRow("wavs/long.wav", "a long one", "tester"), MetadataRow("wavs/short.wav", "short", "tester"),
             MetadataRow("wavs/gone.wav", "missing", "tester")]
    write_metadata(dataset / TRAIN_CSV, rows)
    with pytest.raises(DatasetError) as caught:
        load(dataset, parts, max_seconds=10.0)
    problems = caught.value.problems
    assert len(problems) == 3
    assert "12.0 s long; the limit is 10 s" in problems[0] and "minimum is 1 s" in problems[1]
    assert "does not exist" in problems[2]


def test_a_clip_that_does_not_fit_the_context(project, parts):
    with pytest.raises(DatasetError) as caught:
        load(project / "dataset", parts, context=200)  # 2-4 s of speech is 170-330 tokens with its prompt
    assert all("tokens; the model reads at most 200" in p for p in caught.value.problems)
    assert len(caught.value.problems) >= 3


def test_an_empty_eval_set_is_refused(project, parts, tmp_path):
    dataset = shutil.copytree(project / "dataset", tmp_path / "dataset")
    write_metadata(dataset / EVAL_CSV, [])
    with pytest.raises(DatasetError, match="lists no clips"):
        load(dataset, parts)


def test_batches_score_only_the_answer_and_split():
    pad = 99
    long = Sample(torch.arange(10), scored_from=6)
    short = Sample(torch.arange(20, 27), scored_from=4)
    batch = collate([long, short], pad)
    assert batch["input_ids"].tolist()[1] == [20, 21, 22, 23, 24, 25, 26, pad, pad, pad]
    assert batch["labels"].tolist()[0] == [IGNORE] * 6 + [6, 7, 8, 9]
    assert batch["labels"].tolist()[1] == [IGNORE] * 4 + [24, 25, 26] + [IGNORE] * 3
    assert batch["attention_mask"].sum(dim=1).tolist() == [10, 7]
    first, second = split_batch(batch, 2)
    assert batch_size(first) == batch_size(second) == 1
    assert second["input_ids"].shape == (1, 7) and torch.equal(second["labels"][0], batch["labels"][1, :7])
