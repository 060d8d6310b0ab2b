"""File and log tasks: back up and move files, restore from a good backup, find a root cause."""

from __future__ import annotations

import random
import re
import tarfile
from collections.abc import Iterator
from pathlib import Path

from waygraph.eval.suite import EvalTask, TaskVerdict, register, sh, write
from waygraph.eval.workspace import sha256_file, sha256_text, write_files

# ------------------------------------------------------------------ backup-and-move

DATA_FILES: dict[str, str | bytes] = {
    "data/customers.csv": "id,name\n1,Ada\n2,Alan\n3,Grace\n",
    "data/orders.csv": "id,customer,total\n10,1,19.99\n11,3,5.00\n",
    "data/images/logo.bin": bytes(range(256)) * 4,
    "data/README.txt": "Exported 2024-05-01.\n",
}


def _setup_backup(root: Path) -> Path:
    write_files(root, DATA_FILES)
    return root


def _check_backup(ws: Path) -> Iterator[str]:
    archive = ws / "archive"
    for name, content in DATA_FILES.items():
        moved = archive / name.removeprefix("data/")
        if not moved.is_file():
            yield f"archive/{name.removeprefix('data/')} is missing"
        elif sha256_file(moved) != sha256_text(content):
            yield f"archive/{name.removeprefix('data/')} differs from the original"
    data = ws / "data"
    if data.exists() and any(p.is_file() for p in data.rglob("*")):
        yield "data/ still holds files: they were to be moved"
    tarball, checksum = ws / "backups" / "data.tar.gz", ws / "backups" / "data.tar.gz.sha256"
    if not tarball.is_file():
        yield "backups/data.tar.gz is missing"
        return
    try:
        with tarfile.open(tarball) as tar:
            members = {
                m.name.removeprefix("./"): tar.extractfile(m).read()  # type: ignore[union-attr]
                for m in tar.getmembers()
                if m.isfile()
            }
    except (tarfile.TarError, OSError) as exc:
        yield f"backups/data.tar.gz cannot be read: {exc}"
        return
    for name, content in DATA_FILES.items():
        data_bytes = content.encode() if isinstance(content, str) else content
        if members.get(name) != data_bytes:
            yield f"the backup lacks {name} or holds a different copy"
    written = checksum.read_text().split()[:1] if checksum.is_file() else []
    if written != [sha256_file(tarball)]:
        yield "backups/data.tar.gz.sha256 does not hold the archive's SHA-256"


register(
    EvalTask(
        id="backup-and-move",
        plan="file_backup_restore",
        request=(
            "Back up the data/ folder into backups/data.tar.gz, with its SHA-256 checksum in "
            "backups/data.tar.gz.sha256 (sha256sum format). Then move the files from data/ "
            "to archive/ and make sure with checksums that nothing changed."
        ),
        setup=_setup_backup,
        check=lambda ws: TaskVerdict.of(_check_backup(ws)),
        solution=(
            sh("du -sh data; find data -type f | wc -l", "inventory"),
            sh(
                "mkdir -p backups && tar -czf backups/data.tar.gz data && "
                "sha256sum backups/data.tar.gz | tee backups/data.tar.gz.sha256",
                "create_backup",
            ),
            sh(
                "sha256sum -c backups/data.tar.gz.sha256 && "
                "tar -tzf backups/data.tar.gz | grep -vc '/$'",
                "verify_backup",
            ),
            sh("echo 'operation: move'", "state_operation"),
            sh("mkdir -p archive && cp -a data/. archive/", "execute_operation"),
            sh("diff -rq data archive && echo 'destination matches source'", "verify_destination"),
            sh("rm -rf -- data && ls -la archive", "finish"),
        ),
        wrong_solution=(sh("mkdir -p archive && mv data/* archive/ && echo moved"),),
        wrong_because="moves the files without making (or checking) the backup",
        max_steps=12,
        tags=("files",),
    )
)

# ------------------------------------------------------------------ restore-from-backup

CONFIG_GOOD = {
    "config/app.ini": "[app]\nname = shop\nworkers = 4\nlog_level = info\n",
    "config/logging.ini": "[logging]\nformat = %(asctime)s %(levelname)s %(message)s\n",
}
CONFIG_CORRUPT = "[app]\nname = sh\x00\x00\x00"


