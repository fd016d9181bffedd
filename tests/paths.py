"""Where the repository's files are, for tests at any depth of tests/."""

from __future__ import annotations

from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
README: Final = ROOT / "README.md"
ARTIFACTS: Final = ROOT / "tests" / "artifacts"
