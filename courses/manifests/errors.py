"""Why a manifest is refused before anything reaches the cluster: one error type per reason.

The form checks the text the way the API server's decoder would read it (``parse.py``), and refuses
what it would refuse, or what would hurt the lab on the way there, before a single request is made:

====================  ===================================================================================
``YAMLSyntaxError``   the text is not YAML (PyYAML's message, at its line and column)
``NotText``           binary input: a NUL byte or another character YAML does not allow in text
``NotUTF8``           bytes that are not UTF-8, or the U+FFFD a browser or Django put in their place
``TooLarge``          more bytes than the API server reads in one request body (3 MiB)
``TooManyDocuments``  more documents than one submission may hold
``TooManyAliases``    more ``*alias`` references than a manifest needs: the "billion laughs" start so
``ExcessiveAliasing`` aliases that would expand into more values than the text spells out
``RecursiveAlias``    an alias inside the node it refers to: a value without end
``TooDeep``           nesting deeper than the API server decodes
``UnsupportedTag``    a ``!tag`` Kubernetes' YAML decoder does not know
``UnsupportedValue``  a value no JSON can hold (``.inf``, a ``null`` key, an enormous integer)
``DuplicateKey``      a key twice in one mapping (the API server refuses it under strict validation)
``NotAnObject``       a document that is a list or a scalar, not a mapping
``MissingField``      no ``apiVersion``, ``kind`` or ``metadata.name``, or one that is not a string
``InvalidName``       a name that cannot be a segment of the object's URL
``NothingToSubmit``   only comments, or nothing at all
====================  ===================================================================================

Each error knows where it is: ``line`` and ``column`` (1-based, in the whole text, across ``---``
documents; None when it is about the whole text) and ``document`` (1-based, or None). ``message`` is in
the student's language (it calls ``gettext`` when asked, so it follows the request's language), and
``str(error)`` puts the place in front of it. Several problems found in several documents at once come
as ``SeveralProblems``, so the student fixes them in one round; every error answers ``problems()``.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.utils.translation import gettext, ngettext


class ManifestError(ValueError):
    """A manifest refused before it reached the cluster (one of the subclasses below)."""

    def __init__(
        self, *, line: int | None = None, column: int | None = None, document: int | None = None
    ) -> None:
        super().__init__()
        self.line = line
        self.column = column
        self.document = document

    @property
    def message(self) -> str:
        """What is wrong, in the student's language, without the place."""
        raise NotImplementedError

    def problems(self) -> tuple[ManifestError, ...]:
        """The single problems this error stands for (itself, unless it groups several)."""
        return (self,)

    def __str__(self) -> str:
        if self.line is not None and self.column is not None:
            where = gettext("Line %(line)d, column %(column)d") % {"line": self.line, "column": self.column}
            return f"{where}: {self.message}"
        if self.line is not None:
            return f"{gettext('Line %(line)d') % {'line': self.line}}: {self.message}"
        return self.message


class SeveralProblems(ManifestError):
    """More than one document has a problem; ``errors`` lists them in the order of the text."""

    def __init__(self, errors: Sequence[ManifestError]) -> None:
        first = errors[0]
        super().__init__(line=first.line, column=first.column, document=first.document)
        self.errors = tuple(errors)

    @property
    def message(self) -> str:
        return ngettext(
            "%(count)d problem was found in the text.",
            "%(count)d problems were found in the text.",
            len(self.errors),
        ) % {"count": len(self.errors)}

    def problems(self) -> tuple[ManifestError, ...]:
        return self.errors

    def __str__(self) -> str:
        return "\n".join(str(error) for error in self.errors)


class YAMLSyntaxError(ManifestError):
    """The text is not valid YAML; ``problem`` (and ``context``) are PyYAML's words for it."""

    def __init__(
        self, problem: str, *, context: str | None = None, line: int | None, column: int | None
    ) -> None:
        super().__init__(line=line, column=column)
        self.problem = problem
        self.context = context

    @property
    def message(self) -> str:
        if self.context:
            return gettext("YAML syntax error: %(problem)s (%(context)s)") % {
                "problem": self.problem,
                "context": self.context,
            }
        return gettext("YAML syntax error: %(problem)s") % {"problem": self.problem}


