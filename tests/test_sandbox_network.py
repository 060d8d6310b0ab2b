"""Issue 33, item 1: confined commands reach no server and no local daemon.

The planning agent's ``shell`` tool once reached PostgreSQL through its UNIX
socket and had it write outside the workspace; now a confined command cannot
open internet or UNIX sockets unless ``--allow-network``.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from waygraph.eval.loop import run_shell
from waygraph.sandbox import landlock

pytestmark = pytest.mark.skipif(
    landlock.abi_version() < 1, reason="this kernel has no Landlock (Linux 5.13+)"
)


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """A TCP server on localhost and a UNIX-socket server outside the workspace."""
    with socket.socket() as tcp, socket.socket(socket.AF_UNIX) as unix:
        tcp.bind(("127.0.0.1", 0))
        tcp.listen()
        path = tmp_path / "daemon.sock"
        unix.bind(str(path))
        unix.listen()
        yield tcp.getsockname()[1], path


def attempts(port: int, path: Path) -> dict[str, str]:
    py = f"{sys.executable} -c"
    return {
        "tcp": f"{py} \"import socket; socket.create_connection(('127.0.0.1', {port}))\"",
        "unix": f"{py} \"import socket; socket.socket(socket.AF_UNIX).connect('{path}')\"",
        "udp": f"{py} \"import socket; socket.socket(2, 2).sendto(b'x', ('127.0.0.1', {port}))\"",
    }


@pytest.mark.timeout(60)
def test_a_confined_command_opens_no_socket_by_default(tmp_path: Path, servers):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for kind, command in attempts(*servers).items():
        output, code = run_shell(command, workspace, 20, sandboxed=True)
        assert code != 0 and "Permission denied" in output, (kind, output)
    # A socket pair reaches nothing outside: it stays allowed (asyncio needs it).
    pair = f"{sys.executable} -c 'import socket; socket.socketpair(); print(\"ok\")'"
    assert run_shell(pair, workspace, 20, sandboxed=True) == ("ok\n", 0)


@pytest.mark.timeout(60)
def test_allow_network_opens_both(tmp_path: Path, servers):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for kind, command in attempts(*servers).items():
        output, code = run_shell(command, workspace, 20, sandboxed=True, network=True)
        assert code == 0, (kind, output)


@pytest.mark.timeout(60)
def test_the_plan_shell_tool_follows_allow_network(tmp_path: Path, servers):
    from waygraph.cli.plan_tools import CommandFailed, workspace_tools

    workspace = tmp_path / "ws"
    workspace.mkdir()
    tcp = attempts(*servers)["tcp"]
    with pytest.raises(CommandFailed, match="Permission denied"):
        workspace_tools(workspace, timeout=20)[0](tcp)
    assert workspace_tools(workspace, timeout=20, allow_network=True)[0](tcp) == ""


@pytest.mark.timeout(60)
@pytest.mark.skipif(landlock.abi_version() < 6, reason="signal scoping needs Landlock ABI 6")
def test_a_confined_command_cannot_signal_its_wrapper_or_waygraph(tmp_path: Path):
    # Stopping the wrapper would keep it from reaping the tree at the deadline.
    up = "$(awk '/^PPid/{print $2}' /proc/$PPID/status)"
    command = f"kill -STOP $PPID; echo wrapper=$?; kill -STOP {up}; echo waygraph=$?; true"
    output, code = run_shell(command, tmp_path, 20, sandboxed=True)
    assert code == 0 and "wrapper=1" in output and "waygraph=1" in output, output
    # Its own children it may still signal.
    own = run_shell("sleep 30 & kill $!; wait $!; echo $?", tmp_path, 20, sandboxed=True)
    assert own[0].endswith("143\n") and own[1] == 0, own
