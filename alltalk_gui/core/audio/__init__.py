"""Audio files: decoding any recording, levels and verdicts, working copies, clip audio."""
