"""How the suite sets itself up (tests/conftest.py): temporary files and module order."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import DISK_TEMP, SLOWEST_FIRST, _ram_temp_folder

HERE = Path(__file__).resolve().parent


def test_every_module_named_to_run_first_exists():
    # A module renamed or split must not silently drop out of the order.
    assert [name for name in SLOWEST_FIRST if not (HERE / name).is_file()] == []
    assert len(set(SLOWEST_FIRST)) == len(SLOWEST_FIRST)


def test_the_ram_folder_is_used_only_when_it_exists_and_has_room(tmp_path: Path):
    assert _ram_temp_folder(str(tmp_path), room=0) == str(tmp_path)
    assert _ram_temp_folder(str(tmp_path / "missing"), room=0) is None
    assert _ram_temp_folder(str(tmp_path), room=1 << 60) is None  # an exabyte free: no


def test_the_modules_named_first_run_first(request):
    names = []
    for item in request.session.items:
        if not names or names[-1] != item.path.name:
            names.append(item.path.name)
    present = [name for name in SLOWEST_FIRST if name in names]
    assert names[: len(present)] == present


def test_the_disk_folder_is_not_under_dev_on_any_worker():
    # Run under xdist too: a worker inherits TMPDIR=/dev/shm from the main process.
    assert not Path(DISK_TEMP).resolve().is_relative_to("/dev")