class NotText(ManifestError):
    """A character that has no place in YAML text (a NUL byte, a control character): binary data."""

    def __init__(self, character: str, *, line: int, column: int) -> None:
        super().__init__(line=line, column=column)
        self.character = character

    @property
    def message(self) -> str:
        code = f"U+{ord(self.character):04X}"
        if self.character == "\x00":
            return gettext(
                "The text contains a NUL byte (%(code)s): this looks like binary data, not a YAML manifest."
            ) % {"code": code}
        return gettext(
            "The text contains the control character %(code)s, which YAML does not allow: "
            "this looks like binary data, not a YAML manifest."
        ) % {"code": code}


class NotUTF8(ManifestError):
    """Bytes that are not UTF-8, or U+FFFD, the character that stands in for them once decoded."""

    def __init__(
        self, *, line: int | None = None, column: int | None = None, offset: int | None = None
    ) -> None:
        super().__init__(line=line, column=column)
        self.offset = offset

    @property
    def message(self) -> str:
        if self.offset is not None:
            return gettext(
                "The text is not valid UTF-8 (byte %(offset)d). Save the file as UTF-8 and try again."
            ) % {"offset": self.offset}
        return gettext(
            "The text contains U+FFFD, the replacement character that invalid UTF-8 bytes turn into: "
            "the file was not UTF-8. Save it as UTF-8 and try again."
        )


