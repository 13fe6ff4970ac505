"""The one exception the codemod raises (defined with the tool's other errors)."""

from eagle3lint.errors import CodemodRefused

__all__ = ["CodemodRefused"]
