"""VoiceProject: layout, validation, migration, atomic saves, and errors that leave files alone."""

import json
import os

import pytest

from alltalk_gui.core import atomic
from alltalk_gui.core.project.folder import BACKUP_FILE, SCHEMA_VERSION, ProjectError, Source, VoiceProject


def _source(n: int = 1) -> Source:
    return Source(id=f"id{n}", name=f"take {n}.wav", file=f"sources/take {n}.wav", audio_file=f"audio/id{n}.wav",
                  sha256="ab" * 32, size_bytes=10, imported_at="2026-11-22T00:00:00+00:00",
                  analysis={"duration_s": 61.5}, verdict="ok")


def test_create_makes_the_layout_and_a_valid_project_json(tmp_path):
    project = VoiceProject.create(tmp_path / "Grüße voice", language="DE")
    assert project.name == "Grüße voice"
    assert project.language == "de"
    assert (project.root / "sources").is_dir() and (project.root / "audio").is_dir()
    data = json.loads((project.root / "project.json").read_text(encoding="utf-8"))
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["sources"] == [] and data["settings"] == {}


def test_round_trip_keeps_sources_and_settings(tmp_path):
    project = VoiceProject.create(tmp_path / "p", name="Voice")
    project.sources.append(_source())
    project.settings["transcribe"] = {"backend": "faster-whisper"}
    project.save()
    again = VoiceProject.open(tmp_path / "p")
    assert again.name == "Voice"
    assert again.sources == project.sources
    assert again.settings == {"transcribe": {"backend": "faster-whisper"}}
    assert again.usable_duration_s() == pytest.approx(61.5)


def test_create_refuses_an_existing_project_and_leaves_it_alone(tmp_path):
    project = VoiceProject.create(tmp_path / "p")
    before = project.project_file.read_bytes()
    with pytest.raises(ProjectError, match="already holds a voice project"):
        VoiceProject.create(tmp_path / "p")
    assert project.project_file.read_bytes() == before


def test_create_rejects_a_bad_language(tmp_path):
    with pytest.raises(ProjectError, match="not one of the app.s languages"):
        VoiceProject.create(tmp_path / "p", language="english!")
    assert not (tmp_path / "p").exists()


def test_open_a_folder_without_project(tmp_path):
    with pytest.raises(ProjectError, match="is not a voice project"):
        VoiceProject.open(tmp_path)


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"name": "x", ', "is not valid JSON"),
        ("[1, 2]", "must hold a JSON object"),
        ('{"schema_version": 99, "name": "x"}', "newer AllTalk GUI"),
        ('{"schema_version": 1, "name": 5, "language": "en", "created": "", "settings": {}, "sources": []}',
         "'name' must be a str"),
        ('{"schema_version": 1, "name": "x", "language": "en", "created": "", "settings": {}, "sources": [],'
         ' "lanugage": "de"}', "unknown key"),
        ('{"schema_version": 1, "name": "x", "language": "en", "created": "", "settings": {}, '
         '"sources": [{"id": "a"}]}', "missing"),
        ("\udcff", "Cannot read"),
    ],
)
def test_broken_project_json_gives_a_clear_error_and_is_never_overwritten(tmp_path, content, message):
    VoiceProject.create(tmp_path / "p")
    file = tmp_path / "p" / "project.json"
    raw = content.encode("utf-8", "surrogateescape")
    file.write_bytes(raw)
    with pytest.raises(ProjectError, match=message):
        VoiceProject.open(tmp_path / "p")
    assert file.read_bytes() == raw


def test_unversioned_project_is_migrated_and_saved_at_the_current_schema(tmp_path):
    root = tmp_path / "old"
    root.mkdir()
    (root / "project.json").write_text(json.dumps({"name": "Old", "language": "en", "sources": [
        {"id": "id1", "name": "a.wav", "file": "sources/a.wav", "audio_file": "audio/id1.wav", "sha256": "00",
         "size_bytes": 1, "imported_at": "2025-01-01T00:00:00+00:00"}]}), encoding="utf-8")
    project = VoiceProject.open(root)
    assert project.sources[0].name == "a.wav"
    assert project.settings == {}
    project.save()
    data = json.loads((root / "project.json").read_text(encoding="utf-8"))
    assert data["schema_version"] == SCHEMA_VERSION
    # The pre-migration file is kept as the backup.
    assert "schema_version" not in json.loads((root / BACKUP_FILE).read_text(encoding="utf-8"))


def test_a_crash_mid_write_leaves_the_previous_project_json_intact(tmp_path, monkeypatch):
    project = VoiceProject.create(tmp_path / "p")
    project.sources.append(_source(1))
    project.save()
    before = project.project_file.read_bytes()

    real_replace = os.replace

    def crash_on_project_json(src, dst):
        if str(dst).endswith("project.json"):
            raise KeyboardInterrupt("simulated crash before the rename")
        return real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", crash_on_project_json)
    project.sources.append(_source(2))
    with pytest.raises(KeyboardInterrupt):
        project.save()
    monkeypatch.undo()
    assert project.project_file.read_bytes() == before
    assert [p.name for p in project.root.iterdir() if p.name.endswith(".tmp")] == []
    assert len(VoiceProject.open(project.root).sources) == 1


def test_a_full_disk_during_save_leaves_the_previous_file(tmp_path, monkeypatch):
    project = VoiceProject.create(tmp_path / "p")
    before = project.project_file.read_bytes()

    def full_disk(target, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic, "write_bytes", full_disk)
    with pytest.raises(OSError):
        project.save()
    assert project.project_file.read_bytes() == before


