"""``python -m bench NAME [--quick] [--only METRIC ...] [options of NAME]``.

Finds the module ``bench/NAME.py``, lets it add its own options, runs it and prints its result lines.
``python -m bench --list`` lists the benchmarks. The exit status is 0 when the run completed (targets
missed or not), 1 with ``--strict`` when a target was missed, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import pkgutil
import sys
from collections.abc import Sequence
from types import ModuleType

import bench
from bench.report import Reporter, split_selectors

#: Modules of the package that are shared helpers, not benchmarks.
HELPERS = frozenset({"report", "stats", "timing"})


def available() -> list[str]:
    """The benchmarks: every module of the package that is not a helper or private."""
    return sorted(
        info.name
        for info in pkgutil.iter_modules(bench.__path__)
        if not info.name.startswith("_") and info.name not in HELPERS
    )


def load(name: str) -> ModuleType:
    if name not in available():
        raise LookupError(f"unknown benchmark {name!r}; available: {', '.join(available()) or 'none'}")
    module = importlib.import_module(f"bench.{name}")
    if not callable(getattr(module, "run", None)):
        raise LookupError(f"bench.{name} defines no run(options, reporter)")
    return module


def build_parser(module: ModuleType | None = None, *, add_help: bool = True) -> argparse.ArgumentParser:
    doc = (module.__doc__ or "").strip().splitlines()[0] if module is not None and module.__doc__ else None
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=doc or "Run one of Kubelab's benchmarks; one JSON line per measurement.",
        add_help=add_help,
    )
    parser.add_argument("name", nargs="?", help="the benchmark to run (bench/NAME.py)")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    parser.add_argument("--quick", action="store_true", help="a smaller, faster run (for CI)")
    parser.add_argument(
        "--only",
        action="append",
        metavar="METRIC",
        help="run only these metrics: a name, a dotted prefix (sqlite.single_writer) or a glob; "
        "repeat or separate with commas",
    )
    parser.add_argument("--strict", action="store_true", help="exit with status 1 if a target is missed")
    if module is not None and hasattr(module, "add_arguments"):
        module.add_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # First find the benchmark's name (without -h, so ``NAME --help`` shows the benchmark's options).
    first, _ = build_parser(add_help=False).parse_known_args(argv)
    if first.list:
        for name in available():
            module = importlib.import_module(f"bench.{name}")
            summary = (module.__doc__ or "").strip().splitlines()
            print(f"{name}\t{summary[0] if summary else ''}")
        return 0
    if not first.name:
        if "-h" in argv or "--help" in argv:
            build_parser().print_help()
            return 0
        build_parser().print_usage(sys.stderr)
        print("python -m bench: error: name a benchmark (or --list)", file=sys.stderr)
        return 2
    try:
        module = load(first.name)
    except LookupError as error:
        print(f"python -m bench: error: {error}", file=sys.stderr)
        return 2
    options = build_parser(module).parse_args(argv)
    reporter = Reporter(first.name, only=split_selectors(options.only))
    outcome = module.run(options, reporter)
    if inspect.isawaitable(outcome):
        asyncio.run(_await(outcome))
    if options.only and not reporter.results:
        print(f"python -m bench: warning: --only {options.only} selected no metric", file=sys.stderr)
    return 1 if options.strict and not reporter.all_met() else 0


async def _await(awaitable: object) -> None:
    assert inspect.isawaitable(awaitable)
    await awaitable


if __name__ == "__main__":
    sys.exit(main())
