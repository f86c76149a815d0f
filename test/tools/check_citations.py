#!/usr/bin/env python3
"""Fails when the sources or docs cite a repository path that does not exist.

Usage: check_citations.py SRC_DIR      check the tree at SRC_DIR
       check_citations.py --self-test  check a generated tree with known broken citations

A citation is
- a token that starts with one of the repository's top-level directories (`docs/design.md`,
  `passes/Verify.cpp:42`, `tools/amp-run/*`), resolved from the root;
- a path after a lit or CMake variable naming the root or the current directory;
- a relative markdown link target, resolved from the page that holds it;
- a bare upper-case markdown name or a path into a notes directory: the design notes of
  another project, which users do not have.
Trailing punctuation, `#anchors` and `:line` suffixes are dropped; placeholders (`<model>`,
`{a,b}`, `*`, `...`, upper-case words such as `MODEL`) resolve by glob; a path without an
extension may name a module (`runtime/plan/MemoryPlan` for MemoryPlan.h/.cpp). Build trees and
tablegen outputs (`*.h.inc`, `*.cpp.inc`) are generated, not cited. Standard library only.
"""
import contextlib
import glob
import io
import os
import re
import sys
import tempfile

SCANNED_SUFFIXES = (".cpp", ".h", ".td", ".py", ".md", ".mlir", ".sh", ".inc", ".test", ".in")
SCANNED_NAMES = ("CMakeLists.txt",)
GENERATED_SUFFIXES = (".h.inc", ".cpp.inc")
PATH_CHARS = r"[\w./*?<>{}\-]"
# Variables that name the repository root (lit, CMake) or the citing file's directory (CMake).
ROOT_PREFIXES = ("%amp_src_root/", "${AMP_SOURCE_DIR}/", "${CMAKE_SOURCE_DIR}/")
HERE_PREFIX = "${CMAKE_CURRENT_SOURCE_DIR}/"
BARE_UPPER_MD = re.compile(r"(?<![\w./\-])([A-Z][A-Z0-9_\-]*\.md)\b")
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")
CONTINUATION = re.compile(r"^\s*(?://+|#+|\*|--)?\s*(" + PATH_CHARS + r"+)")


def skipped_dir(name):
    return name.startswith("build") or name in ("out", ".git")


def top_level_dirs(root):
    return sorted(d for d in os.listdir(root)
                  if os.path.isdir(os.path.join(root, d)) and not skipped_dir(d))


def scanned_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not skipped_dir(d))
        for name in sorted(filenames):
            if name.endswith(SCANNED_SUFFIXES) or name in SCANNED_NAMES:
                yield os.path.join(dirpath, name)


def to_glob(path):
    """The path with its placeholders as glob wildcards, or None when it has none."""
    parts = []
    for i, part in enumerate(path.split("/")):
        new = re.sub(r"<[^>]*>?|\{[^}]*\}?|\.\.\.", "*", part)
        stem, ext = os.path.splitext(new)
        is_last_named_file = i == len(path.split("/")) - 1 and ext
        # An upper-case word is a placeholder (MODEL, NAME, X) unless it is a whole file name
        # (README.md, and the names this check exists to catch).
        if not (is_last_named_file and re.fullmatch(r"[A-Z][A-Z0-9_\-]*", stem)):
            new = re.sub(r"(?<![A-Za-z])[A-Z][A-Z0-9_]*(?![A-Za-z])", "*", new)
        parts.append(new)
    pattern = "/".join(parts)
    return pattern if re.search(r"[*?\[]", pattern) else None


def resolves(path, bases):
    for base in bases:
        full = os.path.normpath(os.path.join(base, path))
        if os.path.exists(full):
            return True
        if not os.path.splitext(path.rstrip("/"))[1] and glob.glob(glob.escape(full) + ".*"):
            return True
        pattern = to_glob(path)
        if pattern and glob.glob(os.path.join(base, pattern), recursive=True):
            return True
    return False


def clean(token):
    token = token.split("#", 1)[0].rstrip(".,;:!?'\"`)")
    if token.endswith(">") and token.count(">") > token.count("<"):
        token = token[:-1]  # "<docs/design.md>"
    return token


def path_token(tops):
    # A notes directory holds another project's design notes: checked although this repository
    # has none.
    starts = "|".join(re.escape(t) for t in sorted(set(tops) | {"notes"}))
    return re.compile(r"(?<![\w./\-$%{}])((?:" + starts + ")/" + PATH_CHARS + "*)")


def citations(lines, index, token):
    """(path, base) pairs cited on line `index`; base is "root", "here" or "either"."""
    found = []
    text = lines[index]
    for m in token.finditer(text):
        path = m.group(1)
        # A path broken across two comment lines ("src/long-" and "name.py").
        if path.endswith("-") and m.end() == len(text.rstrip()) and index + 1 < len(lines):
            more = CONTINUATION.match(lines[index + 1])
            if more:
                path += more.group(1)
        found.append((clean(path), "root"))
    for prefix, base in [(p, "root") for p in ROOT_PREFIXES] + [(HERE_PREFIX, "here")]:
        for m in re.finditer(re.escape(prefix) + "(" + PATH_CHARS + "+)", text):
            found.append((clean(m.group(1)), base))
    for m in BARE_UPPER_MD.finditer(text):
        found.append((m.group(1), "either"))
    return found


