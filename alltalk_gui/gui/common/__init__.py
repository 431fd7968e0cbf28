"""Pieces shared by several steps: workers, table base model, banner, icons, audio player."""
