#!/usr/bin/env python3
"""Fails when an #include in src/ crosses a layer the wrong way (docs/architecture.md, "Layers").

The arrows are read from the build, not written twice: each folder src/F/ builds one library,
oarbank_F, in src/F/CMakeLists.txt, and the oarbank_G named in its target_link_libraries are
the layers F may use (G's own arrows followed too, as the PUBLIC link lines make them visible).
Every `#include "G/..."` in src/F/ (and include/oarbank/, the policy's public header) must name F
itself or a layer F reaches. A cycle among the arrows fails as well, and so does a row of
docs/architecture.md's layer table (| `oarbank_F` | G, H (...) | ...) that says other arrows
than the link line.

    check_layers.py [ROOT]      check ROOT (default: the repository), exit 1 on a violation
    check_layers.py --self-test run on tests/layers/fixture, which holds known problems
"""
import re
import sys
from pathlib import Path

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include\s+"([A-Za-z0-9_]+)/[^"]*"', re.MULTILINE)
LINK = re.compile(r'target_link_libraries\(\s*(oarbank_[A-Za-z0-9_]+)([^)]*)\)', re.DOTALL)
SOURCE_SUFFIXES = {'.c', '.cc', '.cpp', '.h', '.hpp'}
# include/oarbank/ is the policy's public header (the SDK's type).
ALIASES = {'oarbank': 'policy'}


def read_arrows(src):
    """{layer: set of layers its library links}, from src/LAYER/CMakeLists.txt."""
    arrows, problems = {}, []
    for folder in sorted(p for p in src.iterdir() if p.is_dir()):
        layer = folder.name
        cmake = folder / 'CMakeLists.txt'
        if not cmake.is_file():
            problems.append(f'{cmake}: missing: every folder of src/ is one library, oarbank_{layer}')
            continue
        text = cmake.read_text()
        if not re.search(rf'add_library\(\s*oarbank_{layer}\s', text):
            problems.append(f'{cmake}: no add_library(oarbank_{layer} ...): every folder of src/ '
                            f'is one library')
        links = set()
        for target, args in LINK.findall(text):
            if target == f'oarbank_{layer}':  # not another target in the folder (a test seam)
                links |= {t[len('oarbank_'):] for t in args.split() if t.startswith('oarbank_')}
        arrows[layer] = links
    for layer, links in arrows.items():
        for other in sorted(links - arrows.keys()):
            # oarbank_launch_hooks and the like: libraries that are not a layer.
            arrows[layer] = arrows[layer] - {other}
    return arrows, problems


def reachable(arrows):
    """{layer: every layer it reaches through one or more arrows}."""
    closure = {}
    for start in arrows:
        seen, todo = set(), list(arrows[start])
        while todo:
            layer = todo.pop()
            if layer not in seen:
                seen.add(layer)
                todo.extend(arrows.get(layer, ()))
        closure[start] = seen
    return closure


DOC_ROW = re.compile(r'^\|\s*`oarbank_([A-Za-z0-9_]+)`\s*\|([^|]*)\|', re.MULTILINE)


def doc_problems(root, arrows):
    """The layer table in docs/architecture.md against the link lines (when there is one)."""
    doc = root / 'docs' / 'architecture.md'
    if not doc.is_file():
        return []
    rows = {layer: links for layer, links in DOC_ROW.findall(doc.read_text())}
    problems = []
    for layer in sorted(arrows):
        if layer not in rows:
            problems.append(f'docs/architecture.md: no row for oarbank_{layer} in the layer table')
            continue
        # "supervise, apply, report, proxy (and CLI11)": the words before any parenthesis.
        said = set(re.findall(r'[a-z_]+', rows[layer].split('(')[0])) & set(arrows)
        if said != arrows[layer]:
            problems.append(f'docs/architecture.md: the row of oarbank_{layer} says '
                            f'{", ".join(sorted(said)) or "nothing"}; its link line says '
                            f'{", ".join(sorted(arrows[layer])) or "nothing"}')
    return problems


def violations(root):
    """Lines 'path:line: ...' for each include that crosses a layer the wrong way."""
    src = root / 'src'
    arrows, problems = read_arrows(src)
    closure = reachable(arrows)
    for layer in sorted(arrows):
        if layer in closure[layer]:
            problems.append(f'{src / layer / "CMakeLists.txt"}: oarbank_{layer} reaches itself '
                            f'through its link lines: the layers have a cycle')
    problems += doc_problems(root, arrows)
    dirs = [(d, d.name) for d in sorted(src.iterdir()) if d.is_dir()]
    dirs += [(d, ALIASES.get(d.name, d.name)) for d in sorted((root / 'include').glob('*'))
             if d.is_dir()]
    for directory, layer in dirs:
        allowed = {layer} | closure.get(layer, set())
        for path in sorted(directory.rglob('*')):
            if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
                continue
            text = path.read_text(errors='replace')
            for match in INCLUDE.finditer(text):
                target = ALIASES.get(match.group(1), match.group(1))
                if target in allowed:
                    continue
                line = text.count('\n', 0, match.start()) + 1
                where = f'{path.relative_to(root)}:{line}'
                if target not in arrows:
                    problems.append(f'{where}: includes "{match.group(1)}/...", which is no layer '
                                    f'(no folder src/{target}/)')
                else:
                    may = ', '.join(sorted(allowed - {layer})) or 'nothing'
                    problems.append(f'{where}: {layer} includes "{match.group(0).split(chr(34))[1]}", '
                                    f'but {layer} may use only {may} '
                                    f'(src/{layer}/CMakeLists.txt\'s link line)')
    return problems


def self_test(here):
    """The fixture holds exactly these bad includes; the good ones must pass."""
    fixture = here / 'fixture'
    expected = [
        'docs/architecture.md: the row of oarbank_mid_b says low, mid_a; its link line says low',
        'src/low/bad_upward.hpp:4: low includes "high/top.hpp", but low may use only nothing',
        'src/mid_a/bad_sideways.cpp:3: mid_a includes "mid_b/b.hpp", but mid_a may use only low',
        'src/mid_b/b.hpp:5: includes "nowhere/...", which is no layer',
    ]
    got = [p.replace(str(fixture) + '/', '') for p in violations(fixture)]
    ok = len(got) == len(expected) and all(g.startswith(e) for g, e in zip(got, expected))
    if not ok:
        print('self-test failed: expected violations starting with', *expected, 'got', *got,
              sep='\n  ')
        return 1
    print(f'self-test passed: the fixture\'s {len(expected)} problems found (a wrong row of the '
          f'layer table, an upward, a sideways and an unknown include), its good includes (a '
          f'direct arrow, an arrow followed twice) passed')
    return 0


def main(argv):
    here = Path(__file__).resolve().parent
    if argv[1:] == ['--self-test']:
        return self_test(here)
    root = Path(argv[1]) if len(argv) > 1 else here.parent.parent
    problems = violations(root)
    for problem in problems:
        print(problem)
    if problems:
        return 1
    arrows, _ = read_arrows(root / 'src')
    print('layers respected:', '; '.join(
        f'{layer} -> {", ".join(sorted(links)) or "-"}' for layer, links in sorted(arrows.items())))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