def link_targets(text):
    for m in MARKDOWN_LINK.finditer(text):
        target = m.group(1)
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue  # a URL, mailto: or an anchor on the same page
        target = target.split("#", 1)[0]
        if target:
            yield target


def check(root):
    """Returns (number of citations checked, ["file:line: message", ...])."""
    root = os.path.abspath(root)
    token = path_token(top_level_dirs(root))
    checked, problems = 0, []
    for path in scanned_files(root):
        here = os.path.dirname(path)
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
        for i, text in enumerate(lines):
            cited = citations(lines, i, token)
            if path.endswith(".md"):
                cited += [(t.lstrip("/"), "root") if t.startswith("/") else (t, "here")
                          for t in link_targets(text)]
            for target, base in cited:
                if not target or target.endswith(GENERATED_SUFFIXES):
                    continue
                checked += 1
                bases = {"root": [root], "here": [here], "either": [root, here]}[base]
                if not resolves(target, bases):
                    problems.append("%s:%d: cites '%s', which does not exist in the repository"
                                    % (rel, i + 1, target))
    return checked, sorted(set(problems))


def self_test():
    """The check must report each kind of broken citation in a bad tree, and pass it once fixed."""
    # Fixture names are spelled apart, and its top-level dirs (manual/, src/) are not this
    # repository's, so that this file itself cites nothing missing.
    design, notes, here = "DESIGN" + ".md", "no" + "tes/", "${CMAKE_CURRENT" + "_SOURCE_DIR}/"
    files = {
        "CMakeLists.txt": "add_test(NAME t COMMAND %ssrc/run.py)\n" % here,
        "src/run.py": "# see manual/guide.md#usage, src/run.py:12, manual/<topic>.md and src/run\n"
                      "# generated: src/Gen.h.inc; built: build/out.md; url https://x.org/src/no.md\n"
                      "# src/two-\n#   lines.py is split over two lines\n",
        "src/two-lines.py": "",
        "manual/guide.md": "[run](../src/run.py), [self](guide.md#top), [web](https://x.org/a.md)\n"
                           "Pages: manual/guide.md, manual/ and manual/*.md; manual/FIGURE-1.svg\n"
                           "Is it manual/guide.md? See <manual/guide.md>, **manual/guide.md**.\n",
        "manual/FIGURE-1.svg": "",
    }
    bad_files = {
        "manual/bad.md": "Cites manual/missing.md, src/gone.py:3 and %s.\n" % design
                         + "Links [a](nowhere.md), [b](../src/none.py#x); %splan.md\n" % notes,
        "src/bad.cpp": "// rules in %s and manual/ghost-\n// page.md; %ssrc/lost.py\n" % (design, here),
    }
    want = {
        ("manual/bad.md", 1, "manual/missing.md"), ("manual/bad.md", 1, "src/gone.py"),
        ("manual/bad.md", 1, design), ("manual/bad.md", 2, "nowhere.md"),
        ("manual/bad.md", 2, "../src/none.py"), ("manual/bad.md", 2, notes + "plan.md"),
        ("src/bad.cpp", 1, design), ("src/bad.cpp", 1, "manual/ghost-page.md"),
        ("src/bad.cpp", 2, "src/lost.py"),
    }
    ok = True
    with tempfile.TemporaryDirectory(prefix="amp-citations-") as tree:
        for name, text in list(files.items()) + list(bad_files.items()):
            os.makedirs(os.path.join(tree, os.path.dirname(name)), exist_ok=True)
            with open(os.path.join(tree, name), "w") as f:
                f.write(text)
        os.makedirs(os.path.join(tree, "build"))
        status, output = run_main(tree)
        got = set()
        for line in output:
            m = re.match(r"(.*?):(\d+): cites '(.*)', which", line)
            if m:
                got.add((m.group(1), int(m.group(2)), m.group(3)))
        if status != 1:
            ok = False
            print("self-test: the broken tree exits with %d, not 1" % status)
        for missed in sorted(want - got):
            ok = False
            print("self-test: not reported: %s:%d: %s" % missed)
        for extra in sorted(got - want):
            ok = False
            print("self-test: reported, but it exists: %s:%d: %s" % extra)
        for name in bad_files:
            os.remove(os.path.join(tree, name))
        status, output = run_main(tree)
        if status != 0:
            ok = False
            print("self-test: the fixed tree fails:", *output, sep="\n  ")
    print("self-test: %s" % ("ok" if ok else "FAILED"))
    return 0 if ok else 1


def run_main(tree):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(["check_citations.py", tree])
    return status, out.getvalue().splitlines()


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)  # the usage lines
        return 2
    checked, problems = check(argv[1])
    for p in problems:
        print(p)
    if problems:
        print("%d cited path(s) do not exist (of %d citations checked); cite the project's own "
              "files (docs/design.md and the other docs/ pages)" % (len(problems), checked))
        return 1
    print("%d citations checked; every cited path exists" % checked)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
