"""Regenerate the collider meshes of the presets: `python presets/meshes/make_meshes.py`.

bowl.obj    open hemisphere of radius 0.15 m (no lid), rim at y = 0, bottom at y = −0.15, origin at
            the sphere centre; 10 rings × 40 segments, 760 triangles.
stairs.obj  five closed boxes, steps 0.12 m deep along +x with 0.08 m risers, 0.4 m wide along z,
            descending towards +x from a 0.4 m top step at x = 0..0.12; 60 triangles.
"""

from pathlib import Path

import numpy as np
import trimesh

HERE = Path(__file__).resolve().parent


def bowl(radius=0.15, rings=10, segments=40) -> trimesh.Trimesh:
    vertices = [[0.0, -radius, 0.0]]
    for i in range(1, rings + 1):
        polar = np.pi - i * (np.pi / 2) / rings  # ring `rings` is the rim, at y = 0
        for j in range(segments):
            azimuth = 2 * np.pi * j / segments
            vertices.append([radius * np.sin(polar) * np.cos(azimuth), radius * np.cos(polar),
                             radius * np.sin(polar) * np.sin(azimuth)])

    def ring(i, j):
        return 1 + (i - 1) * segments + (j % segments)

    faces = [[0, ring(1, j + 1), ring(1, j)] for j in range(segments)]
    for i in range(1, rings):
        for j in range(segments):
            a, b, c, d = ring(i, j), ring(i, j + 1), ring(i + 1, j + 1), ring(i + 1, j)
            faces += [[a, b, c], [a, c, d]]
    return trimesh.Trimesh(np.array(vertices), np.array(faces), process=False)


def stairs(steps=5, depth=0.12, rise=0.08, width=0.4) -> trimesh.Trimesh:
    boxes = []
    for k in range(steps):
        height = rise * (steps - k)
        box = trimesh.creation.box(extents=(depth, height, width))
        box.apply_translation((depth * k + depth / 2, height / 2, width / 2))
        boxes.append(box)
    return trimesh.util.concatenate(boxes)


if __name__ == "__main__":
    bowl().export(HERE / "bowl.obj")
    stairs().export(HERE / "stairs.obj")
