"""Model engines. Only XTTS v2 for now."""
