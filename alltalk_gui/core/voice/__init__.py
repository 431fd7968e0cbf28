"""The trained voice: preview (A/B with the base model) and export to the folders other tools load."""
