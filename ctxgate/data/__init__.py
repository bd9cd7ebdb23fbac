"""The data tasks are built from: the shipped haystack and word lists (files in this folder) and the modules that
read them (haystacks, words) and the QA pairs of RULER's qa tasks (qa). Released benchmark files are read by
``ctxgate.sources``."""
