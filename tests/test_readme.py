"""Every shell example in the README and the docs pages runs as written from a fresh clone,
and every relative link and #anchor between them resolves.

The ```bash blocks of README.md and then of each page in DOCS, in that fixed order, are run
line by line in one temporary copy of the repository's files (what a clone holds), so an
example may use a file an earlier one made (a page's examples may use the README's).
Skipped, and only these (each needs what a test cannot have, or would recurse):
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: the docs pages in the order their examples run (after the README's); every docs/*.md is here
DOCS = ["usage.md", "workbook.md", "checking.md", "measuring.md", "google-sheets.md",
        "model.md", "architecture.md", "performance.md", "transformer.md"]
#: (pattern, why) for every kind of line that is not run
SKIPS: list[tuple[str, str]] = [
    (r"^pip install\b", "installs the package (the tests already run it installed)"),
    (r"^python3? -m venv\b|^\. \.venv/bin/activate\b",
     "makes or enters a virtual environment (the tests already run in their own)"),
    (r"^bash \.ci/run\b", "runs this test suite: it would recurse"),
    (r"GOOGLE_APPLICATION_CREDENTIALS|--credentials", "needs a Google service-account key"),
    (r"\bKEY\b|docs\.google\.com", "needs a real Google spreadsheet"),
    (r"^python3? benchmarks/", "benchmarks take minutes (tests/test_bench_*.py run them small)"),
    (r"^sheetgen measure |--device cuda",
     "times real matmuls for a minute or needs a CUDA GPU: a benchmark "
     "(tests/test_measure.py runs it small)"),
    (r"\bcpu\.(csv|toml)\b", "reads what a skipped `sheetgen measure` wrote"),
    (r"^python3? docs/render\.py\b",
     "needs poppler-utils' pdftoppm, not a test dependency, and rewrites the README's pictures"),
]
__doc__ += "".join(f"\n- {pattern}: {why}" for pattern, why in SKIPS)


def shell_lines(text: str) -> list[str]:
    """The commands of the README's bash blocks, one per `&&` part of each line (comment-only
    and blank lines dropped), so `pip install . && sheetgen build x` still runs the build;
    a here-document (`cat > f <<'EOF'` ... `EOF`) stays one command."""
    commands = []
    for block in re.findall(r"```(?:bash|sh|shell)\n(.*?)```", text, re.S):
        lines = iter(block.replace("\\\n", " ").splitlines())  # join continued lines
        for line in lines:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            heredoc = re.search(r"<<-?\s*'?(\w+)'?", line)
            if heredoc:
                body = []
                for more in lines:
                    body.append(more)
                    if more.strip() == heredoc.group(1):
                        break
                commands.append("\n".join([line, *body]))
                continue
            commands += [part.strip() for part in line.split("&&")]
    return commands


def pages() -> list[Path]:
    return [ROOT / "README.md", *(ROOT / "docs" / name for name in DOCS)]


def all_shell_lines() -> list[str]:
    """Every page's commands, README first, then DOCS in order."""
    return [line for page in pages() for line in shell_lines(page.read_text("utf-8"))]


def skipped(line: str) -> str | None:
    for pattern, why in SKIPS:
        if re.search(pattern, line):
            return why
    return None


def clone(dest: Path) -> None:
    """The repository's files as a fresh clone has them (tracked and new, not ignored)."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, text=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    for name in listed.stdout.splitlines():
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def test_every_docs_page_is_listed():
    assert sorted(DOCS) == sorted(p.name for p in (ROOT / "docs").glob("*.md"))


def test_readme_lists_what_it_skips():
    lines = all_shell_lines()
    run = [line for line in lines if skipped(line) is None]
    assert len(run) >= 15  # the pages have examples, and most of them run
    readme = shell_lines((ROOT / "README.md").read_text("utf-8"))
    assert sum(skipped(line) is None for line in readme) >= 10  # the README's own run too
    for pattern, _ in SKIPS:  # every skip rule is used, so none hides a runnable example
        assert any(re.search(pattern, line) for line in lines), pattern


def examples() -> list[tuple[str, str]]:
    """(page, command) for every shell example, README first, then DOCS in order."""
    return [(page.name, line) for page in pages()
            for line in shell_lines(page.read_text("utf-8"))]


def example_id(index: int, page: str, line: str) -> str:
    """A test id that names the example: page, position and the command's start."""
    command = line.split("\n")[0].split(" #")[0]
    words = re.sub(r"\s+", "_", re.sub(r"[^\w.\- ]+", "", command).strip())[:48]
    return f"{page.removesuffix('.md')}-{index:02d}-{words}"


EXAMPLES = examples()


@dataclass
class Ran:
    """One example's run: its exit status and the end of what it printed on stderr."""

    returncode: int
    stderr: str


@pytest.fixture(scope="module")
def ran_examples(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, Ran]]:
    """Every runnable example, run once in order in one fresh copy of the repository (an
    example may use a file an earlier one made); each test below asserts on its own."""
    if shutil.which("sheetgen") is None:
        pytest.skip("the sheetgen command is not installed")
    where = tmp_path_factory.mktemp("clone")
    clone(where)
    env = dict(os.environ, NO_COLOR="1")
    results = {}
    for index, (_, line) in enumerate(EXAMPLES):
        if skipped(line):
            continue
        proc = subprocess.run(["bash", "-c", f"set -o pipefail; {line}"], cwd=where, env=env,
                              capture_output=True, text=True, timeout=300, check=False)
        results[index] = Ran(proc.returncode, proc.stderr.strip()[-500:])
    return where, results


@pytest.mark.xdist_group("readme")
@pytest.mark.parametrize(("index", "page", "line"),
                         [(i, page, line) for i, (page, line) in enumerate(EXAMPLES)],
                         ids=[example_id(i, page, line) for i, (page, line) in enumerate(EXAMPLES)])
