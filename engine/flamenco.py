"""Flamenco 3 jobs written by the engine: a ``mochi wedge`` as a job of type ``mochi-wedge``.

The job types themselves are JavaScript files shipped in the extension (addon/flamenco/*.js, installed
into the Manager's ``scripts`` folder). This module only writes the job a submitter sends to the
Manager (``POST /api/v3/jobs``, Flamenco's ``SubmittedJob``); it talks to no Manager itself.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


WEDGE_JOB_TYPE = "mochi-wedge"
#: Flamenco's names for the submitter's platform (Go's runtime.GOOS).
_PLATFORMS = {"win32": "windows", "darwin": "darwin", "linux": "linux"}


def wedge_job(*, name: str, variant_count: int, wedge_arguments: str, mochi: str = "mochi", backend: str = "cpu",
              worker_tag: str = "", priority: int = 50) -> dict:
    """A Flamenco SubmittedJob of type mochi-wedge.

    Args:
        name: Job name shown by the Manager.
        variant_count: Combinations in the wedge (one bake task each).
        wedge_arguments: Preset, --vary, --out and bake options as one shell-quoted string (absolute
            paths: the workers must see the same storage).
        mochi: The mochi command on the workers.
        backend: Backend of the bakes (cuda/optix bakes get the 'mochi-gpu' task type).
        worker_tag: Flamenco worker tag ID for the whole job, or '' for any worker.
        priority: Job priority (Flamenco's default is 50).
    """
    job = {
        "name": name,
        "type": WEDGE_JOB_TYPE,
        "priority": priority,
        "submitter_platform": _PLATFORMS.get(sys.platform, sys.platform),
        "settings": {"mochi": mochi, "wedge_arguments": wedge_arguments, "variant_count": variant_count,
                     "backend": backend},
        "metadata": {"created_by": "mochi wedge"},
    }
    if worker_tag:
        job["worker_tag"] = worker_tag
    return job


def write_wedge_job(plan, path: str | os.PathLike, **job) -> Path:
    """Write ``wedge_job(**job)`` as JSON to ``path`` through ``plan`` (an ``engine.output_files.OutputPlan``
    naming it: a job file Mochi cannot prove it wrote is not replaced); returns the path."""
    document = json.dumps(wedge_job(**job), indent=2).encode("utf-8")
    return plan.write(path, lambda handle: handle.write(document))
