"""MRCR v2 (google-deepmind/eval_hub ``mrcr_v2``) as ctxgate tasks: the reference's generator
replayed at any length, its scorer, and its texts through the data door."""
