"""Peer DEM codes (LAMMPS, LIGGGHTS) run on the same states as Mochi.

``runner`` finds the executables, runs an input script in a folder and reads the timings and thermo
output back; ``lammps_input`` and ``liggghts_input`` write the benchmarks' inputs (LAMMPS' law, deck and
data file are the engine's: ``engine.lammps``). The observations themselves belong to the benchmark or
validation that needs them.
"""
