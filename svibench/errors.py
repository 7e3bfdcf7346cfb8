"""Exceptions shared across svibench's modules."""

__all__ = ["UserError", "Diverged", "IncompatibleModel"]


class UserError(Exception):
    """An input the user can fix (a study file, a name, a data file, an option): its message is one line that says
    what is wrong and how to fix it, which the command line prints, exiting 2.  Each module's own error subclasses
    it, so the command line catches them all without importing the modules that raise them."""


class Diverged(FloatingPointError):
    """Raised by an algorithm whose state became non-finite or invalid (run status ``diverged``)."""


class IncompatibleModel(ValueError):
    """An algorithm started on a model that lacks a capability it needs (e.g. the Pólya-Gamma or auxiliary-count
    augmentation the conjugate family and the samplers run on).  A sweep never raises it: it skips such pairs."""
