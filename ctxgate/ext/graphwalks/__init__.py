"""GraphWalks (openai/graphwalks): BFS and parent queries over a directed graph's edge list,
generated at any length in the official prompt format, and the official parquet files."""