def test_example_runs_as_written(ran_examples: tuple[Path, dict[int, Ran]], index: int,
                                 page: str, line: str):
    why = skipped(line)
    if why:
        pytest.skip(why)
    ran = ran_examples[1][index]
    assert ran.returncode == 0, f"{page}: {line}\n  exit {ran.returncode}: {ran.stderr}"


@pytest.mark.xdist_group("readme")
@pytest.mark.parametrize("name", ["roofline.xlsx", "h100.xlsx", "mine.xlsx", "roofline.png",
                                  "matmul.csv", "plan.sheetgen.xlsx"])
def test_the_examples_make_what_they_say(ran_examples: tuple[Path, dict[int, Ran]], name: str):
    where = ran_examples[0]
    assert (where / name).exists() and (where / name).stat().st_size > 0, name
    if name == "matmul.csv":
        assert (where / name).read_text("utf-8").startswith("row,m,k,n,")


def test_the_set_up_is_two_commands_and_the_first_installs_what_the_readme_uses():
    """A new user's first ten minutes: the README's set-up is two commands, the first makes a
    virtual environment and installs every extra a README line needs (`sheetgen plot` needs
    matplotlib, the plot extra), the second is CI's script, which runs the very test command
    the README names."""
    import tomllib

    readme = (ROOT / "README.md").read_text("utf-8")
    setup = readme.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", setup, re.S).group(1)
    commands = [ln for ln in block.splitlines() if ln.strip() and not ln.startswith("#")]
    assert len(commands) == 2 and commands[1] == "bash .ci/run", commands
    first = commands[0].split(" && ")
    assert first[0] == "python3 -m venv .venv" and first[1] == ". .venv/bin/activate"
    installed = re.fullmatch(r"pip install '\.\[([\w,]+)\]'", first[2])
    assert installed, first[2]
    uses_plot = any(line.startswith("sheetgen plot") for line in shell_lines(readme))
    assert uses_plot and "plot" in installed.group(1).split(",")
    assert first[3].startswith("sheetgen build ")
    command = re.search(r"runs the test command,\s+\*\*`([^`]+)`\*\*", setup).group(1)
    ci = (ROOT / ".ci" / "run").read_text("utf-8").strip().splitlines()
    assert ci[-1] == command  # CI runs exactly the README's test command
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))[
        "project"]["optional-dependencies"]
    assert any(d.startswith("pytest-xdist") for d in extras["test"])  # for -n and --dist
    assert "apt-get install" in "\n".join(ci) and "poppler-utils" in "\n".join(ci)


def test_the_required_preset_fields_are_documented_and_the_minimal_file_loads():
    """docs/model.md's field list is exactly what the loader requires; examples/my_gpus.toml gives
    just those fields and loads; leaving any one out is an error naming it."""
    import tomllib

    from sheetgen.errors import PresetError
    from sheetgen.inputs.presets import FIGURES, load_preset_file, parse_presets

    page = (ROOT / "docs" / "model.md").read_text("utf-8")
    section = page.split("## Your own GPU", 1)[1].split("\n## ", 1)[0]
    required = section.split("Required:", 1)[1].split("Optional:", 1)[0]
    documented = re.findall(r"`(\w+)`", required)
    assert set(documented) == {"name", "peak_flops", *FIGURES}
    path = ROOT / "examples" / "my_gpus.toml"
    gpu = load_preset_file(path).get("My GPU")
    assert gpu.peak_flops == {"bf16": 400e12, "fp32": 50e12} and gpu.hbm_bandwidth == 2.0e12
    raw = tomllib.loads(path.read_text("utf-8"))
    assert set(raw["gpu"][0]) == {"name", "peak_flops", *FIGURES}  # minimal: nothing more
    for field in FIGURES:
        less = {"gpu": [{k: v for k, v in raw["gpu"][0].items() if k != field}]}
        with pytest.raises(PresetError, match=f"missing field '{field}'"):
            parse_presets(less, "my_gpus.toml")


def github_anchor(heading: str) -> str:
    """GitHub's heading anchor: lower-case, punctuation dropped except '-' and '_', spaces to
    '-' (markup such as backticks and link brackets is punctuation too)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def prose(text: str) -> str:
    """The page without fenced code blocks and inline code, where links are not links."""
    return re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", text, flags=re.S))


def anchors(page: Path) -> set[str]:
    """Every anchor a page's headings make, duplicates numbered -1, -2 as GitHub does."""
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", re.sub(r"```.*?```", "", page.read_text(
            "utf-8"), flags=re.S), re.M):
        slug = github_anchor(heading)
        out.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return out


def test_github_anchor_rule():
    assert github_anchor("Your own GPU (`--gpu-file`)") == "your-own-gpu---gpu-file"
    assert github_anchor("Measuring and calibrating: the model against real times") == (
        "measuring-and-calibrating-the-model-against-real-times")
    assert github_anchor("Set-up: two commands on a fresh machine") == (
        "set-up-two-commands-on-a-fresh-machine")
    assert github_anchor("The pipeline's default shape") == "the-pipelines-default-shape"


def test_every_relative_link_and_anchor_resolves():
    broken, checked = [], 0
    for page in pages():
        for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", prose(page.read_text(
                "utf-8"))):
            if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto: ...
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            checked += 1
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and anchor not in anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert checked >= 20  # the README's table of contents and the pages' cross-links
    assert not broken, "\n".join(broken)


def test_anchors_are_made_per_heading(tmp_path: Path):
    page = tmp_path / "p.md"
    page.write_text("# Title here\n\n## Sub: part\n", "utf-8")
    assert anchors(page) == {"title-here", "sub-part"}
