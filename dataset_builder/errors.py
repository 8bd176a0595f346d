"""One error type for bad input, so every failure names file, line and field."""

from __future__ import annotations


class SourceError(Exception):
    """Bad upstream input: printed as one line `file:line: field 'x': message`."""

    def __init__(
        self, message: str, *, file: str | None = None, line: int | None = None, field: str | None = None
    ):
        self.message = message
        self.file = file
        self.line = line
        self.field = field
        super().__init__(str(self))

    def at(
        self, *, file: str | None = None, line: int | None = None, field: str | None = None
    ) -> SourceError:
        """Fill in the location where the caller knows more than the raiser."""
        return SourceError(
            self.message,
            file=self.file or file,
            line=self.line or line,
            field=self.field or field,
        )

    def __str__(self) -> str:
        where = self.file or "<input>"
        if self.line is not None:
            where += f":{self.line}"
        field = f" field '{self.field}':" if self.field else ""
        return f"{where}:{field} {self.message}"


class BuildError(Exception):
    """The source parsed but its numbers do not add up (and no errata entry explains why)."""