class TooLarge(ManifestError):
    """More bytes than the API server reads in one request body."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__()
        self.size = size
        self.limit = limit

    @property
    def message(self) -> str:
        return gettext(
            "The text is %(size)d bytes, more than the %(limit)d bytes (3 MiB) the API server accepts in one "
            "request."
        ) % {"size": self.size, "limit": self.limit}


class TooManyDocuments(ManifestError):
    """More documents (objects, or empty ones between ``---``) than one submission may hold."""

    def __init__(self, limit: int, *, line: int, column: int, empty: bool = False) -> None:
        super().__init__(line=line, column=column)
        self.limit = limit
        self.empty = empty

    @property
    def message(self) -> str:
        if self.empty:
            return gettext("The text holds more than %(limit)d empty documents between ---.") % {
                "limit": self.limit
            }
        return gettext(
            "The text holds more than %(limit)d objects: submit at most %(limit)d documents at a time."
        ) % {"limit": self.limit}


class TooManyAliases(ManifestError):
    """More ``*alias`` references than the budget: how a "billion laughs" body begins."""

    def __init__(self, limit: int, *, line: int, column: int) -> None:
        super().__init__(line=line, column=column)
        self.limit = limit

    @property
    def message(self) -> str:
        return gettext(
            "The YAML uses more than %(limit)d aliases (*name). A manifest needs few if any; many aliases "
            "are "
            'how a "billion laughs" body makes a small text into an enormous value, so it is refused.'
        ) % {"limit": self.limit}


class ExcessiveAliasing(ManifestError):
    """Aliases that expand into more values than the text spells out (yaml.v2's "excessive aliasing")."""

    def __init__(self, limit: int, *, line: int, column: int) -> None:
        super().__init__(line=line, column=column)
        self.limit = limit

    @property
    def message(self) -> str:
        return gettext(
            "The aliases in this YAML would expand to more than %(limit)d values, far more than the text "
            "spells "
            'out (a "billion laughs"). Kubernetes\' YAML decoder refuses such "excessive aliasing", and so '
            "does "
            "this form."
        ) % {"limit": self.limit}


class RecursiveAlias(ManifestError):
    """An alias inside the very node it refers to: the value would never end."""

    def __init__(self, anchor: str, *, line: int, column: int) -> None:
        super().__init__(line=line, column=column)
        self.anchor = anchor

    @property
    def message(self) -> str:
        return gettext(
            "The alias *%(anchor)s is inside the node it refers to: its value would never end."
        ) % {"anchor": self.anchor}


class TooDeep(ManifestError):
    """Mappings and lists nested deeper than the API server decodes."""

    def __init__(self, limit: int, *, line: int, column: int) -> None:
        super().__init__(line=line, column=column)
        self.limit = limit

    @property
    def message(self) -> str:
        return gettext(
            "The YAML nests mappings and lists more than %(limit)d levels deep; the API server refuses "
            "bodies "
            "nested that deeply."
        ) % {"limit": self.limit}


class UnsupportedTag(ManifestError):
    """A ``!tag`` that Kubernetes' YAML decoder does not turn into JSON."""

    def __init__(self, tag: str, *, line: int, column: int) -> None:
        super().__init__(line=line, column=column)
        self.tag = tag

    @property
    def message(self) -> str:
        return gettext(
            "The YAML tag %(tag)s is not one Kubernetes understands: its decoder knows only YAML's standard "
            "types (strings, numbers, booleans, null, lists and mappings). Remove the tag."
        ) % {"tag": self.tag}


class UnsupportedValue(ManifestError):
    """A value that YAML can write but JSON cannot hold; ``reason`` is the API server's own words."""

    def __init__(
        self, reason: str, *, line: int | None, column: int | None, document: int | None = None
    ) -> None:
        super().__init__(line=line, column=column, document=document)
        self.reason = reason

    @property
    def message(self) -> str:
        return gettext("The API server cannot decode this value: %(reason)s") % {"reason": self.reason}


class DuplicateKey(ManifestError):
    """A key twice in one mapping: the API server's strict field validation refuses it."""

    def __init__(self, key: str, *, first_line: int, line: int, column: int, document: int) -> None:
        super().__init__(line=line, column=column, document=document)
        self.key = key
        self.first_line = first_line

    @property
    def message(self) -> str:
        return gettext(
            'The key "%(key)s" is already set in this mapping (line %(first)d). The API server refuses '
            "duplicate fields under strict field validation: keep one."
        ) % {"key": self.key, "first": self.first_line}


class NotAnObject(ManifestError):
    """A document that is a list or a scalar: a manifest is a mapping."""

    def __init__(self, shape: str, *, line: int, column: int, document: int) -> None:
        super().__init__(line=line, column=column, document=document)
        #: ``list`` or ``scalar``.
        self.shape = shape

    @property
    def message(self) -> str:
        if self.shape == "list":
            return gettext(
                "Document %(n)d is a list, not an object: a manifest is a mapping with apiVersion, kind and "
                "metadata (use --- between several objects)."
            ) % {"n": self.document}
        return gettext(
            "Document %(n)d is a single value, not an object: a manifest is a mapping with apiVersion, kind "
            "and metadata."
        ) % {"n": self.document}


class MissingField(ManifestError):
    """``apiVersion``, ``kind`` or ``metadata.name`` is missing, empty, or not a string."""

    def __init__(self, field: str, *, present: bool, line: int, column: int, document: int) -> None:
        super().__init__(line=line, column=column, document=document)
        self.field = field
        #: Whether the field is there (with a value that is not a non-empty string).
        self.present = present

    @property
    def message(self) -> str:
        values = {"n": self.document, "field": self.field}
        if self.field == "metadata.name" and not self.present:
            return (
                gettext(
                    "Document %(n)d has no metadata.name: applying and deleting need the object's name "
                    "(generateName only works with kubectl create)."
                )
                % values
            )
        if self.field == "metadata" and self.present:
            return gettext(
                "Document %(n)d: metadata must be a mapping (with name, and namespace if you want one)."
            ) % (values)
        if self.present:
            return gettext("Document %(n)d: %(field)s must be a non-empty string.") % values
        return (
            gettext(
                "Document %(n)d has no %(field)s: every object names its apiVersion and kind, so the API "
                "server "
                "knows what it is."
            )
            % values
        )


class InvalidName(ManifestError):
    """A name or namespace that cannot be a segment of the object's URL (apimachinery
    ``path.ValidatePathSegmentName``): ``.``, ``..``, or one with ``/`` or ``%`` in it."""

    def __init__(self, field: str, value: str, *, line: int, column: int, document: int) -> None:
        super().__init__(line=line, column=column, document=document)
        self.field = field
        self.value = value

    @property
    def message(self) -> str:
        return gettext(
            'Document %(n)d: %(field)s "%(value)s" cannot be part of the object\'s URL: it may not be "." or '
            '"..", and may not contain "/" or "%%".'
        ) % {"n": self.document, "field": self.field, "value": self.value}


class NothingToSubmit(ManifestError):
    """The text holds no object: nothing but comments, blank lines and ``---``."""

    @property
    def message(self) -> str:
        return gettext("There is nothing to submit: the text holds no object.")


__all__ = [
    "DuplicateKey",
    "ExcessiveAliasing",
    "InvalidName",
    "ManifestError",
    "MissingField",
    "NotAnObject",
    "NotText",
    "NotUTF8",
    "NothingToSubmit",
    "RecursiveAlias",
    "SeveralProblems",
    "TooDeep",
    "TooLarge",
    "TooManyAliases",
    "TooManyDocuments",
    "UnsupportedTag",
    "UnsupportedValue",
    "YAMLSyntaxError",
]
