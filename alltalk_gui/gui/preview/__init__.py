"""Step 4, Preview & export: generation, A/B comparison and export."""
