"""curate decontaminate: remove training documents that overlap a holdout set.

- :mod:`curator.decontamination.text`: normalisation, shingles (hashed, vectorised over a
  batch; and as strings, for the exact verification), identity keys;
- :mod:`curator.decontamination.index`: the holdout's index (exact shingle index or
  MinHash bands), built once in the driver and stored as ``.npy`` files the workers
  memory-map;
- :mod:`curator.decontamination.stage`: the scan of one training partition;
- :mod:`curator.decontamination.report`: ``decontamination_report.json`` and its rendering.
"""
