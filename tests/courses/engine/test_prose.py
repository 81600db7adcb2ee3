"""The prose renderer: a chapter's Markdown cut into sections, rendered, and never unsafe."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from courses.engine.prose import parse_prose, render_markdown, sanitize

CHAPTER = """\
# The first chapter

An introduction with [the API server](diagram:apiserver).

## Create a ConfigMap {#create-configmap}

Create `app-config`.

### More about it

Still the step's text.

### Use the form {#use-the-form}

The hint's text.

### Why {#solution}

The solution's why.

## Watch it {#watch}

Run a watch.
"""


def test_a_chapter_is_cut_into_title_intro_steps_hints_and_solution() -> None:
    parsed = parse_prose(CHAPTER)
    assert parsed.problems == ()
    prose = parsed.prose
    assert prose.title == "The first chapter"
    assert "An introduction" in prose.intro_html
    assert list(prose.steps) == ["create-configmap", "watch"]
    step = prose.steps["create-configmap"]
    assert step.title == "Create a ConfigMap"
    assert "<code>app-config</code>" in step.html
    # A ### heading without {#id} is an ordinary subheading of the step.
    assert "<h3>More about it</h3>" in step.html and "Still the step's text." in step.html
    assert "hint's text" not in step.html and "solution's why" not in step.html
    assert step.hints == {"use-the-form": "<p>The hint's text.</p>\n"}
    assert step.solution_html == "<p>The solution's why.</p>\n"
    assert prose.steps["watch"].solution_html is None
    assert parsed.step_lines == {"create-configmap": 5, "watch": 21}
    assert parsed.hint_lines == {("create-configmap", "use-the-form"): 13}


def test_the_step_text_the_linter_reads_is_title_and_own_section_only() -> None:
    text = parse_prose(CHAPTER).prose.steps["create-configmap"].text
    assert "Create a ConfigMap" in text and "app-config" in text and "More about it" in text
    assert "hint's text" not in text and "solution's why" not in text


def test_a_heading_title_is_plain_text() -> None:
    parsed = parse_prose("# Using `kubectl` *now*\n\n## Run **it** `kubectl get` {#run}\n\nGo.\n")
    assert parsed.prose.title == "Using kubectl now"
    assert parsed.prose.steps["run"].title == "Run it kubectl get"


def test_headings_inside_code_blocks_are_not_sections() -> None:
    parsed = parse_prose("# T\n\n## S {#s}\n\n```sh\n# a comment\n## another {#x}\n```\n")
    assert parsed.problems == ()
    assert list(parsed.prose.steps) == ["s"]


@pytest.mark.parametrize(
    ("source", "line", "fragment"),
    [
        ("Intro first.\n\n# T\n", 3, "title must come first"),
        ("## S {#s}\n", 1, "no '# ' title"),
        ("# T\n\n# Again\n", 3, "a second '# ' title"),
        ("# T {#t}\n", 1, "the title takes no {#id}"),
        ("# T\n\n## No id\n", 3, "must end with its id"),
        ("# T\n\n## Bad {#Bad_Id}\n", 3, "'Bad_Id' is not an id"),
        ("# T\n\n### Hint {#h}\n", 3, "must be inside a step"),
        ("# T\n\n## S {#s}\n\n## S again {#s}\n", 5, "a second section for step 's'"),
        ("# T\n\n## S {#s}\n\n### A {#h}\n\n### B {#h}\n", 7, "a second hint 'h'"),
        ("# T\n\n## S {#s}\n\n### A {#solution}\n\n### B {#solution}\n", 7, "a second solution section"),
        ("# T\n\n## S {#s}\n\n![a picture](http://example.org/p.png)\n", 5, "images are not supported"),
    ],
)
def test_problems_in_a_prose_file_are_reported_with_their_line(source: str, line: int, fragment: str) -> None:
    problems = parse_prose(source).problems
    assert any(p.line == line and fragment in p.message for p in problems), problems


# -- rendering and sanitising ------------------------------------------------------------------------


def test_raw_html_is_shown_as_text_never_passed_through() -> None:
    html = render_markdown('<script>alert(1)</script>\n\nText <img src=x onerror="alert(1)"> <b>bold</b>\n')
    assert "<script" not in html and "<img" not in html and "<b>" not in html
    assert "&lt;script&gt;" in html and "&lt;b&gt;bold&lt;/b&gt;" in html


def test_javascript_and_other_schemes_never_become_links() -> None:
    html = render_markdown(
        "[a](javascript:alert(1)) [b](JAVASCRIPT:alert(1)) [c](data:text/html,x) [d](vbscript:x) "
        "[e](file:///etc/passwd) [f](ftp://example.org/)\n"
    )
    assert "href" not in html, html


def test_http_https_and_relative_links_are_kept_with_noopener() -> None:
    html = render_markdown(
        "[a](https://kubernetes.io/docs/) [b](http://example.org) [c](/courses/) [d](#top)\n"
    )
    assert '<a href="https://kubernetes.io/docs/" rel="noopener">a</a>' in html
    assert '<a href="http://example.org" rel="noopener">b</a>' in html
    assert '<a href="/courses/" rel="noopener">c</a>' in html
    assert '<a href="#top" rel="noopener">d</a>' in html


def test_a_diagram_link_becomes_a_pointer_at_the_diagram() -> None:
    html = render_markdown("See [the API server](diagram:apiserver) and [you](diagram:user:$student).\n")
    assert (
        '<a class="diagram-ref" data-node="apiserver" href="#diagram" rel="noopener">the API server</a>'
        in html
    )
    assert 'data-node="user:$student"' in html
    parsed = parse_prose("# T\n\n[x](diagram:etcd)\n\n## S {#s}\n\nTo [k](diagram:kubelet:node-9).\n")
    assert [(r.node, r.line, r.step) for r in parsed.diagram_refs] == [
        ("etcd", 3, ""),
        ("kubelet:node-9", 7, "s"),
    ]


def test_the_sanitiser_refuses_classes_and_attributes_the_renderer_does_not_emit() -> None:
    html = sanitize(
        '<a class="diagram-ref evil" data-node="x onmouseover=1" href="#diagram" onclick="x()">a</a>'
        '<span class="kubectl-command other" data-kubectl="kubectl get pods" style="color:red">k</span>'
        '<p class="big" id="x">p</p><code class="language-sh">c</code><code class="x">d</code>'
        '<div>block</div><iframe src="https://evil.example"></iframe><style>p{}</style>'
    )
    assert 'class="diagram-ref"' in html and "evil" not in html and "onclick" not in html
    assert "data-node" not in html  # a value that is no node id is dropped
    assert '<span class="kubectl-command" data-kubectl="kubectl get pods">k</span>' in html
    assert "<p>p</p>" in html and 'class="language-sh"' in html and "<code>d</code>" in html
    assert "<div" not in html and "<iframe" not in html and "<style" not in html and "p{}" not in html


def test_a_kubectl_block_offers_each_command_to_run() -> None:
    html = render_markdown("```kubectl\nkubectl get cm -w\nkubectl get po -o wide\n```\n")
    assert (
        '<pre><code class="language-kubectl">'
        '<span class="kubectl-command" data-kubectl="kubectl get cm -w">kubectl get cm -w</span>\n'
        '<span class="kubectl-command" data-kubectl="kubectl get po -o wide">kubectl get po -o wide</span>\n'
        "</code></pre>"
    ) in html


def test_a_console_block_offers_its_kubectl_lines_but_not_output_or_shell_syntax() -> None:
    html = render_markdown(
        "```console\n$ kubectl get pods\nNAME  READY\nkubectl describe pod web\n"
        "$ kubectl get pods | grep web\n$ ls -l\n```\n"
    )
    assert '<span class="kubectl-command" data-kubectl="kubectl get pods">$ kubectl get pods</span>' in html
    assert 'data-kubectl="kubectl describe pod web"' in html
    assert html.count("data-kubectl") == 2
    assert "NAME  READY\n" in html and "$ ls -l\n" in html


def test_a_command_with_quotes_is_escaped_in_its_attribute() -> None:
    html = render_markdown("```kubectl\nkubectl annotate pod web note=\"two words\" other='x'\n```\n")
    assert "data-kubectl=\"kubectl annotate pod web note=&quot;two words&quot; other='x'\"" in html


def test_other_code_blocks_are_plain() -> None:
    html = render_markdown("```yaml\nkind: Pod # kubectl get pods\n```\n\n    kubectl get pods\n")
    assert "data-kubectl" not in html
    assert '<code class="language-yaml">' in html


def test_a_kubectl_block_line_the_console_would_refuse_is_a_problem() -> None:
    parsed = parse_prose(
        "# T\n\n## S {#s}\n\n```kubectl\nkubectl get pods\nkubectl get pods | wc -l\nls\n```\n"
    )
    found = [(c.command, c.line, c.problem is not None) for c in parsed.commands]
    assert found == [("kubectl get pods", 6, False), ("kubectl get pods | wc -l", 7, True), ("ls", 8, True)]


def test_an_ampersand_is_a_commands_only_in_the_query_of_a_raw_path() -> None:
    raw = 'kubectl get --raw "/api/v1/namespaces/default/configmaps?resourceVersion=5&limit=1"'
    parsed = parse_prose(f"# T\n\n## S {{#s}}\n\n```kubectl\n{raw}\nkubectl get pods & sleep 1\n```\n")
    found = [(c.command, c.problem) for c in parsed.commands]
    assert found[0] == (raw, None)
    assert found[1][0] == "kubectl get pods & sleep 1"
    assert found[1][1] is not None and found[1][1].startswith("the console runs kubectl alone")
    html = render_markdown(f"```console\n$ {raw}\n$ kubectl get pods -l 'a&b'\n```\n")
    assert html.count("data-kubectl") == 1 and "resourceVersion=5&amp;limit=1" in html


def test_keys_tables_and_lists_render() -> None:
    html = render_markdown(
        "Press [[Ctrl+C]].\n\n| a | b |\n|--:|---|\n| 1 | 2 |\n\n1. one\n2. two\n\n> note\n"
    )
    assert "<kbd>Ctrl+C</kbd>" in html
    assert '<th style="text-align:right">a</th>' in html and "<td>2</td>" in html
    assert "<ol>" in html and "<li>one</li>" in html and "<blockquote>" in html


# -- whatever the Markdown, only the allowed HTML comes out --------------------------------------------

ALLOWED = {
    "h1": set(), "h2": set(), "h3": set(), "h4": set(), "h5": set(), "h6": set(), "p": set(), "br": set(),
    "hr": set(), "ul": set(), "ol": {"start"}, "li": set(), "code": {"class"}, "pre": set(), "em": set(),
    "strong": set(), "a": {"href", "class", "data-node", "rel"}, "blockquote": set(), "kbd": set(),
    "span": {"class", "data-kubectl"}, "table": set(), "thead": set(), "tbody": set(), "tr": set(),
    "th": {"style"}, "td": {"style"},
}  # fmt: skip


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, attrs))


PIECES = st.sampled_from(
    [
        "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "<a href='javascript:x'>", "[a](",
        "javascript:alert(1)", ")", "](diagram:", "apiserver", '" onclick="x', "```", "```kubectl\n",
        "```console\n", "$ kubectl get pods", "kubectl ", "\n", "\n\n", "# ", "## ", "### ", "{#", "}",
        "[[", "]]", "|", "---", "> ", "- ", "1. ", "`", "*", "<", ">", "&", "'", '"', "data:text/html,x",
        "<style>", "<!--", "-->", "<iframe>", "\\", "http://example.org", "x",
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(PIECES, st.text(max_size=8)), max_size=40).map("".join))
def test_any_markdown_renders_only_allowed_tags_attributes_and_links(source: str) -> None:
    for html in (render_markdown(source), *_all_html(source)):
        parser = _Tags()
        parser.feed(html)
        for tag, attrs in parser.found:
            assert tag in ALLOWED, (tag, html)
            for name, value in attrs:
                assert name in ALLOWED[tag], (tag, name, html)
                if name == "href":
                    assert value is not None
                    assert (
                        value.startswith(("http://", "https://", "/", "#")) or ":" not in value.split("/")[0]
                    ), value
                if name == "class":
                    assert value in {"diagram-ref", "kubectl-command"} or (value or "").startswith(
                        "language-"
                    )


def _all_html(source: str) -> list[str]:
    prose = parse_prose(source).prose
    parts = [prose.intro_html]
    for step in prose.steps.values():
        parts += [step.html, step.solution_html or "", *step.hints.values()]
    return parts
