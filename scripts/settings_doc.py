"""Write docs/settings.md, the table of every setting, from engine/settings_schema.py (engine/settings_doc.py)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine.settings_doc import settings_markdown  # noqa: E402  (after the path is set)

if __name__ == "__main__":
    (REPO / "docs" / "settings.md").write_text(settings_markdown(), encoding="utf-8")
    print(REPO / "docs" / "settings.md")
