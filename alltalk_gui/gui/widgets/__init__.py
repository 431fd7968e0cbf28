"""Reusable widgets: waveforms, audio player, plots."""
