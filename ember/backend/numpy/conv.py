"""The numpy backend's conv ops (being written)."""

OPS: dict = {}
