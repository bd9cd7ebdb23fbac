"""Workflows over stored runs and checkpoint directories, one per ``ctxgate`` verb (each module
holds its verb's parser beside its code): see ``ctxgate --help``."""
