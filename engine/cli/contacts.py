"""``mochi contacts``: contact count of every particle of a PLY state (the paper's validation hook)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..contacts import count_contacts
from ..errors import MochiError
from ..neighbors import NEIGHBOR_SEARCH_NAMES
from .options import add_overwrite_argument, add_rt_device_argument


def register(subparsers) -> None:
    p = subparsers.add_parser("contacts", help="count the contacts of every particle in a PLY state",
                              description="For a PLY with x y z radius, write the number of contacts of "
                                          "every particle (|ci-cj| <= ri+rj) as int32 .npy, input order.")
    p.add_argument("state", help="PLY file with vertex properties x y z radius")
    p.add_argument("--out", required=True, help="output .npy file")
    p.add_argument("--backend", choices=NEIGHBOR_SEARCH_NAMES, default="cpu",
                   help="search that finds the contacts (all give the same counts; 'brute' is the exact "
                        "oracle; 'auto' says what it chose)")
    add_rt_device_argument(p)
    add_overwrite_argument(p, "an existing .npy that Mochi cannot prove it wrote (a file of the same name that "
                              "this command wrote before is replaced without it)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..backends import check_rt_device
    from ..output_files import plan_outputs
    from ..ply import read_particles

    check_rt_device(args.backend, args.rt_device)
    out = Path(args.out)
    if out.suffix != ".npy":
        raise MochiError(f"The output '{out}' must end in .npy.")
    plan = plan_outputs([out], overwrite=args.overwrite, inputs=[args.state])  # before any counting
    positions, radius, _ = read_particles(args.state)
    counts = count_contacts(positions, radius, args.backend, log=print, rt_device=args.rt_device)
    plan.write(out, lambda handle: np.save(handle, counts))
    print(f"{len(counts):,} particles, {int(counts.sum()) // 2:,} contacts, at most {int(counts.max())} "
          f"on one particle -> {out}")
    return 0