def test_atomic_write_replaces_whole_file_and_leaves_no_temp(tmp_path):
    target = tmp_path / "x.json"
    atomic.write_json(target, {"a": "Grüße"})
    atomic.write_json(target, {"b": 2})
    assert json.loads(target.read_text(encoding="utf-8")) == {"b": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.json"]


def test_the_engine_is_remembered_and_an_unknown_one_reads_as_xtts(tmp_path):
    project = VoiceProject.create(tmp_path / "p")
    assert project.engine == "xtts" and json.loads(project.project_file.read_text())["engine"] == "xtts"
    project.choose_engine("f5")
    assert VoiceProject.open(project.root).engine == "f5"
    assert VoiceProject.create(tmp_path / "q", engine="f5-tts").engine == "f5"  # an alias, stored by its name
    with pytest.raises(ProjectError, match="Unknown engine 'tortoise'"):
        VoiceProject.create(tmp_path / "r", engine="tortoise")
    assert not (tmp_path / "r" / "project.json").exists()
    data = json.loads(project.project_file.read_text())
    project.project_file.write_text(json.dumps({**data, "engine": "tortoise"}))  # a plug-in not installed here
    opened = VoiceProject.open(project.root)
    assert (opened.engine, opened.engine_unknown) == ("xtts", "tortoise")
    opened.save()
    assert json.loads(project.project_file.read_text())["engine"] == "tortoise"  # kept for where it is installed
    project.read_only = True  # opened while another program holds it
    with pytest.raises(ProjectError, match="read-only"):
        project.choose_engine("xtts")
    assert project.engine == "f5"  # nothing changed, in memory either


def _schema_1(root, settings: dict) -> dict:
    root.mkdir()
    data = {"schema_version": 1, "name": "Old", "language": "en", "created": "2026-11-01T10:00:00+00:00",
            "settings": settings, "sources": []}
    (root / "project.json").write_text(json.dumps(data), encoding="utf-8")
    return data


@pytest.mark.parametrize(("settings", "engine"), [({}, "xtts"), ({"engine": "f5"}, "f5"),
                                                  ({"engine": "xtts", "theme": "dark"}, "xtts"),
                                                  ({"engine": ""}, "xtts"), ({"engine": 5}, "xtts"),
                                                  ({"engine": "tortoise"}, "xtts")])
def test_a_schema_1_project_names_its_engine_at_the_top_level(tmp_path, settings, engine):
    """Schema 1 kept the engine in settings, and only once one was chosen: none means XTTS v2."""
    old = _schema_1(tmp_path / "old", settings)
    project = VoiceProject.open(tmp_path / "old")
    assert project.engine == engine and "engine" not in project.settings
    assert project.migrated_from == 1
    assert project.project_file.read_text(encoding="utf-8") == json.dumps(old)  # a reader does not write
    project.save()
    data = json.loads(project.project_file.read_text(encoding="utf-8"))
    assert data["schema_version"] == 2 == SCHEMA_VERSION and "engine" not in data["settings"]
    assert data["engine"] == (settings.get("engine") if settings.get("engine") == "tortoise" else engine)
    assert json.loads((tmp_path / "old" / BACKUP_FILE).read_text(encoding="utf-8")) == old


def test_the_migration_is_saved_once_by_the_projects_writer(tmp_path):
    from alltalk_gui.core.project.lock import ProjectLock

    old = _schema_1(tmp_path / "old", {"engine": "f5"})
    with ProjectLock.acquire(tmp_path / "old", "alltalk-gui dataset"):  # a writing command holds the lock ...
        project = VoiceProject.open(tmp_path / "old")  # ... so opening saves the migrated file at once
    assert project.migrated_from is None
    assert json.loads(project.project_file.read_text())["engine"] == "f5"
    assert json.loads((tmp_path / "old" / BACKUP_FILE).read_text()) == old
    written = project.project_file.stat().st_mtime_ns
    with ProjectLock.acquire(tmp_path / "old", "alltalk-gui dataset"):
        assert VoiceProject.open(tmp_path / "old").migrated_from is None  # once: schema 2 needs nothing
    assert project.project_file.stat().st_mtime_ns == written

    _schema_1(tmp_path / "app", {})
    project = VoiceProject.open(tmp_path / "app")  # the app opens, then takes the lock
    project.take_lock("AllTalk GUI app")
    try:
        assert json.loads(project.project_file.read_text())["schema_version"] == 2
    finally:
        project.release_lock()


def test_a_migration_that_cannot_be_saved_yet_waits_for_the_next_save(tmp_path, monkeypatch, caplog):
    old = _schema_1(tmp_path / "old", {"engine": "f5"})

    def full_disk(target, data):
        raise OSError(28, "No space left on device")

    real = atomic.write_bytes
    monkeypatch.setattr(atomic, "write_bytes", full_disk)
    project = VoiceProject.open(tmp_path / "old")
    project.take_lock("AllTalk GUI app")  # the app still opens it, as its writer
    try:
        assert project.lock is not None and not project.read_only and project.engine == "f5"
        assert json.loads(project.project_file.read_text()) == old and "saved at the next save" in caplog.text
        monkeypatch.setattr(atomic, "write_bytes", real)
        project.save()
        assert json.loads(project.project_file.read_text())["engine"] == "f5" and project.migrated_from is None
    finally:
        project.release_lock()


def test_an_unreadable_schema_1_file_is_refused_and_left_as_it_is(tmp_path):
    root = tmp_path / "bad"
    root.mkdir()
    raw = json.dumps({"schema_version": 1, "name": "x", "language": "en", "created": "", "settings": [],
                      "sources": []})
    (root / "project.json").write_text(raw)
    with pytest.raises(ProjectError, match="'settings' must be a dict"):
        VoiceProject.open(root)
    assert (root / "project.json").read_text() == raw
