"""Ray clusters: ``--ray`` and ``--ray-resource``, the model as replicas on a cluster's nodes behind
one backend (docs/distributed.md)."""
