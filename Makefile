# Two entry points for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo resume-demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# The demo's approval, chosen from demo-run/profile/profile_summary.md (docs/filter.md#the-demo):
# grid points of the profile, each aimed at one kind of planted noise.
DEMO_THRESHOLDS := --set stopword_ratio=0.0952381 --set unicode_alpha_numeric=0.301587 \
	--set repeating_duplicate_ngrams=0.507937 --set boilerplate_hits=3

## Set up, generate the demo corpus (docs/demo-corpus.md), ingest, profile, approve and filter it.
demo: $(STAMP)
	rm -rf demo-run/filtered demo-run/policy
	$(BIN)/curate demo-corpus --out demo-run/raw
	$(BIN)/curate ingest --config examples/demo/ingest.yaml
	$(BIN)/curate profile --config examples/demo/profile.yaml
	$(BIN)/curate approve --candidate demo-run/profile/candidate_policies.yaml $(DEMO_THRESHOLDS) \
		--approver "make demo" --method manual \
		--evidence "demo-run/profile/profile_summary.md: symbol soup below 0.1 stopwords, repeated lines above 0.5 duplicate bigrams, boilerplate-only pages above 3 patterns" \
		--out demo-run/policy/approved_policy.yaml
	$(BIN)/curate filter --config examples/demo/filter.yaml
	$(BIN)/python examples/demo/summary.py --workdir demo-run

## The engine's interrupt-and-resume walk-through (press Ctrl+C midway, run it again).
resume-demo: $(STAMP)
	$(BIN)/python examples/resume_demo.py --workdir demo-run/resume --files 12 --delay 0.5

## Set up and run the lint checks, the layering contract and the test suite.
test: $(STAMP)
	$(BIN)/ruff check curator executors flows tests bench examples
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q -ra

lint: $(STAMP)
	$(BIN)/ruff check curator executors flows tests bench examples
	$(BIN)/lint-imports

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) demo-run .pytest_cache
