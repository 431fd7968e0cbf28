"""A voice project: one folder holding everything about one voice.

Layout (later steps add their own folders)::

    project.json      name, language, the engine it trains with, schema version, settings, the imported sources
    project.json.bak  the previous project.json, kept by every save
    sources/          the original files, copied byte for byte and never modified
    audio/            normalised working copies (mono, the source's rate up to 48 kHz) made from the sources
    known_text/       the exact words of recordings, where the user has them (<source id>.txt)
    segments.json     the clips and their transcripts (transcription step)
    dataset/          metadata_train.csv, metadata_eval.csv, wavs/ (dataset export; training input)
    runs/             training runs: events, checkpoints
    previews/         generated preview sentences
    exports/          exported voice models

The project's engine (:attr:`VoiceProject.engine`) shapes every later step: clip limits and flags, the dataset's
sample rate, training. A project.json from an older version is migrated when it is read (:data:`MIGRATIONS`); the
first time a writer opens it (the app, or a command holding the project's lock), the migrated file is saved, once,
atomically, with the old one kept as ``project.json.bak``.

Every write goes through :mod:`alltalk_gui.core.atomic`. A ``project.json`` that cannot be read or does not
validate (wrong JSON types, paths that leave the folder as written or through a link: a shared project is
foreign input) raises
:class:`ProjectError` and is never overwritten: the project object is simply not created. The app and the
writing commands make themselves the project's one writer with :meth:`VoiceProject.take_lock`
(:mod:`alltalk_gui.core.project.lock`); a project opened while another program holds it, or while a training
child trains in it, is ``read_only``, and every change is refused with ``read_only_reason`` (who holds it, how to
stop a training). The dataset export also waits for a running training in the window that started it
(:meth:`VoiceProject.check_not_training`).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from alltalk_gui.core import atomic, safe_paths
from alltalk_gui.core.dataclass_keys import unknown_keys
from alltalk_gui.core.project.errors import ProjectError  # noqa: F401  (re-exported: callers name it here)

if TYPE_CHECKING:
    from alltalk_gui.core.project.lock import ProjectLock

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2
PROJECT_FILE = "project.json"
# Features measured once from the clips and read again (training's frozen front ends, each clip's speaker embedding).
FEATURE_CACHE_DIR = "feature_cache"
BACKUP_FILE = "project.json.bak"

UNNAMED_ENGINE = "xtts"
"""The engine of a project whose project.json names none: before schema 2 a project remembered its engine only once
someone chose one (``settings['engine']``), and until then it trained XTTS v2, the only engine there was and the
default since. Fixed here rather than taken from the registry's default, which may change."""

_TOP_LEVEL_KEYS = {"schema_version", "name", "language", "engine", "created", "settings", "sources"}


@dataclass
class Source:
    """One imported recording.

    ``name`` is the original file name as the user had it; ``file`` and ``audio_file`` are paths relative to
    the project folder. ``analysis`` holds the numbers from :func:`alltalk_gui.core.audio.decode.analyse` and
    ``verdict`` / ``reasons`` the plain-language judgement made from them.
    """

    id: str
    name: str
    file: str
    audio_file: str
    sha256: str
    size_bytes: int
    imported_at: str
    original_path: str = ""
    analysis: dict[str, Any] = field(default_factory=dict)
    verdict: str = "ok"
    reasons: list[str] = field(default_factory=list)

    @property
    def duration_s(self) -> float:
        return float(self.analysis.get("duration_s", 0.0))

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str) -> "Source":
        if not isinstance(data, dict):
            raise ProjectError(f"{where}: each entry of 'sources' must be an object, found {type(data).__name__}.")
        unknown = unknown_keys(cls, data)
        if unknown:
            raise ProjectError(f"{where}: unknown key(s) {', '.join(unknown)} in a source entry.")
        missing = [name for name in ("id", "name", "file", "audio_file", "sha256") if name not in data]
        if missing:
            raise ProjectError(f"{where}: a source entry is missing {', '.join(missing)}.")
        for key, value in data.items():
            kind = _SOURCE_TYPES[key]
            if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
                raise ProjectError(f"{where}: '{key}' of source {data.get('id')!r} must be {_TYPE_WORDS[kind]}, "
                                   f"found {type(value).__name__}. It was left as it is.")
        if not all(isinstance(r, str) for r in data.get("reasons", [])):
            raise ProjectError(f"{where}: 'reasons' of source {data['id']!r} must be a list of texts. It was left as "
                               "it is.")
        _check_analysis(data.get("analysis", {}), f"{where}: 'analysis' of source {data['id']!r}")
        try:
            safe_paths.plain_name(data["id"], "source id")
            for key in ("file", "audio_file"):
                safe_paths.inside(".", data[key], f"'{key}' of source {data['id']!r}")
        except safe_paths.UnsafePathError as exc:
            raise ProjectError(f"{where}: {exc} It was left as it is.") from exc
        return cls(**data)


