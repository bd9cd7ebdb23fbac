"""Checkpoints a training run saves besides Hugging Face folders, as ``--model``: PEFT adapters
(``--base-model``) and torch distributed or DeepSpeed ZeRO checkpoints (``--config-from``)."""
