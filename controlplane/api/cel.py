"""CEL, the Common Expression Language: the small, side-effect-free language of admission policies.

A ``ValidatingAdmissionPolicy`` says what an object must look like as CEL expressions over the
request (``object.spec.replicas <= 5``, ``has(object.metadata.labels) && 'owner' in
object.metadata.labels``). CEL is not Turing-complete: an expression cannot loop forever or change
anything, which is why the API server can run a stranger's expression inside itself. Kubernetes
compiles each expression when the policy is written (``k8s.io/apiserver/pkg/cel``) and evaluates it
for every matching request.

The language itself is `cel-python <https://github.com/cloud-custodian/cel-python>`_, a maintained
implementation of the CEL specification. This module is the thin seam around it: ``compile`` (a
``CompileError`` in upstream's words when the text is not CEL) and ``evaluate`` (an ``EvalError``
when the expression fails on this object: a missing field, a wrong type). Kubernetes' own CEL
libraries (quantities, URLs, IPs, the authorizer) are not provided; the standard functions are
(``has``, ``size``, ``in``, ``matches``, ``startsWith``, ``all``, ``exists``...).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError


class CompileError(ValueError):
    """The text is not a CEL expression."""


class EvalError(ValueError):
    """The expression failed on these values (a missing field, a type it cannot compare)."""


_ENVIRONMENT = celpy.Environment()


@dataclass(frozen=True, slots=True)
class Program:
    """A compiled expression, ready to be evaluated many times."""

    expression: str
    _runner: Any

    def evaluate(self, variables: Mapping[str, Any]) -> Any:
        """The expression's value with ``variables`` (JSON values) bound, as plain Python (bool, int,
        str, list, dict, None); ``EvalError`` if it fails."""
        activation = {name: json_to_cel(value) for name, value in variables.items()}
        try:
            result = self._runner.evaluate(activation)
        except CELEvalError as error:
            raise EvalError(_eval_message(error)) from None
        except Exception as error:  # whatever an author's expression does, it fails as an expression
            raise EvalError(f"{type(error).__name__}: {error}") from None
        if isinstance(result, CELEvalError):
            raise EvalError(_eval_message(result))
        return _plain(result)


def compile(expression: str) -> Program:
    """``expression`` compiled; ``CompileError`` with the parser's message if it is not CEL."""
    if not isinstance(expression, str) or not expression.strip():
        raise CompileError("expression must not be empty")
    try:
        ast = _ENVIRONMENT.compile(expression)
        return Program(expression, _ENVIRONMENT.program(ast))
    except CELParseError as error:
        raise CompileError(f"ERROR: <input>: Syntax error: {' '.join(str(error).split())}") from None
    except Exception as error:  # the parser's other failures are the text's, too
        raise CompileError(f"ERROR: <input>: {error}") from None


def _eval_message(error: Any) -> str:
    args = getattr(error, "args", ())
    return str(args[0]) if args else str(error)


def _plain(value: Any) -> Any:
    """A CEL value as the JSON value it stands for."""
    if isinstance(value, celtypes.BoolType):
        return bool(value)
    if isinstance(value, celtypes.IntType | celtypes.UintType):
        return int(value)
    if isinstance(value, celtypes.DoubleType):
        return float(value)
    if isinstance(value, celtypes.StringType):
        return str(value)
    if isinstance(value, celtypes.MapType):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, celtypes.ListType):
        return [_plain(v) for v in value]
    return value


__all__ = ["CompileError", "EvalError", "Program", "compile"]