# The JSON type of every Source field (checked on open: a shared project may hold anything).
_SOURCE_TYPES: dict[str, type] = {"id": str, "name": str, "file": str, "audio_file": str, "sha256": str,
                                  "size_bytes": int, "imported_at": str, "original_path": str, "analysis": dict,
                                  "verdict": str, "reasons": list}
_TYPE_WORDS = {str: "a text", int: "a whole number", dict: "an object", list: "a list"}
# Analysis values that the verdict, the table and the clip checks read as numbers (None: not measured).
_ANALYSIS_NUMBERS = {"duration_s", "peak_dbfs", "clipped_fraction", "silence_fraction", "speech_level_dbfs",
                     "noise_floor_dbfs", "snr_db", "sample_rate", "channels", "bit_depth"}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_analysis(analysis: dict[str, Any], where: str) -> None:
    for key in _ANALYSIS_NUMBERS & set(analysis):
        if analysis[key] is not None and not _is_number(analysis[key]):
            raise ProjectError(f"{where}: '{key}' must be a number, found {type(analysis[key]).__name__}. It was "
                               "left as it is.")
    envelope = analysis.get("envelope", [])
    if not isinstance(envelope, list) or not all(_is_number(v) for v in envelope):
        raise ProjectError(f"{where}: 'envelope' must be a list of numbers. It was left as it is.")


def _migrate_0_to_1(data: dict[str, Any]) -> dict[str, Any]:
    """Files written before the schema was versioned had no ``schema_version``, ``settings`` or ``created``."""
    data = dict(data)
    data.setdefault("settings", {})
    data.setdefault("created", _now())
    data.setdefault("sources", [])
    data["schema_version"] = 1
    return data


def _migrate_1_to_2(data: dict[str, Any]) -> dict[str, Any]:
    """Schema 2 names the project's engine at the top level. Schema 1 kept it in ``settings['engine']``, written only
    when the Train page or ``train --engine`` chose one; a project without it trained XTTS v2 (:data:`UNNAMED_ENGINE`).
    A name this version does not know (a plug-in not installed here) is kept as it is."""
    data = dict(data)
    settings = data.get("settings")
    engine = None
    if isinstance(settings, dict):
        settings = dict(settings)
        engine = settings.pop("engine", None)
        data["settings"] = settings
    data["engine"] = engine if isinstance(engine, str) and engine.strip() else UNNAMED_ENGINE
    data["schema_version"] = 2
    return data


# MIGRATIONS[n] turns a schema-n dict into a schema-(n+1) dict. Add one entry per schema change.
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {0: _migrate_0_to_1, 1: _migrate_1_to_2}


