"""The numpy backend's nn ops (being written)."""

OPS: dict = {}
