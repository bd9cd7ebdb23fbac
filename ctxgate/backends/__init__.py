"""Backends turn prompts into generations. Only the one chosen is imported (torch stays off pytest's
start-up)."""

from ctxgate.backends.base import Backend, Generation, GenerationParams, Request

__all__ = ["Backend", "Generation", "GenerationParams", "Request"]
