"""The training dataset on disk: kept clips as wavs plus metadata CSVs, train/eval split."""
