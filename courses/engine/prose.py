"""A chapter's prose: one Markdown file per language, cut into sections and rendered to safe HTML.

A chapter's structure (its steps, checks and hints) is written once, in ``chapter.yaml``; its words
are written once per language, in ``en.md`` and ``zh-Hans.md``. This module reads one such file. The
file is ordinary CommonMark whose headings say where each part begins (docs/course-format.md)::

    # The control plane talks through one hub          <- the chapter's title
    Introduction ...
    ## Create a ConfigMap {#create-configmap}          <- the step with id create-configmap
    What to do, and what to look at ...
    ### Hint {#use-the-form}                           <- a hint of that step, by the hint's id
    ### Solution {#solution}                           <- why the step's solution works

The ``{#id}`` at the end of a heading is the only marker, so every heading reads naturally in its own
language. A ``###`` heading without one is an ordinary subheading of the section it is in.

Rendering happens on the server, once, when the course loads: markdown-it-py parses CommonMark (with
tables) and never passes raw HTML through (``<script>`` is shown as text); three small additions
produce what a chapter page needs:

- a link to ``diagram:<node>`` (``[the API server](diagram:apiserver)``) becomes
  ``<a class="diagram-ref" data-node="apiserver" href="#diagram">``, which the page turns into a
  pointer at that box of the live diagram;
- every kubectl command in a code block (each line of a ```` ```kubectl ```` block; a line that starts
  with ``kubectl `` or ``$ kubectl `` in a ``console``/``sh``/``shell``/``bash`` block) is wrapped in
  ``<span class="kubectl-command" data-kubectl="<the command>">``, where the page adds a "run" button
  that types it into the console;
- ``[[Ctrl+C]]`` is a key to press, ``<kbd>Ctrl+C</kbd>``.

Then nh3 (the Ammonia sanitiser) keeps only the tags and attributes listed in ``_CLEANER``, links only
to http(s) or relative addresses, and classes only where this module emits them: defence in depth, so
that a mistake here can never put a script on a student's page.

``parse_prose`` returns the rendered ``ChapterProse`` together with what the loader checks against the
chapter's structure (the line of each section, the diagram links) and the problems found in the file
itself (a missing title, a ``##`` heading without a step id, a hint outside a step, ...).
"""

from __future__ import annotations

import re
import shlex
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from courses.console.policy import shell_syntax

#: Step and hint ids: lower-case words joined by hyphens, stable forever (progress rows name them).
ID_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
#: The id of the section that explains the step's solution (so no hint may be called that).
SOLUTION_ID = "solution"
#: The scheme of links that point at a box of the diagram.
DIAGRAM_SCHEME = "diagram:"
#: Code blocks whose lines starting with ``kubectl `` (or ``$ kubectl ``) are commands to run.
SHELL_LANGUAGES = frozenset({"console", "sh", "shell", "bash", "shell-session"})

# A heading's trailing marker: "Create a ConfigMap {#create-configmap}".
_MARKER = re.compile(r"\s*\{#([^{}]*)\}\s*$")


# -- what a file becomes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class StepProse:
    """One step's words in one language: its title (plain text), its text, its hints, the solution's why.

    ``text`` is the plain text of the title and the step's own section (not its hints or solution),
    what the content linter reads to decide what the step mentions.
    """

    title: str
    html: str
    hints: Mapping[str, str]
    solution_html: str | None
    text: str = ""


@dataclass(frozen=True)
class ChapterProse:
    """A chapter's words in one language: its title, its introduction, and each step's by step id."""

    title: str
    intro_html: str
    steps: Mapping[str, StepProse]


@dataclass(frozen=True)
class ProseProblem:
    """Something wrong in a prose file, at a line (1-based) when it has one."""

    line: int | None
    message: str


@dataclass(frozen=True)
class DiagramRef:
    """A ``diagram:<node>`` link: the node it names, its line, and the step it is in ("" in the intro)."""

    node: str
    line: int
    step: str


@dataclass(frozen=True)
class KubectlCommand:
    """A command a code block offers to run (a ``data-kubectl`` in the HTML), with its line."""

    command: str
    line: int
    step: str
    #: Why the console would refuse it, for a line of a ```kubectl block (None: it is runnable).
    problem: str | None = None


