"""Run reports: the JSON document, per-sample predictions, HTML, Markdown and terminal tables."""
