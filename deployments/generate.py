"""Write deployments/prefect.yaml from the step registry (deployments/catalog.py).

    python -m deployments.generate            # rewrite deployments/prefect.yaml
    python -m deployments.generate --check    # exit 1 if it is not what this writes
    python -m deployments.generate --out PATH

Run it from the repository root after adding, removing or renaming a step (``make
deployments`` does). The file is rendered from ``deployments/prefect.yaml.j2`` with
jinja2, so its comments and layout stay those of a hand-written file.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jinja2
import yaml

from deployments.catalog import REPO, deployments

HERE = Path(__file__).resolve().parent
TARGET = HERE / "prefect.yaml"
TEMPLATE = "prefect.yaml.j2"


def scalar(value: Any) -> str:
    """``value`` as a YAML flow value: a string plain when it reads back as itself,
    else double-quoted (JSON's quoting is YAML's); anything else as JSON."""
    if isinstance(value, str):
        try:
            plain = yaml.safe_load(value) == value and value == value.strip() \
                and "\n" not in value
        except yaml.YAMLError:
            plain = False
        if plain:
            return value
    return json.dumps(value)


def comment(text: str) -> str:
    """``text`` as YAML comment lines, indented under ``deployments:``."""
    return "\n".join(f"  # {line}".rstrip() for line in text.splitlines())


def render(steps: Iterable[Any] | None = None, repo: Path = REPO) -> str:
    """The text of ``prefect.yaml`` for ``steps`` (default: the registry's)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE), trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined, autoescape=False)
    env.filters.update(scalar=scalar, comment=comment, json=json.dumps)
    return env.get_template(TEMPLATE).render(deployments=deployments(steps, repo))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=TARGET,
                        help="where to write (default: deployments/prefect.yaml)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if the file differs from the registry's")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.out.read_text() if args.out.is_file() else None
        if current != text:
            print(f"{args.out} is not current: run `python -m deployments.generate`",
                  file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
