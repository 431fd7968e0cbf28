"""The transcript as training clips: segments, cutting at pauses and the flags the editor shows."""
