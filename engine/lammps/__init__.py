"""One scene too big for one machine: Mochi's law run by LAMMPS on MPI, and its dumps back as a cache.

``law`` maps Mochi's contact law onto LAMMPS' ``pair_style granular`` (and refuses what it cannot map),
``data_file`` writes a state as a LAMMPS data file, ``deck`` writes the whole input deck
(``mochi export-lammps``), ``dump`` reads LAMMPS' dumps, ``importer`` turns them into a Mochi cache
(``mochi import-lammps``). The peer benchmarks (benchmarks/peers) build their LAMMPS inputs from ``law``
and ``deck`` too: one home for the mapping.
"""
