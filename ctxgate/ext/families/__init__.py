"""The task families beyond RULER and HELMET: MRCR-style co-reference in long conversations,
BABILong-style reasoning over facts in long text, NoLiMa-style needles that share no word with
their question; their sources, data and metrics."""
