"""Catalogue entries for the nn family of backend ops (merged into base.OPS)."""

OPS: dict[str, str] = {}
