"""Reasoning models: the thought split off each output before scoring and counted, held to a
budget by the engine or by budget forcing, and gated on the samples a budget cut."""
