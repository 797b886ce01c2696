# Two entry points for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo resume-demo test lint bench clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test]'
	touch $(STAMP)

## Set up, generate the demo corpus (docs/demo-corpus.md) and run the whole flow on it in two
## runs: measure (ingest, profile), then approve (a documented choice) and apply (filter);
## then measure the approved policy on the generator's labelled sample (curate evaluate),
## and audit the whole output root (every step that ran: docs/audit.md).
demo: $(STAMP)
	rm -rf demo-run
	$(BIN)/curate demo-corpus --out demo-run/raw
	$(BIN)/python -m curator_demo.holdout --corpus demo-run/raw --out demo-run/holdout
	$(BIN)/curate flow --config examples/demo/flow-measure.yaml
	$(BIN)/curate flow --config examples/demo/flow-apply.yaml
	$(BIN)/curate evaluate --policy demo-run/policy/approved_policy.yaml \
	  --labelled demo-run/raw/labelled_sample.txt \
	  --language en --words 20:100000 --report demo-run/evaluation.json
	$(BIN)/curate audit --set output_root=demo-run --set output_dir=demo-run/audit-all \
	  --set mode=all --set "comparison_fields=[id, text]"
	$(BIN)/python examples/demo/summary.py --workdir demo-run

## The engine's interrupt-and-resume walk-through (press Ctrl+C midway, run it again).
resume-demo: $(STAMP)
	$(BIN)/python examples/resume_demo.py --workdir demo-run/resume --files 12 --delay 0.5

## Set up and run the lint checks, the layering contract and the test suite, in
## TEST_WORKERS processes (pytest-xdist; each has its own Prefect server and Ray).
TEST_WORKERS ?= 2
test: $(STAMP)
	$(BIN)/ruff check curator curator_demo curator_testing executors flows tests bench examples deployments docs/decisions
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q -ra --durations=40 -n $(TEST_WORKERS) --dist worksteal

lint: $(STAMP)
	$(BIN)/ruff check curator curator_demo curator_testing executors flows tests bench examples deployments docs/decisions
	$(BIN)/lint-imports

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

## Regenerate deployments/prefect.yaml from the step registry (deployments/catalog.py).
.PHONY: deployments
deployments: $(STAMP)
	$(BIN)/python -m deployments.generate

clean:
	rm -rf $(VENV) demo-run .pytest_cache

## The chaos suite (docs/reliability.md): every registered step and the whole flow on the
## process pool and on Ray killed (SIGKILL to its process group) >= 20 times at seeded
## random moments and compared with a clean run; SIGTERM/SIGINT for every step; a Ray
## worker node lost; a 200 MB line; the readers and loaders fuzzed with thousands of
## hypothesis examples. Long (hours): run it in the background.
.PHONY: chaos
chaos: $(STAMP)
	CURATE_CHAOS_FULL=1 $(BIN)/python -m pytest -q -ra -s tests/chaos
	CURATE_FUZZ_FULL=1 $(BIN)/python -m pytest -q -ra tests/fuzz
	$(BIN)/python bench/chaos.py --kills 20 --seed 14

## Mutation testing (docs/reliability.md, "Mutation testing"): mutmut over each step's core
## modules ([tool.mutmut] in pyproject.toml), each mutant against only the tests that run
## the function it changes; one mutant at a time at the lowest priority (a shared machine).
## MUTANTS narrows the run (a glob: make mutation MUTANTS='curator.subset.planning*');
## then the kill rate per module. Survivors: $(BIN)/mutmut show <name>; results in mutants/.
MUTATION_WORKERS ?= 1
MUTANTS ?=
.PHONY: mutation
mutation: $(STAMP)
	nice -n 19 $(BIN)/mutmut run --max-children $(MUTATION_WORKERS) $(foreach m,$(MUTANTS),'$(m)')
	$(BIN)/mutmut results --all true | awk -F': ' '$$2 != "not checked" {m = $$1; \
	  sub(/^ +/, "", m); sub(/\.[^.]*__mutmut_[0-9]+$$/, "", m); n[m]++; \
	  k[m] += ($$2 ~ /^(killed|timeout|segfault)$$/); s[m] += ($$2 == "survived")} \
	  END {f = "%-36s %5d mutants %5d killed %5d survived"; \
	  for (m in n) printf f " %6.1f%%\n", m, n[m], k[m], s[m], 100 * k[m] / n[m]}' | sort
