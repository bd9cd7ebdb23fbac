"""RULERv2 (NVIDIA-NeMo/Skills, branch ``chsieh/ruler2``): twelve tasks, multi-key and
multi-value needles and HotpotQA documents, each at four levels, built as the reference does."""
