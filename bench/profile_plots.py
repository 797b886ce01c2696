"""The profile's plots: the fixed cost of a profile, with fixed margins and without.

``curate profile`` draws two PNGs per signal (``curator/profile/plots.py``): on a small
corpus they are most of the step's time. This profiles ``--docs`` documents of the
seeded corpus once (inline), then draws its report's plots ``--repeat`` times in each
variant, interleaved, CPU seconds of this process, medians:

- ``fixed margins``: the plots as the step draws them (``plots._layout``: margins in
  inches);
- ``tight_layout``: the same figures laid out by matplotlib's ``tight_layout`` (what
  the step did before; it draws each figure once more to measure its labels).

Plus the whole profile's wall time, for scale. Not a target: a record of where a small
profile's time goes (docs/profile.md, "Artifacts").

    .venv/bin/python bench/profile_plots.py
    .venv/bin/python bench/profile_plots.py --docs 300 --repeat 5
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import _common as C
from matplotlib.figure import Figure

import curator.profile.plots as plots
from curator.steps.profile import ProfileConfig, run_profile

NAME = "profile_plots"


def _tight(fig: Figure) -> None:
    fig.tight_layout()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--out", type=Path, default=None,
                        help="result file (default bench/results/profile_plots.json)")
    args = parser.parse_args()
    with C.temp_dir("plots", keep=args.keep) as work:
        C.write_corpus(work / "in", 2, docs_per_file=(args.docs + 1) // 2)
        start = time.perf_counter()
        report = run_profile(ProfileConfig(
            input_glob=str(work / "in"), output_dir=str(work / "profile"), language="en",
            langpack_dir=str(C.REPO / "curator" / "langpacks"), id_field="id", max_total_docs=0,
            execution={"executor": "inline"}))
        profile_wall = time.perf_counter() - start
        layouts = {"fixed margins": plots._layout, "tight_layout": _tight}
        plots.write_plots(report, work / "warm")  # fonts and caches
        cpus: dict[str, list[float]] = {name: [] for name in layouts}
        for _ in range(args.repeat):
            for name, layout in layouts.items():
                plots._layout = layout
                start = time.process_time()
                drawn = plots.write_plots(report, work / name.replace(" ", "-"))
                cpus[name].append(time.process_time() - start)
        plots._layout = layouts["fixed margins"]
    pngs = sum(len(kinds) for kinds in drawn.values())
    results = {name: {"cpu_s": C.median(runs), "runs": runs} for name, runs in cpus.items()}
    base = results["fixed margins"]["cpu_s"]
    C.print_table(["variant", "CPU s (median)", "per PNG", "x fixed margins"],
                  [[name, round(r["cpu_s"], 2), round(r["cpu_s"] / pngs, 3),
                    round(r["cpu_s"] / base, 2)] for name, r in results.items()])
    print(f"the whole profile of {args.docs} documents: {profile_wall:.1f} s wall, {pngs} PNGs")
    C.write_result(NAME, {"docs": args.docs, "pngs": pngs, "profile_wall_s": profile_wall,
                          "results": results}, args.out)


if __name__ == "__main__":
    main()
