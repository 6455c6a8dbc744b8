"""posenc: a reproducible, self-checking study of transformer positional encodings."""

__version__ = "0.1.0"
