"""Peer DEM codes (LAMMPS, LIGGGHTS) run on the same states as Mochi.

``data_file`` writes a Mochi state as a LAMMPS/LIGGGHTS data file (atom_style sphere / granular);
``runner`` finds the executables, runs an input script in a folder and reads the timings and thermo
output back. The input scripts themselves belong to the benchmark or validation that needs them.
"""
