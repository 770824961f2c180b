"""Catalogue entries for the conv family of backend ops (merged into base.OPS)."""

OPS: dict[str, str] = {}