def _sums(files: dict[str, str]) -> str:
    return "".join(f"{sha256_text(text)}  {name}\n" for name, text in sorted(files.items()))


def _setup_restore(root: Path) -> Path:
    good = dict(CONFIG_GOOD)
    bad = {**CONFIG_GOOD, "config/app.ini": CONFIG_CORRUPT}
    files: dict[str, str | bytes] = {name: text for name, text in bad.items()}
    for day, contents, sums in (
        ("2024-05-01", good, _sums(good)),
        # The newest backup was taken after the damage; its checksums came from the last good run.
        ("2024-05-02", bad, _sums(good)),
    ):
        for name, text in contents.items():
            files[f"backups/{day}/{name}"] = text
        files[f"backups/{day}/SHA256SUMS"] = sums
    write_files(root, files)
    return root


def _check_restore(ws: Path) -> Iterator[str]:
    for name, text in CONFIG_GOOD.items():
        path = ws / name
        if not path.is_file():
            yield f"{name} is missing"
        elif sha256_file(path) != sha256_text(text):
            yield f"{name} does not match its checksum in the good backup"
    for day in ("2024-05-01", "2024-05-02"):
        if not (ws / "backups" / day / "SHA256SUMS").is_file():
            yield f"backups/{day} was damaged or removed"


register(
    EvalTask(
        id="restore-from-backup",
        plan="file_backup_restore",
        request=(
            "config/app.ini got corrupted. Restore the config/ folder from the backup in "
            "backups/ whose files still match its SHA256SUMS, and check the restored files "
            "against those checksums. Keep a copy of the current config first, just in case."
        ),
        setup=_setup_restore,
        check=lambda ws: TaskVerdict.of(_check_restore(ws)),
        solution=(
            sh(
                'find config -type f | wc -l; for d in backups/*/; do (cd "$d" && '
                'sha256sum -c --quiet SHA256SUMS >/dev/null 2>&1 && echo "$d good" || '
                'echo "$d bad"); done',
                "inventory",
            ),
            sh(
                "tar -czf backups/config-before-restore.tar.gz config && sha256sum "
                "backups/config-before-restore.tar.gz | tee backups/config-before-restore.tar.gz"
                ".sha256",
                "create_backup",
            ),
            sh(
                "sha256sum -c backups/config-before-restore.tar.gz.sha256 && tar -tzf "
                "backups/config-before-restore.tar.gz | grep -vc '/$'",
                "verify_backup",
            ),
            sh("echo 'operation: copy'", "state_operation"),
            sh("cp -a backups/2024-05-01/config/. config/", "execute_operation"),
            sh(
                "diff -rq backups/2024-05-01/config config && (cd backups/2024-05-01 && "
                "sha256sum -c SHA256SUMS) && echo 'destination matches source'",
                "verify_destination",
            ),
            sh("ls -la config", "finish"),
        ),
        wrong_solution=(sh("cp -a backups/2024-05-02/config/. config/ && echo restored"),),
        wrong_because="restores the newest backup without checking it (it is damaged too)",
        max_steps=12,
        tags=("files",),
    )
)

# ------------------------------------------------------------------ log-root-cause

FIRST_DISK_ERROR = "02:13:07"