class VoiceProject:
    """An open project folder. Create with :meth:`create` or :meth:`open`; change, then :meth:`save`."""

    def __init__(self, root: Path, name: str, language: str, created: str,
                 settings: dict[str, Any] | None = None, sources: list[Source] | None = None,
                 engine: str = UNNAMED_ENGINE) -> None:
        self.root = Path(root)
        self.name = name
        self.language = language
        self.stored_engine = engine  # as project.json names it (engine: the one used)
        self.created = created
        self.settings: dict[str, Any] = settings or {}
        self.sources: list[Source] = sources or []
        self.read_only = False  # opened while another program holds the lock: every save is refused
        self.read_only_reason = ""  # why, in words (who holds it; a training: which run, how to stop it)
        self.lock: ProjectLock | None = None  # held while this object is the project's one writer
        self.migrated_from: int | None = None  # the older schema project.json had when opened, until saved

    # -- one writer (see alltalk_gui.core.project.lock) -----------------------------------------------------
    def take_lock(self, program: str) -> None:
        """Become the project's one writer until :meth:`release_lock`.

        Raises:
            lock.ProjectLockedError (a ProjectError): another live process holds it, or a training child trains in
                the project (:class:`~alltalk_gui.core.project.lock.TrainingRunningError`); the message names it.
        """
        from alltalk_gui.core.project.lock import ProjectLock

        if self.lock is None:
            self.lock = ProjectLock.acquire(self.root, program)
            self.read_only, self.read_only_reason = False, ""
            self.save_migration()

    def save_migration(self) -> None:
        """Save project.json now if it was read in an older schema (once: the old file stays as the backup).

        Call only as the project's one writer (the app after :meth:`take_lock`, which calls it; a command holding
        the lock, which :meth:`open` sees). A file that cannot be written now (a full disk) is logged and left as
        it is: the project stays migrated in memory and is saved at the next save.
        """
        if self.migrated_from is not None and not self.read_only:
            try:
                self.save()
            except OSError as exc:
                log.warning("%s: the migrated project.json could not be saved yet (%s); it is saved at the next "
                            "save.", self.project_file, exc)

    def open_read_only(self, reason: BaseException | str | None = None) -> None:
        """Use the project without changing it; ``reason`` (the lock error) says why to every refused change."""
        self.read_only, self.read_only_reason = True, str(reason or "")

    def check_writable(self) -> None:
        """Raises ProjectError when the project is open read-only (call before changing anything)."""
        if self.read_only and self.read_only_reason:
            raise ProjectError(f"{self.root} is open read-only, so nothing was changed: {self.read_only_reason}")
        if self.read_only:
            raise ProjectError(f"{self.root} is open read-only (another program holds it), so nothing was changed. "
                               "Close it there and open the project again to make changes.")

    def check_not_training(self) -> None:
        """Raises ProjectError while a training runs in the project (even one this window started): it reads the
        dataset, which must not change under it."""
        from alltalk_gui.core.project.lock import running_training, training_sentence

        training = running_training(self.root)
        if training is not None:
            raise ProjectError(f"The training reads the dataset while it runs, so the dataset was not changed. "
                               f"{training_sentence(self.root, training)}")

    def release_lock(self) -> None:
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    # -- the engine it trains with ------------------------------------------------------------------------------
    @property
    def engine(self) -> str:
        """The registry name of the engine the project trains with (project.json's ``engine``). A name this version
        does not know (a plug-in that is not installed here, or a typing error) reads as the default engine, for this
        session only: project.json keeps what it says (:attr:`engine_unknown` tells)."""
        from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE, EngineError, engine_name

        try:
            return engine_name(self.stored_engine)
        except EngineError:
            return DEFAULT_ENGINE

    @property
    def engine_unknown(self) -> str | None:
        """The engine project.json names when this version does not have it, else None."""
        from alltalk_gui.core.engine_api.engine import EngineError, engine_name

        try:
            engine_name(self.stored_engine)
            return None
        except EngineError:
            return self.stored_engine

    def choose_engine(self, name: str) -> None:
        """Make ``name`` (a registry name) the project's engine, saving project.json when that changes it. What the
        change means for the clips and the dataset is :func:`alltalk_gui.core.dataset.engine_switch.switch_engine`'s
        to do (it calls this).

        Raises:
            ProjectError: the project is open read-only; nothing changes.
        """
        if self.stored_engine != name:
            self.check_writable()
            previous, self.stored_engine = self.stored_engine, name
            try:
                self.save()
            except BaseException:
                self.stored_engine = previous
                raise

    # -- folders -------------------------------------------------------------------------------------------
    @property
    def project_file(self) -> Path:
        return self.root / PROJECT_FILE

    @property
    def sources_dir(self) -> Path:
        return self.root / "sources"

    @property
    def audio_dir(self) -> Path:
        return self.root / "audio"

    @property
    def known_text_dir(self) -> Path:
        return self.root / "known_text"

    @property
    def segments_file(self) -> Path:
        return self.root / "segments.json"

    @property
    def dataset_dir(self) -> Path:
        return self.root / "dataset"

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    @property
    def previews_dir(self) -> Path:
        return self.root / "previews"

    @property
    def exports_dir(self) -> Path:
        return self.root / "exports"

    def path(self, relative: str) -> Path:
        """Absolute path of a project-relative path stored in project.json.

        Raises:
            safe_paths.UnsafePathError: ``relative`` is absolute or climbs out of the project with ``..``.
        """
        return safe_paths.inside(self.root, relative)

    # -- life cycle -----------------------------------------------------------------------------------------
    @classmethod
    def create(cls, root: str | os.PathLike[str], name: str | None = None, language: str = "en",
               engine: str | None = None) -> "VoiceProject":
        """Create a new project in ``root`` (created if needed; must not already hold a project) that trains with
        ``engine`` (a registry name or alias; None: the default engine).

        Raises:
            ProjectError: ``root`` already holds a project.json, or is a file, or cannot be written, or no engine has
                that name.
        """
        root = Path(root).expanduser().absolute()
        if (root / PROJECT_FILE).exists():
            raise ProjectError(f"{root} already holds a voice project. Open it instead of creating a new one.")
        if root.exists() and not root.is_dir():
            raise ProjectError(f"{root} is a file, not a folder.")
        language = _check_language(language)
        engine = _check_engine(engine)
        try:
            root.mkdir(parents=True, exist_ok=True)
            project = cls(root, name or root.name, language, _now(), engine=engine)
            project.ensure_folders()
            project.save()
        except OSError as exc:
            raise ProjectError(f"Cannot create a project in {root}: {exc.strerror or exc}.") from exc
        return project

    @classmethod
    def open(cls, root: str | os.PathLike[str]) -> "VoiceProject":
        """Open the project in ``root``, migrating an older schema in memory; saved at once when this process holds
        the project's lock (a writing command), else when the app takes the lock or at the next save.

        Raises:
            ProjectError: no project there, or project.json is unreadable, not JSON, from a newer app, or invalid.
        """
        root = Path(root).expanduser().absolute()
        file = root / PROJECT_FILE
        if not file.is_file():
            raise ProjectError(f"{root} is not a voice project (no {PROJECT_FILE}). Create one with 'New project'.")
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ProjectError(f"Cannot read {file}: {exc}. The file was left as it is.") from exc
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ProjectError(
                f"{file} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}). "
                f"It was left as it is; fix it by hand or restore {BACKUP_FILE}."
            ) from exc
        version = data.get("schema_version", 0) if isinstance(data, dict) else None
        project = cls._from_dict(root, _migrate(data, file), file)
        if version != SCHEMA_VERSION:
            project.migrated_from = version
            if _lock_held_here(root):
                project.save_migration()
        return project

    def save(self) -> None:
        """Write project.json atomically, keeping the previous version as project.json.bak.

        Raises:
            ProjectError: the project was opened read-only (another program holds its lock).
        """
        self.check_writable()
        if self.project_file.exists():
            atomic.copy_file(self.project_file, self.root / BACKUP_FILE)
        atomic.write_json(self.project_file, self.to_dict())
        self.migrated_from = None

    def ensure_folders(self) -> None:
        self.sources_dir.mkdir(exist_ok=True)
        self.audio_dir.mkdir(exist_ok=True)

    # -- sources --------------------------------------------------------------------------------------------
    def source(self, source_id: str) -> Source:
        for src in self.sources:
            if src.id == source_id:
                return src
        raise KeyError(source_id)

    def find_by_hash(self, sha256: str) -> Source | None:
        return next((s for s in self.sources if s.sha256 == sha256), None)

    def usable_duration_s(self) -> float:
        """Seconds of audio in sources whose verdict is not 'unusable'."""
        return sum(s.duration_s for s in self.sources if s.verdict != "unusable")

    # -- (de)serialisation ----------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "name": self.name,
            "language": self.language,
            "engine": self.stored_engine,
            "created": self.created,
            "settings": self.settings,
            "sources": [asdict(s) for s in self.sources],
        }

    @classmethod
    def _from_dict(cls, root: Path, data: dict[str, Any], file: Path) -> "VoiceProject":
        unknown = sorted(set(data) - _TOP_LEVEL_KEYS)
        if unknown:
            raise ProjectError(f"{file}: unknown key(s) {', '.join(unknown)}. It was left as it is.")
        for key, kind in (("name", str), ("language", str), ("engine", str), ("created", str), ("settings", dict),
                          ("sources", list)):
            if not isinstance(data.get(key), kind):
                raise ProjectError(
                    f"{file}: '{key}' must be a {kind.__name__}, found {type(data.get(key)).__name__}. "
                    "It was left as it is."
                )
        sources = [Source.from_dict(s, str(file)) for s in data["sources"]]
        for source in sources:  # written inside, but a link in a shared project's folder could still lead out
            for key in ("file", "audio_file"):
                try:
                    safe_paths.resolved_inside(root, getattr(source, key), f"'{key}' of source {source.id!r}")
                except safe_paths.UnsafePathError as exc:
                    raise ProjectError(f"{file}: {exc} It was left as it is.") from exc
        return cls(root, data["name"], data["language"], data["created"], data["settings"], sources, data["engine"])