@dataclass(frozen=True)
class ParsedProse:
    """A prose file, rendered, with what the loader checks against ``chapter.yaml``."""

    prose: ChapterProse
    #: The line of each step's heading, and of each hint's as (step id, hint id).
    step_lines: Mapping[str, int]
    hint_lines: Mapping[tuple[str, str], int]
    diagram_refs: tuple[DiagramRef, ...]
    commands: tuple[KubectlCommand, ...]
    problems: tuple[ProseProblem, ...]


# -- the Markdown renderer ---------------------------------------------------------------------------


def _kbd_rule(state: StateInline, silent: bool) -> bool:
    """``[[Ctrl+C]]``: a key (or keys) to press, rendered as ``<kbd>``."""
    match = re.match(r"\[\[([^\[\]\n]{1,40})\]\]", state.src[state.pos :])
    if match is None:
        return False
    if not silent:
        token = state.push("kbd", "kbd", 0)
        token.content = match.group(1).strip()
    state.pos += match.end()
    return True


def _render_kbd(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    return f"<kbd>{escapeHtml(tokens[idx].content)}</kbd>"


def _kubectl_line(line: str, language: str) -> str | None:
    """The command on ``line`` of a code block in ``language``, or None if it offers none."""
    command = line.strip()
    if language in SHELL_LANGUAGES:
        if command.startswith("$ "):
            command = command[2:].lstrip()
        if not command.startswith("kubectl "):
            return None
    elif language != "kubectl":
        return None
    return command if command and command_problem(command) is None else None


def command_problem(command: str) -> str | None:
    """Why the console would refuse ``command`` as shell syntax, or None."""
    if not command.startswith("kubectl "):
        return "not a kubectl command line: one command per line, starting with 'kubectl '"
    if shell_syntax(command) is not None:
        return (
            "the console runs kubectl alone: no pipes, redirections, ';', '&' (except in a --raw path's "
            "query) or '$(...)'"
        )
    try:
        shlex.split(command)
    except ValueError as error:
        return f"the command does not split into words: {error}"
    return None


def _render_fence(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    language = token.info.strip().split(maxsplit=1)[0] if token.info.strip() else ""
    if language != "kubectl" and language not in SHELL_LANGUAGES:
        return self.fence(tokens, idx, options, env)
    lines = token.content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    rendered: list[str] = []
    for line in lines:
        command = _kubectl_line(line, language)
        if command is None:
            rendered.append(escapeHtml(line))
        else:
            attribute = escapeHtml(command)
            rendered.append(
                f'<span class="kubectl-command" data-kubectl="{attribute}">{escapeHtml(line)}</span>'
            )
    body = "".join(f"{line}\n" for line in rendered)
    return f'<pre><code class="language-{escapeHtml(language)}">{body}</code></pre>\n'


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.inline.ruler.before("link", "kbd", _kbd_rule)
    md.add_render_rule("kbd", _render_kbd)
    md.add_render_rule("fence", _render_fence)
    return md


_MD = _markdown()

# -- the sanitiser ---------------------------------------------------------------------------------

_LANGUAGE_CLASS = re.compile(r"language-[A-Za-z0-9_+-]{1,30}")
_NODE_ID = re.compile(r"[A-Za-z0-9:$._-]{1,100}")
_EMITTED_CLASSES = {"a": {"diagram-ref"}, "span": {"kubectl-command"}}


def _attribute_filter(tag: str, attribute: str, value: str) -> str | None:
    """Keep an attribute only with a value this module emits itself."""
    if attribute == "class":
        if tag == "code":
            return value if _LANGUAGE_CLASS.fullmatch(value) else None
        allowed = _EMITTED_CLASSES.get(tag, set())
        kept = [name for name in value.split() if name in allowed]
        return " ".join(kept) or None
    if attribute == "data-node":
        return value if _NODE_ID.fullmatch(value) else None
    if attribute == "style":
        # markdown-it's table alignment, the only style it writes.
        return value if value in {"text-align:left", "text-align:center", "text-align:right"} else None
    return value


_CLEANER = nh3.Cleaner(
    tags={
        *("h1", "h2", "h3", "h4", "h5", "h6", "p", "br", "hr"),
        *("ul", "ol", "li", "code", "pre", "em", "strong", "a", "blockquote", "kbd", "span"),
        *("table", "thead", "tbody", "tr", "th", "td"),
    },
    clean_content_tags={"script", "style"},
    attributes={
        "a": {"href", "class", "data-node"},
        "code": {"class"},
        "span": {"class", "data-kubectl"},
        "ol": {"start"},
        "th": {"style"},
        "td": {"style"},
    },
    attribute_filter=_attribute_filter,
    url_schemes={"http", "https"},
    link_rel="noopener",
    strip_comments=True,
)


def sanitize(html: str) -> str:
    """``html`` with only the tags, attributes and links a chapter may use."""
    return _CLEANER.clean(html)


def render_markdown(source: str) -> str:
    """A piece of chapter Markdown as safe HTML (diagram links, kubectl commands and keys included)."""
    tokens = _MD.parse(source, {})
    _resolve_diagram_links(tokens, step="", refs=[])
    return sanitize(_MD.renderer.render(tokens, _MD.options, {}))


# -- cutting a file into sections --------------------------------------------------------------------


def _resolve_diagram_links(tokens: Sequence[Token], *, step: str, refs: list[DiagramRef]) -> None:
    """Turn ``diagram:<node>`` links into pointers at the diagram, and note which nodes they name."""
    for token in tokens:
        if token.type != "inline" or not token.children:
            continue
        line = (token.map[0] + 1) if token.map else 0
        for child in token.children:
            if child.type in ("softbreak", "hardbreak"):
                line += 1  # the link's own line, for the author's editor
            if child.type != "link_open":
                continue
            href = str(child.attrGet("href") or "")
            if not href.startswith(DIAGRAM_SCHEME):
                continue
            node = urllib.parse.unquote(href[len(DIAGRAM_SCHEME) :])
            refs.append(DiagramRef(node=node, line=line, step=step))
            child.attrs = {"class": "diagram-ref", "data-node": node, "href": "#diagram"}


def _plain_text(tokens: Sequence[Token]) -> str:
    """The words of some block tokens: text, inline code and code blocks, one line each."""
    parts: list[str] = []
    for token in tokens:
        if token.type in ("fence", "code_block"):
            parts.append(token.content)
        elif token.type == "inline":
            parts.append(_inline_text(token))
    return "\n".join(part for part in parts if part)


def _inline_text(token: Token) -> str:
    # A line break inside a paragraph separates words: it reads as a space, or the linter would see
    # the last word of one line fused with the first of the next.
    return "".join(
        " " if child.type in ("softbreak", "hardbreak") else child.content
        for child in token.children or ()
        if child.type in ("text", "code_inline", "kbd", "softbreak", "hardbreak")
    )


def _heading_title(inline: Token) -> str:
    """A heading's text without its ``{#id}`` marker, as plain text (``code`` keeps its words)."""
    source = _MARKER.sub("", inline.content)
    tokens = _MD.parseInline(source, {})
    return "".join(_inline_text(token) for token in tokens).strip()


@dataclass
class _Section:
    """A part of the file being cut: where it starts, and the tokens it holds so far."""

    kind: str  # "intro", "step", "hint", "solution"
    step: str
    id: str
    line: int
    title: str = ""
    tokens: list[Token] = field(default_factory=list)


def _commands(tokens: Sequence[Token], step: str) -> list[KubectlCommand]:
    found: list[KubectlCommand] = []
    for token in tokens:
        if token.type != "fence" or token.map is None:
            continue
        language = token.info.strip().split(maxsplit=1)[0] if token.info.strip() else ""
        for offset, line in enumerate(token.content.split("\n")):
            line_number = token.map[0] + 2 + offset
            command = _kubectl_line(line, language)
            if command is not None:
                found.append(KubectlCommand(command, line_number, step))
            elif language == "kubectl" and line.strip():
                problem = command_problem(line.strip())
                found.append(KubectlCommand(line.strip(), line_number, step, problem))
    return found


def parse_prose(source: str) -> ParsedProse:
    """Cut a chapter's prose file into its title, introduction, steps, hints and solutions, rendered."""
    problems: list[ProseProblem] = []
    tokens = _MD.parse(source, {})
    title = ""
    title_seen = False
    sections: list[_Section] = [_Section("intro", "", "", 1)]
    step: _Section | None = None
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.type != "heading_open" or token.level != 0 or token.tag not in ("h1", "h2", "h3"):
            sections[-1].tokens.append(token)
            index += 1
            continue
        inline = tokens[index + 1]
        line = (token.map[0] + 1) if token.map else 0
        marker = _MARKER.search(inline.content)
        marked_id = marker.group(1).strip() if marker else None
        if token.tag == "h3" and marked_id is None:
            # An ordinary subheading of the section it is in.
            sections[-1].tokens.extend(tokens[index : index + 3])
            index += 3
            continue
        index += 3  # heading_open, inline, heading_close
        if token.tag == "h1":
            if title_seen:
                problems.append(ProseProblem(line, "a second '# ' title: a chapter has one"))
            elif len(sections) > 1 or sections[0].tokens:
                problems.append(ProseProblem(line, "the '# ' title must come first"))
            title_seen = True
            title = _heading_title(inline)
            if marked_id is not None:
                problems.append(ProseProblem(line, "the title takes no {#id}"))
            continue
        if marked_id is None:
            problems.append(
                ProseProblem(
                    line, "a '## ' heading opens a step and must end with its id: '## Title {#step-id}'"
                )
            )
            marked_id = ""
        elif not ID_PATTERN.fullmatch(marked_id):
            problems.append(ProseProblem(line, f"{marked_id!r} is not an id: lower-case words joined by '-'"))
        if token.tag == "h2":
            step = _Section("step", marked_id, marked_id, line, title=_heading_title(inline))
            sections.append(step)
        elif step is None:
            problems.append(ProseProblem(line, "a hint or solution ('### ... {#id}') must be inside a step"))
            sections.append(_Section("orphan", "", marked_id, line))
        elif marked_id == SOLUTION_ID:
            sections.append(_Section("solution", step.id, SOLUTION_ID, line))
        else:
            sections.append(_Section("hint", step.id, marked_id, line))
    if not title_seen:
        problems.append(ProseProblem(1, "no '# ' title: the file must start with the chapter's title"))

    refs: list[DiagramRef] = []
    commands: list[KubectlCommand] = []
    intro_html = ""
    steps: dict[str, dict[str, Any]] = {}
    step_lines: dict[str, int] = {}
    hint_lines: dict[tuple[str, str], int] = {}
    for section in sections:
        _resolve_diagram_links(section.tokens, step=section.step, refs=refs)
        commands.extend(_commands(section.tokens, section.step))
        problems.extend(_images(section.tokens))
        html = sanitize(_MD.renderer.render(section.tokens, _MD.options, {}))
        if section.kind == "intro":
            intro_html = html
        elif section.kind == "step":
            if section.id in steps:
                problems.append(ProseProblem(section.line, f"a second section for step {section.id!r}"))
                continue
            step_lines[section.id] = section.line
            steps[section.id] = {
                "title": section.title,
                "html": html,
                "hints": {},
                "solution_html": None,
                "text": "\n".join(filter(None, (section.title, _plain_text(section.tokens)))),
            }
        elif section.kind == "hint" and section.step in steps:
            hints: dict[str, str] = steps[section.step]["hints"]
            if section.id in hints:
                problems.append(
                    ProseProblem(section.line, f"a second hint {section.id!r} in step {section.step!r}")
                )
                continue
            hints[section.id] = html
            hint_lines[(section.step, section.id)] = section.line
        elif section.kind == "solution" and section.step in steps:
            if steps[section.step]["solution_html"] is not None:
                problems.append(
                    ProseProblem(section.line, f"a second solution section in step {section.step!r}")
                )
                continue
            steps[section.step]["solution_html"] = html
    prose = ChapterProse(
        title=title,
        intro_html=intro_html,
        steps={step_id: StepProse(**parts) for step_id, parts in steps.items()},
    )
    return ParsedProse(
        prose=prose,
        step_lines=step_lines,
        hint_lines=hint_lines,
        diagram_refs=tuple(refs),
        commands=tuple(commands),
        problems=tuple(problems),
    )


def _images(tokens: Sequence[Token]) -> list[ProseProblem]:
    """Images are not part of a chapter (the diagram is its picture): say so rather than drop them."""
    found: list[ProseProblem] = []
    for token in tokens:
        if token.type == "inline" and any(child.type == "image" for child in token.children or ()):
            line = (token.map[0] + 1) if token.map else None
            found.append(ProseProblem(line, "images are not supported in a chapter"))
    return found


__all__ = [
    "DIAGRAM_SCHEME",
    "ID_PATTERN",
    "SOLUTION_ID",
    "ChapterProse",
    "DiagramRef",
    "KubectlCommand",
    "ParsedProse",
    "ProseProblem",
    "StepProse",
    "command_problem",
    "parse_prose",
    "render_markdown",
    "sanitize",
]
