"""The shipped starter library's other plans (docker_build_deploy, codegen, backups, API
calls, dependency updates, log investigation) run through the real engine with the
real verifiers on realistic tool output.
"""

from __future__ import annotations

from tests.starter_library_helpers import (
    LIBRARY,
    PYTEST_FAIL,
    passes,
    run_plan,
    targets,
)

# ------------------------------------------------------------------ docker_build_deploy

BUILD_FAIL = 'ERROR: failed to solve: process "/bin/sh -c pip install -r req.txt" did not complete'
BUILD_OK = (
    "#8 exporting layers done\n#8 writing image sha256:4f2a done\n"
    "#8 naming to docker.io/library/app:dev done"
)


def test_docker_shape():
    plan = LIBRARY["docker_build_deploy"]
    nodes = plan.graph.nodes
    assert targets(plan, "build", "on_fail") == {"fix_build"}
    assert targets(plan, "fix_build", "on_success") == {"build"}
    assert nodes["fix_build"].max_retries == 2
    assert nodes[next(iter(targets(plan, "fix_build", "on_exhaust")))].type == "escalate"
    assert targets(plan, "build", "on_success") == {"image_built"}
    assert nodes["image_built"].type == "checkpoint"
    assert targets(plan, "deploy", "on_success") == {"health_check"}
    assert targets(plan, "health_check", "on_success") == {"done"}


def test_docker_build_fix_loop_is_bounded():
    run = run_plan(
        "docker_build_deploy",
        [
            ('FROM python:3.12-slim\nCMD ["python", "app.py"]', 0),
            ("Client: Docker Engine\nServer: Docker Engine - Community", 0),
            *[(BUILD_FAIL, 1), ("FROM python:3.12-slim", 0)] * 3,
            (BUILD_FAIL, 1),
        ],
    )
    assert run.status == "escalated" and run.path[-1] == "escalate_build"
    assert run.visited["fix_build"]["attempts"] == 3


def test_docker_happy_path_reaches_a_healthy_container():
    run = run_plan(
        "docker_build_deploy",
        [
            ("FROM python:3.12-slim", 0),
            ("Server: Docker Engine - Community", 0),
            (BUILD_OK, 0),
            ("Python 3.12.4", 0),
            ("a" * 64, 0),
            ("app: Up 6 seconds (healthy)\nHTTP 200", 0),
        ],
    )
    assert run.status == "completed"


def test_docker_unhealthy_container_collects_logs_before_escalating():
    plan = LIBRARY["docker_build_deploy"]
    health = plan.graph.nodes["health_check"].verify
    assert not passes(health, "app: Restarting (1) 3 seconds ago")
    assert not passes(health, "app: Exited (1) 2 seconds ago")
    assert not passes(health, "app: Up 3 seconds (health: starting)")
    assert not passes(health, "app: Up 9 seconds\nHTTP 502")
    run = run_plan(
        "docker_build_deploy",
        [
            ("FROM python:3.12-slim", 0),
            ("Server: Docker Engine", 0),
            (BUILD_OK, 0),
            ("ok", 0),
            ("b" * 64, 0),
            *[("app: Restarting (1) 3 seconds ago", 0)] * 3,
            ("KeyError: 'DATABASE_URL'", 0),
        ],
    )
    assert list(run.path)[-2:] == ["collect_logs", "escalate_deploy"]


def test_docker_daemon_down_escalates_before_building():
    run = run_plan(
        "docker_build_deploy",
        [("FROM alpine:3.20", 0), ("Cannot connect to the Docker daemon at unix:///x.sock", 1)],
    )
    assert list(run.path)[-1] == "escalate_no_docker"


# ------------------------------------------------------------------ the other plans


def test_codegen_does_not_overwrite_an_existing_file():
    run = run_plan(
        "codegen_module",
        [
            ("src/app/\ntests/", 0),
            ("TARGET_EXISTS src/app/slug.py\nTARGET_FREE tests/test_slug.py", 0),
        ],
    )
    assert list(run.path)[-1] == "escalate_exists"
    run = run_plan(
        "codegen_module",
        [("src/app/", 0), ("TARGET_FREE src/app/slug.py\nTARGET_FREE tests/test_slug.py", 0)],
    )
    assert run.current_node == "scaffold"