def _log_lines() -> list[str]:
    """A night of service logs: routine noise, then a full disk that takes the service down."""
    rng = random.Random(20240501)
    lines: list[str] = []
    second = 0
    routine = [
        "INFO http: GET /orders/{n} 200 in {ms}ms",
        "INFO http: POST /orders 201 in {ms}ms",
        "INFO worker: processed batch {n} ({ms} items)",
        "DEBUG cache: hit ratio 0.9{n}",
        "WARN http: slow request GET /search took {ms}ms",
    ]

    def stamp() -> str:
        hours, rest = divmod(second, 3600)
        minutes, seconds = divmod(rest, 60)
        return f"2024-05-01T{hours:02d}:{minutes:02d}:{seconds:02d}Z"

    # Before the failure: routine traffic, and one harmless retried error long before.
    second = 1 * 3600 + 30 * 60
    for i in range(160):
        second += rng.randint(5, 20)
        if i == 40:
            lines.append(f"{stamp()} ERROR mailer: SMTP connection reset, retrying (1/3)")
            continue
        template = rng.choice(routine)
        lines.append(f"{stamp()} " + template.format(n=rng.randint(1, 999), ms=rng.randint(3, 900)))
    second = 2 * 3600 + 13 * 60 + 7
    lines.append(
        f"{stamp()} ERROR queue: write failed: [Errno 28] No space left on device: "
        "'/var/lib/shop/queue/segment-0042'"
    )
    lines.append(f"{stamp()} WARN queue: falling back to synchronous writes")
    for i in range(60):
        second += rng.randint(2, 9)
        if i % 7 == 3:
            lines.append(
                f"{stamp()} ERROR queue: write failed: [Errno 28] No space left on device: "
                f"'/var/lib/shop/queue/segment-00{43 + i // 7}'"
            )
        elif i % 2 == 0:
            lines.append(
                f"{stamp()} ERROR http: POST /orders 504: upstream payments timed out after 30s"
            )
        else:
            lines.append(f"{stamp()} " + routine[0].format(n=rng.randint(1, 999), ms=30001))
    lines.append(f"{stamp()} FATAL main: health check failed 3 times, shutting down")
    return lines


LOG_TEXT = "\n".join(_log_lines()) + "\n"
REPORT_GOOD = f"""\
# Outage 2024-05-01

Root cause: the disk holding the order queue filled up. From {FIRST_DISK_ERROR} every
queue write failed with "[Errno 28] No space left on device", requests piled up and
timed out (504 from payments), and the health check shut the service down.

Evidence: logs/app.log, first error at 2024-05-01T{FIRST_DISK_ERROR}Z:
"ERROR queue: write failed: [Errno 28] No space left on device"; the 504 timeouts only
start after it.

Suggested fix: free space on /var/lib/shop and add a disk-usage alert.
"""
REPORT_SYMPTOM = """\
Root cause: the payments service timed out (504, the most frequent error in the log).

Evidence: logs/app.log has dozens of "upstream payments timed out after 30s" lines.
"""


def _setup_logs(root: Path) -> Path:
    write_files(root, {"logs/app.log": LOG_TEXT, "README.md": "# shop\n\nLogs are in logs/.\n"})
    return root


def _check_logs(ws: Path) -> Iterator[str]:
    report = ws / "report.md"
    if not report.is_file():
        yield "report.md was not written"
        return
    text = report.read_text(errors="replace")
    match = re.search(r"root cause\W*:?(.*?)(?:\n\s*\n|\Z)", text, re.I | re.S)
    if match is None:
        yield "report.md has no 'Root cause:' part"
        return
    cause = match.group(1).lower()
    disk = r"no space left|disk (is |was |got )?full|out of (disk )?space|disk space"
    if not re.search(disk, cause):
        yield "the root cause given is not the full disk (the timeouts are only a symptom)"
    if FIRST_DISK_ERROR not in text:
        yield f"report.md does not give when it started ({FIRST_DISK_ERROR})"
    if (ws / "logs" / "app.log").read_text() != LOG_TEXT:
        yield "logs/app.log was modified"


register(
    EvalTask(
        id="log-root-cause",
        plan="log_investigation",
        request=(
            "Our order service went down last night. Please investigate the logs in logs/ and "
            "write what went wrong to report.md: the root cause, when it started, and the log "
            "lines that show it."
        ),
        setup=_setup_logs,
        check=lambda ws: TaskVerdict.of(_check_logs(ws)),
        solution=(
            sh("find . -name '*.log' -not -path './.git/*'", "locate_logs"),
            sh("grep -inE 'error|exception|fatal' logs/app.log | tail -n 50", "filter_errors"),
            sh(
                "grep -iE 'error|fatal' logs/app.log | cut -d' ' -f2- | sed -E 's/[0-9]+/N/g' "
                "| sort | uniq -c | sort -rn | head -n 10",
                "group_errors",
            ),
            sh("grep -n -m1 -B 20 'timed out' logs/app.log", "first_occurrence"),
            write("report.md", REPORT_GOOD, "report"),
            sh("cat report.md", "report"),
        ),
        wrong_solution=(write("report.md", REPORT_SYMPTOM),),
        wrong_because="blames the most frequent error, a symptom, instead of the first cause",
        max_steps=12,
        tags=("logs",),
    )
)
