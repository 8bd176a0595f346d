"""The builder's errors: bad input (one line naming file, line and field), numbers that do not add up."""

from __future__ import annotations


class SourceError(Exception):
    """Bad input, printed as one line `file:line: field 'x': message`."""

    def __init__(
        self, message: str, *, file: str | None = None, line: int | None = None, field: str | None = None
    ):
        self.message, self.file, self.line, self.field = message, file, line, field
        super().__init__(str(self))

    def at(self, *, file: str | None = None, line: int | None = None) -> SourceError:
        """The same error, with the location the caller knows where the raiser left it out."""
        return SourceError(self.message, file=self.file or file, line=self.line or line, field=self.field)

    def __str__(self) -> str:
        line = "" if self.line is None else f":{self.line}"
        field = f" field '{self.field}':" if self.field else ""
        return f"{self.file or '<input>'}{line}:{field} {self.message}"


class BuildError(Exception):
    """The source parsed but its numbers do not add up (and no errata entry explains why)."""
