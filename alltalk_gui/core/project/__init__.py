"""The voice project folder: project.json, imported sources and how much audio is enough."""
