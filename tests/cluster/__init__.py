"""Tests on a shared-nothing Ray cluster on one machine (issue 26), marked ``cluster``.

A head with ``num_cpus=0`` and two worker nodes, each in a mount namespace of its own
with empty ``/tmp``, ``/dev/shm`` and home caches, plus a moto S3 server: every unit runs
where the driver's files are not (``_harness.py``; fixtures in ``conftest.py``). Needs
root (``unshare``); elsewhere the tests skip, saying why. Run them alone with
``pytest -m cluster``, leave them out with ``-m "not cluster"``.
"""
