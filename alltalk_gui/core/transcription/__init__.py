"""Speech recognition: Whisper backends behind one factory, the child process, model files and WER."""
