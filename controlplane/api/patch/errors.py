"""Why a patch failed, and what kube-apiserver answers for it.

Every failure is a :class:`PatchError` that carries the HTTP status and the ``Status`` body
upstream sends, so the API server turns it into a response without knowing patch internals.
The classes say whose fault it is, in RFC 5789's terms:

* :class:`InvalidPatch`, **400 BadRequest**: the patch document itself is malformed (not a JSON
  Patch array, a merge patch that is a bare string, a bad ``$retainKeys`` directive). Upstream
  builds these with ``errors.NewBadRequest(err.Error())``: the message is the error text.
* :class:`UnprocessablePatch`, **422 Invalid**: the patch is well-formed but cannot be applied to
  this object (a JSON Patch path that does not exist, a failed ``test``). Upstream builds these
  with ``errors.NewGenericServerResponse(422, ...)``, whose message is the fixed text
  ``the server rejected our request due to an error in our request`` and whose ``details`` are
  empty: the reason (our :attr:`~PatchError.detail`) never reaches the client. That is what
  ``kubectl patch`` prints, so :meth:`~PatchError.status` does the same.
* :class:`PatchTooLarge`, **413**: more than 10,000 JSON Patch operations.
* :class:`UnhandledPatchError`, **500**: upstream returns a plain Go error, which
  ``responsewriters.ErrorToAPIStatus`` reports as 500 with the error text as the message and no
  reason. Most strategic merge patch failures land here (a list element without its merge key,
  an unknown field), because ``interpretStrategicMergePatchError`` maps only a few to 400/422.

Sources (kubernetes/apiserver ``pkg/endpoints/handlers/patch.go``): ``applyJSPatch`` (JSON and
merge patch), ``strategicPatchObject`` and ``interpretStrategicMergePatchError`` (strategic);
kubernetes/apimachinery ``pkg/api/errors/errors.go`` for the Status bodies.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

GENERIC_UNPROCESSABLE_MESSAGE: Final = "the server rejected our request due to an error in our request"


class PatchError(Exception):
    """A patch that could not be applied. ``detail`` is the library's own error text."""

    status_code: ClassVar[int] = 500
    reason: ClassVar[str] = ""
    """``Status.reason``; empty for upstream's plain errors (StatusReasonUnknown)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail

    @property
    def message(self) -> str:
        """``Status.message`` as kube-apiserver sends it for this failure."""
        return self.detail

    def status(self) -> dict[str, Any]:
        """The ``Status`` object kube-apiserver answers with."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:
            body["reason"] = self.reason
        details = self._details()
        if details is not None:
            body["details"] = details
        body["code"] = self.status_code
        return body

    def _details(self) -> dict[str, Any] | None:
        return None


class InvalidPatch(PatchError):
    """The patch document is malformed: 400 BadRequest, the error text as the message."""

    status_code = 400
    reason = "BadRequest"


class UnprocessablePatch(PatchError):
    """A well-formed patch that cannot apply to this object: 422 Invalid, upstream's fixed message."""

    status_code = 422
    reason = "Invalid"

    @property
    def message(self) -> str:
        return GENERIC_UNPROCESSABLE_MESSAGE

    def _details(self) -> dict[str, Any] | None:
        return {}


class PatchTooLarge(PatchError):
    """Too many JSON Patch operations: 413 RequestEntityTooLarge."""

    status_code = 413
    reason = "RequestEntityTooLarge"

    @property
    def message(self) -> str:
        return f"Request entity too large: {self.detail}"


class UnhandledPatchError(PatchError):
    """Upstream fails with a plain Go error, which kube-apiserver reports as a bare 500."""


# -- JSON Patch (RFC 6902) --------------------------------------------------------------------


class JSONPatchOperationFailed(UnprocessablePatch):
    """Operation number ``index`` (0-based) could not be applied; ``detail`` is evanphx's text."""

    def __init__(self, detail: str, *, index: int, op: str) -> None:
        super().__init__(detail)
        self.index = index
        self.op = op


class JSONPatchTestFailed(JSONPatchOperationFailed):
    """A ``test`` operation found a different value (``testing value /x failed: test failed``)."""


# -- strategic merge patch --------------------------------------------------------------------


class UnsupportedStrategicMergePatch(InvalidPatch):
    """No schema for the kind (custom resources): ``strategic merge patch format is not supported``."""


class ListOfListsNotSupported(UnprocessablePatch):
    """A list whose elements are lists: ``lists of lists are not supported`` (422)."""


class StrategicMergePatchFailed(UnhandledPatchError):
    """Any other strategic merge patch failure; upstream answers 500 with the error text."""


class MissingMergeKey(StrategicMergePatchFailed):
    """A list element lacks its merge key: ``map: map[...] does not contain declared merge key: name``."""


class UnknownPatchField(StrategicMergePatchFailed):
    """A field the kind's schema does not have, where the patch needs to recurse into it."""
