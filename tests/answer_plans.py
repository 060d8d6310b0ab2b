"""Plans that wait for a person, shared by the tests of the answer channels.

``deploy_gate``: a human node whose choices are ``[Y] Yes`` (to ``deploy``, a
task) and ``[N] No`` (to ``stop``). ``migration``: a task with a ``manual``
check passed by a reply containing ``CONFIRMED``, then a task ``notes``.
"""

from __future__ import annotations

import json
from pathlib import Path

from waygraph.formats.json_library import plan_to_data
from waygraph.library import Library
from waygraph.model import Graph, Plan

PROMPT = "Deploy to production?"
CHOICES = ["[Y] Yes", "[N] No"]


def deploy_gate() -> Plan:
    """A person decides at ``ok`` whether to deploy."""
    return (
        Graph.builder()
        .human("ok", prompt=PROMPT)
        .task("deploy", action="Deploy the release", verify={"type": "any_output"})
        .exit("done")
        .exit("stop")
        .edge("start", "ok")
        .edge("ok", "deploy", label=CHOICES[0])
        .edge("ok", "stop", label=CHOICES[1])
        .edge("deploy", "done", condition="on_success")
        .plan("deploy_gate")
    )


def migration() -> Plan:
    """A manual check at ``migrate``: only a person's CONFIRMED passes it."""
    return (
        Graph.builder()
        .task(
            "migrate",
            action="Run the migration on production",
            verify={"type": "manual", "value": "CONFIRMED"},
        )
        .task("notes", action="Write the release notes", verify={"type": "any_output"})
        .exit("done")
        .edge("start", "migrate")
        .edge("migrate", "notes", condition="on_success")
        .edge("notes", "done", condition="on_success")
        .plan("migration")
    )


def library() -> Library:
    """Both plans."""
    return Library([deploy_gate(), migration()])


def write_library(folder: Path) -> Path:
    """Both plans as one JSON library file in ``folder`` (for ``--library``)."""
    path = folder / "people.json"
    plans = {p.id: plan_to_data(p) for p in (deploy_gate(), migration())}
    path.write_text(json.dumps({"_meta": {"version": "2.0"}, "plans": plans}), encoding="utf-8")
    return path
