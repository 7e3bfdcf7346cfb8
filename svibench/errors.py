"""Exceptions shared across svibench's modules."""

__all__ = ["Diverged", "IncompatibleModel"]


class Diverged(FloatingPointError):
    """Raised by an algorithm whose state became non-finite or invalid (run status ``diverged``)."""


class IncompatibleModel(ValueError):
    """An algorithm started on a model that lacks a capability it needs (e.g. the Pólya-Gamma or auxiliary-count
    augmentation the conjugate family and the samplers run on).  A sweep never raises it: it skips such pairs."""
