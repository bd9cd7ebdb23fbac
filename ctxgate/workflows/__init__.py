"""Workflows over stored runs and checkpoint directories, one per ``ctxgate`` verb (each module
holds its verb's parser beside its code): diff, bisect, trend, watch, metrics, judge, rescore, data.
"""
