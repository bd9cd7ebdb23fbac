"""The data tasks are built from: the shipped haystack and word lists and the modules that read
them, and RULER's QA pairs (qa). Released benchmark files are read by ``ctxgate.sources``."""
