"""Workflows over stored runs and checkpoint folders, one module per ``ctxgate`` verb."""
