"""A training run's checkpoints: ``ctxgate watch`` evaluates each as it is saved, ``ctxgate bisect``
finds the first where a capability broke."""