def test_codegen_fix_loop_is_bounded():
    plan = LIBRARY["codegen_module"]
    assert targets(plan, "test", "on_fail") == {"fix_implementation"}
    assert targets(plan, "fix_implementation", "on_success") == {"test"}
    assert plan.graph.nodes["fix_implementation"].max_retries == 2


def test_backup_only_request_stops_after_the_verified_backup():
    run = run_plan(
        "file_backup_restore",
        [
            ("4.0M\t/srv/data\n128\n", 0),
            ("3f" * 32 + "  /backups/data-20250101-120000.tar.gz", 0),
            ("/backups/data-20250101-120000.tar.gz: OK\n128", 0),
            ("operation: backup-only", 0),
        ],
    )
    assert run.status == "completed" and run.path[-1] == "done_backup"
    assert "backup_verified" in run.path


def test_failed_copy_restores_from_the_backup():
    run = run_plan(
        "file_backup_restore",
        [
            ("1.2G\t/srv/data\n4096", 0),
            ("ab" * 32 + "  /backups/data.tar.gz", 0),
            ("/backups/data.tar.gz: OK\n4096", 0),
            ("operation: move", 0),
            ("rsync: write failed: No space left on device (28)", 11),
            ("rsync: write failed: No space left on device (28)", 11),
            ("source matches backup", 0),
        ],
    )
    assert list(run.path)[-2:] == ["restore_source", "escalate_restored"]


def test_a_bad_backup_is_made_again_before_anything_moves():
    plan = LIBRARY["file_backup_restore"]
    assert targets(plan, "verify_backup", "on_fail") == {"create_backup"}
    assert not passes(plan.graph.nodes["verify_backup"].verify, "data.tar.gz: FAILED")


def test_api_rejected_credentials_escalate_and_other_failures_retry():
    start = [("GET /v1/items, Bearer token", 0), ("CREDENTIALS_OK", 0)]
    run = run_plan("api_integration", [*start, ('HTTP 401\n{"error": "bad key"}', 0)])
    assert list(run.path)[-1] == "escalate_credentials"
    run = run_plan(
        "api_integration", [*start, ("HTTP 404\nnot found", 0), ('HTTP 200\n{"items": []}', 0)]
    )
    assert run.current_node == "implement" and "endpoint_confirmed" in run.path
    run = run_plan("api_integration", [*start, *[("HTTP 500", 0)] * 3])
    assert list(run.path)[-1] == "escalate_api"
    run = run_plan("api_integration", [start[0], ("CREDENTIALS_MISSING", 0)])
    assert list(run.path)[-1] == "escalate_credentials"


def test_dependency_update_stops_when_nothing_is_outdated():
    run = run_plan("dependency_update", [("nothing to update", 0)])
    assert run.status == "completed" and run.path[-1] == "up_to_date"


def test_dependency_update_rolls_back_when_tests_fail():
    run = run_plan(
        "dependency_update",
        [
            ("Package    Version Latest Type\nrequests   2.31.0  2.32.3 wheel", 0),
            ("9a" * 32 + "  requirements.txt.bak", 0),
            ("Successfully installed requests-2.32.3", 0),
            ("No broken requirements found.", 0),
            (PYTEST_FAIL, 1),
            ("Successfully installed requests-2.31.0\nNo broken requirements found.", 0),
        ],
    )
    assert list(run.path)[-2:] == ["rollback", "escalate_rolled_back"]
    assert "state_saved" in run.path


def test_log_investigation_widens_the_search_once():
    run = run_plan(
        "log_investigation",
        [
            ("./logs/app.log", 0),
            ("", 1),
            ("app.log.1:88:WARN pool exhausted", 0),
            ("     42 ERROR db timeout after Nms", 0),
            ("1180:2025-01-01 ERROR db timeout after 3000ms", 0),
            ("Root cause: the pool is too small. Evidence: app.log:1180. Suggested fix: ...", 0),
        ],
    )
    assert run.status == "completed"
    assert list(run.path)[:5] == [
        "start",
        "locate_logs",
        "filter_errors",
        "broaden_search",
        "entries_found",
    ]
