"""Step 2, Transcribe & edit: transcription panel, transcript editor and dataset export."""
