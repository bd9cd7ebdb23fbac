"""Prompts into token ids: the tokenizers ctxgate reads through (``tokenizers``), a chat template's
turns (``chat``), ids in bulk (``ids``), and the prompt assembled from pieces, sent as its text's
own ids (``codec``)."""
