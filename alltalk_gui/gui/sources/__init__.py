"""Step 1, Import: the recordings table and its waveform thumbnails."""
