"""Backends turn prompts into generations. Only the one chosen is imported (torch stays off pytest's
start-up)."""
