"""Step 3, Train: set-up (GPU, profiles, advanced settings) and the live run (plots, log, supervisor)."""
