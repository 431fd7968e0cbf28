"""Dialogs: new project, about."""
