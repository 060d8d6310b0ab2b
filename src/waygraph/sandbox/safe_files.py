"""Reading files a model can write, without following links, blocking, or swallowing the disk.

A model with a shell in its workspace can put anything where waygraph later
reads: a FIFO (an ordinary ``open`` waits for a writer for ever, and a server
worker with it), a symbolic link to ``/dev/zero`` (an ordinary read never
ends) or to a secret outside the workspace (its content would be read, shown
or copied). :func:`read_regular_file` is the one way waygraph reads such a
file: it refuses anything but a regular file, before opening it (``lstat``)
and again on what it opened (``fstat``), opens with ``O_NOFOLLOW`` (a link in
the last component is refused by the kernel, not followed) and ``O_NONBLOCK``
(opening a FIFO returns at once), and reads at most ``limit`` bytes. A refusal
is a :class:`RefusedFile`, an :class:`OSError` whose message is one line, so
every caller that already copes with unreadable files copes with these.

Example:
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> (folder / "plan.json").write_text("{}")
    2
    >>> read_regular_file(folder / "plan.json")
    b'{}'
    >>> try:
    ...     read_regular_file(folder)
    ... except RefusedFile as exc:
    ...     print(exc.reason)
    a directory
"""

from __future__ import annotations

import errno
import os
import stat

from waygraph.errors import RefusedFile
from waygraph.formats.json_library import MAX_FILE_BYTES

__all__ = ["MAX_FILE_BYTES", "RefusedFile", "describe_mode", "read_regular_file"]

#: Flags of every open: no link followed in the last component, no waiting
#: for a FIFO's writer, no terminal acquired, not inherited by commands.
_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
#: The errors ``open`` gives for a link under ``O_NOFOLLOW`` (Linux and macOS
#: say ELOOP, FreeBSD EMLINK) and for a socket (ENXIO).
_LINK_ERRORS = {errno.ELOOP, errno.EMLINK}
_CHUNK = 1024 * 1024


def describe_mode(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, in words (``"a FIFO"``, ``"a directory"``).

    Example:
        >>> import stat
        >>> describe_mode(stat.S_IFIFO | 0o644)
        'a FIFO'
    """
    kinds = (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISREG, "a regular file"),
    )
    return next((name for test, name in kinds if test(mode)), "a special file")


def read_regular_file(path: str | os.PathLike[str], *, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes (the JSON plan budget).

    Raises :class:`RefusedFile` for a symbolic link, FIFO, socket, device or
    directory (none is opened for reading, and none blocks) and for a file
    over ``limit`` (no more than ``limit + 1`` bytes are read to know);
    :class:`FileNotFoundError` and other :class:`OSError` as ``open`` does.

    Example:
        >>> read_regular_file("/nonexistent/plan.json")
        Traceback (most recent call last):
        ...
        FileNotFoundError: [Errno 2] No such file or directory: '/nonexistent/plan.json'
    """
    # lstat first so that a device or FIFO is never even opened (opening
    # some devices has effects); fstat below is what the answer rests on.
    before = os.lstat(path)
    if not stat.S_ISREG(before.st_mode):
        raise RefusedFile(path, describe_mode(before.st_mode))
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        if exc.errno in _LINK_ERRORS:
            raise RefusedFile(path, "a symbolic link") from None
        if exc.errno == errno.ENXIO:
            raise RefusedFile(path, "a socket") from None
        raise
    try:
        # The name may have been swapped between lstat and open: judge what
        # was opened, not what the name was a moment ago.
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise RefusedFile(path, describe_mode(opened.st_mode))
        if opened.st_size > limit:
            raise RefusedFile(path, f"over the {limit}-byte limit", expected="")
        return _read_at_most(fd, path, limit)
    finally:
        os.close(fd)


def _read_at_most(fd: int, path: str | os.PathLike[str], limit: int) -> bytes:
    # st_size can lie (a file still growing, procfs-like filesystems): stop
    # after limit + 1 bytes whatever it said.
    parts: list[bytes] = []
    got = 0
    while got <= limit:
        try:
            part = os.read(fd, min(_CHUNK, limit + 1 - got))
        except BlockingIOError:
            raise RefusedFile(path, "a file that would block") from None
        if not part:
            return b"".join(parts)
        parts.append(part)
        got += len(part)
    raise RefusedFile(path, f"over the {limit}-byte limit", expected="")
