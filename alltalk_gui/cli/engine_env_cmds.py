"""``engine-env NAME``: set up (or ``--remove``) the Python environment of an engine that runs in one of its own.

An engine whose model code needs packages the rest of the app cannot use (Parler-TTS: transformers 4.46.1) runs in
a small environment layered over the app's (:mod:`alltalk_gui.core.engine_api.environment`). The app makes it on
first use; this command makes it ahead of time (the test command does, before the tests), shows pip's progress,
and says where it is and what it takes. For an engine that runs in the app's own environment there is nothing to do.
"""

from __future__ import annotations

import argparse
import sys

from alltalk_gui.cli import EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("engine-env", help="set up the Python environment of an engine whose packages conflict with "
                       "the app's; the app otherwise does it on first use")
    p.add_argument("engine", help="the engine's name")
    p.add_argument("--remove", action="store_true", help="delete the environment instead")
    p.set_defaults(func=cmd_engine_env)


def cmd_engine_env(args: argparse.Namespace) -> int:
    from alltalk_gui.core.engine_api import environment
    from alltalk_gui.core.engine_api.engine import EngineError, get_engine

    try:
        engine = get_engine(args.engine)
    except EngineError as exc:
        print(f"alltalk-gui: {exc}", file=sys.stderr)
        return 2
    env = engine.environment
    if env is None:
        print(f"{engine.title} runs in the app's own environment: nothing to set up.")
        return EXIT_OK
    folder = environment.environment_dir(env)
    if args.remove:
        environment.remove(env)
        print(f"Removed {folder}.")
        return EXIT_OK
    if environment.is_ready(env):
        print(f"{engine.title}'s environment is ready in {folder}.")
        return EXIT_OK
    print(f"{engine.title} needs an environment of its own: {env.why} It takes {env.download_size}.", flush=True)
    try:
        python = environment.create(env, progress=lambda line: print(f"  {line}", flush=True))
    except environment.EngineEnvironmentError as exc:
        print(f"alltalk-gui: {exc}", file=sys.stderr)
        return 1
    print(f"Ready: {python}")
    return EXIT_OK
