"""Run reports: the JSON document (schema in ``schema.py``), per-sample predictions, Markdown and terminal tables."""