def _migrate(data: Any, file: Path) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ProjectError(f"{file} must hold a JSON object, found {type(data).__name__}. It was left as it is.")
    version = data.get("schema_version", 0)
    if not isinstance(version, int) or version < 0:
        raise ProjectError(f"{file}: 'schema_version' must be a whole number, found {version!r}.")
    if version > SCHEMA_VERSION:
        raise ProjectError(
            f"{file} was written by a newer AllTalk GUI (schema {version}); this version reads up to schema "
            f"{SCHEMA_VERSION}. Update the app. The file was left as it is."
        )
    while version < SCHEMA_VERSION:
        data = MIGRATIONS[version](data)
        version = data["schema_version"]
    return data


def _check_engine(engine: str | None) -> str:
    """The registry name of ``engine`` (an alias included; None: the default engine). Raises ProjectError."""
    from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE, EngineError, engine_name

    try:
        return engine_name(engine or DEFAULT_ENGINE)
    except EngineError as exc:
        raise ProjectError(str(exc)) from exc


def _lock_held_here(root: Path) -> bool:
    """Whether this process holds the project's lock (a writing command took it before opening the project)."""
    from alltalk_gui.core.project.lock import held_by_this_process

    return held_by_this_process(root)


def _check_language(language: str) -> str:
    """The project code for ``language`` (one of XTTS v2's 17; ``zh`` -> ``zh-cn``). Raises ProjectError."""
    from alltalk_gui.core.engine_api.languages import UnknownLanguage, normalise

    try:
        return normalise(language)
    except UnknownLanguage as exc:
        raise ProjectError(str(exc)) from exc


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
