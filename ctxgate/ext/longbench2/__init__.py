"""LongBench v2 (Bai et al., 2024; THUDM/LongBench, its v2 code): 503 multiple-choice questions
over contexts of 8K to 2M words, read from ``--data-dir``, prompted, cut and scored as its
``pred.py`` and ``result.py`` do."""
