"""Labelled examples, dataset versions, retraining runs and the model registry (feedback loop)."""
