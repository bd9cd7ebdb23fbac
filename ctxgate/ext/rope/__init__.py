"""Context extension without retraining: ``--rope-scaling JSON`` and ``--model-override
KEY=VALUE``, the config changes every backend applies and the window they give."""
