"""The project's error, :class:`ProjectError`, in a module of its own.

The project folder (:mod:`.folder`) and its lock (:mod:`.lock`) both raise it, and the folder uses the lock: with the
error here, neither module imports the other back.
"""

from __future__ import annotations


class ProjectError(Exception):
    """A project folder or its project.json cannot be used. The message says why and what to do."""
