"""Issue 33, item 4: ids refuse Unicode format characters as they refuse controls.

A plan, node or session id with U+202E (right-to-left override), U+200D
(zero width joiner) or U+FEFF rendered reversed or invisible in ``check``
tables and the dashboard (the Trojan Source trick). The library loader, the
Navigator's turns and the HTTP API now refuse them by one rule.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.test_limits import plan_file
from waygraph.errors import InputError, PlanFormatError
from waygraph.guided.turns import check_turn
from waygraph.ids import id_problem
from waygraph.library import load_file
from waygraph.server import create_app
from waygraph.server.models import ID_PATTERN

FORMAT_CHARS = ["\u202e", "\u200d", "\ufeff", "\u2066", "\u00ad", "\U000e0041"]


@pytest.mark.parametrize("char", FORMAT_CHARS)
def test_a_plan_id_with_a_format_character_is_refused_at_load(tmp_path: Path, char: str):
    path = plan_file(tmp_path, f"deploy{char}prod")
    with pytest.raises(PlanFormatError, match=f"format characters \\(U\\+{ord(char):04X}\\)"):
        load_file(path)


def test_a_node_id_with_a_format_character_is_refused_at_load(tmp_path: Path):
    path = plan_file(tmp_path, "fine", "bu\u200bild")
    with pytest.raises(PlanFormatError, match="format characters") as info:
        load_file(path)
    assert str(path) in str(info.value)


def test_a_session_id_with_a_format_character_is_refused_by_a_turn():
    with pytest.raises(InputError, match="session_id must not contain invisible"):
        check_turn("user\u202e1", "hi", None, None, None, None, None, None)


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(create_app(store="memory://"), base_url="http://127.0.0.1") as c:
        yield c


@pytest.mark.parametrize("char", FORMAT_CHARS)
def test_the_server_refuses_a_format_character_in_any_id(client: TestClient, char: str):
    assert client.get(f"/api/sessions/s{char}1").status_code == 422
    assert client.get(f"/api/plans/p{char}").status_code == 422
    assert client.get("/api/sessions", params={"plan": f"p{char}"}).status_code == 422
    # The same ids without the character are merely unknown.
    assert client.get("/api/sessions/s1").status_code == 404


def test_ordinary_unicode_ids_stay_valid(client: TestClient):
    for value in ("déploiement", "部署", "naïve-plan", "emoji-🚀"):
        assert id_problem(value) is None
        assert re.fullmatch(ID_PATTERN, value)
    assert client.get("/api/sessions/部署").status_code == 404


def test_every_format_character_of_this_python_is_refused_by_both_rules():
    # The table in waygraph.ids is hard-coded; this keeps it whole as Python's
    # Unicode database grows, and the server's pattern in step with it.
    pattern = re.compile(ID_PATTERN)
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        if unicodedata.category(char) == "Cf":
            assert id_problem(f"a{char}b") is not None, f"U+{code:04X}"
            assert not pattern.fullmatch(f"a{char}b"), f"U+{code:04X}"
