"""Prompts into token ids: tokenizers, chat turns, ids in bulk, and prompts from pieces (codec)."""
