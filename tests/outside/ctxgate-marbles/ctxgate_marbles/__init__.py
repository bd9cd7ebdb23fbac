"""A team's own long-context task family, built on ctxgate's public face alone (``ctxgate.api``):
``count_marbles`` lists marbles, one per line, and asks how many are of the color
``--marble-color`` names. Installed, its ``ctxgate`` entry point makes it part of every run."""
