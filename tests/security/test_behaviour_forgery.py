"""What behaviour evidence cannot promise against a hostile head (issue 25, docs/security.md).

The tracer and the generated calls run in the sandbox in the same process as the head's code, so that
code can see it is being watched and behave as the base did, or rewrite what is recorded. Behaviour
evidence is a hint about honest code, never proof that a hostile change is harmless. This test keeps the
documentation true: should the evidence ever become tamper-proof, it fails and the page must change.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bot.config import Config
from bot.forges.local import LocalForge
from bot.models.scripted import ScriptedModel
from bot.pipeline.run import review_change
from bot.types import ChangeRef, Review
from tests.conftest import git
from tests.security.fixed_model import Fixed as _Fixed

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

BASE = "def label(host):\n    return 'db ' + host\n"
TEST = "from label import label\n\n\ndef test_label():\n    assert label('x').startswith('db x')\n"
HONEST = "def label(host):\n    return 'db ' + host + '!'\n"
# the same change, hidden from whatever prereview loads into its process
FORGED = (
    "import sys\n\n\ndef label(host):\n"
    "    if any('prereview' in name for name in sys.modules):  # watched: answer as the base did\n"
    "        return 'db ' + host\n"
    "    return 'db ' + host + '!'\n"
)


def _review(where: Path, head: str) -> Review:
    where.mkdir()
    git(where, "init", "-q", "-b", "main")
    (where / "label.py").write_text(BASE)
    (where / "test_label.py").write_text(TEST)
    git(where, "add", "-A")
    git(where, "commit", "-q", "-m", "base")
    (where / "label.py").write_text(head)
    git(where, "commit", "-q", "-am", "head")
    intended = {
        "match": "Is the new behaviour intended",
        "text": json.dumps({"verdict": "intended", "reason": "-"}),
    }
    cfg = Config.model_validate(
        {"model": {"backend": "scripted"}, "patches": {"enabled": False}, "scanners": {"bandit": False}}
    )
    change = LocalForge().fetch(ChangeRef("local", str(where), None, None))
    model = ScriptedModel({"replies": [intended], "default": {"findings": []}})
    return review_change(change, cfg, model=_Fixed(model))


@needs_bwrap
def test_head_code_can_hide_its_change_from_the_behaviour_evidence(tmp_path: Path) -> None:
    honest = _review(tmp_path / "honest", HONEST)
    # the honest change shows its difference (as an intended change, or a finding asking whether it is)
    shown = [f"{b.call} {b.after}" for b in honest.behaviour] + [
        f"{f.message} {f.evidence or ''}" for f in honest.findings if f.source == "behaviour"
    ]
    assert any("label('x')" in x and "'db x!'" in x for x in shown), shown
    forged = _review(tmp_path / "forged", FORGED)
    assert forged.behaviour == () and not [f for f in forged.findings if f.source == "behaviour"]
