"""The log formats: JSON lines with structured fields, or text for a developer."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import orjson
import pytest

from datastore.config import ConfigError
from graphql_api.log_output import FIELDS, JsonFormatter, configure_logging
from graphql_api.settings.api import ApiSettings

SECRET = "x" * 40


def make_record(**kwargs: object) -> logging.LogRecord:
    record = logging.getLogger("hr.test").makeRecord("hr.test", logging.ERROR, __file__, 1, "failed %s", ("x",), None)
    record.__dict__.update(kwargs)
    return record


def test_json_formatter__fields__top_level_members() -> None:
    line = orjson.loads(JsonFormatter().format(make_record(**{FIELDS: {"requestId": "r1", "rcu": 1.5}})))

    assert line["level"] == "ERROR"
    assert line["logger"] == "hr.test"
    assert line["message"] == "failed x"
    assert line["requestId"] == "r1"
    assert line["rcu"] == 1.5
    assert "stack" not in line


def test_json_formatter__exception__stack_in_one_line() -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError as error:
        formatted = JsonFormatter().format(make_record(exc_info=(type(error), error, error.__traceback__)))

    assert "\n" not in formatted
    stack = orjson.loads(formatted)["stack"]
    assert stack.startswith("Traceback") and stack.endswith("RuntimeError: boom")


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"HR_ENV": "development"}, "text"),
        ({"HR_ENV": "production", "JWT_SECRET": SECRET}, "json"),
        ({"HR_ENV": "development", "LOG_FORMAT": "json"}, "json"),
        ({"HR_ENV": "production", "JWT_SECRET": SECRET, "LOG_FORMAT": "TEXT"}, "text"),
    ],
)
def test_settings__log_format__text_in_development_json_elsewhere(env: dict[str, str], expected: str) -> None:
    assert ApiSettings.from_env(env).log_format == expected


def test_settings__unknown_log_format__refused() -> None:
    with pytest.raises(ConfigError, match="LOG_FORMAT must be one of json, text, got 'xml'"):
        ApiSettings.from_env({"LOG_FORMAT": "xml"})


@pytest.fixture
def restored_logging() -> Iterator[None]:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level, logging.getLogger("uvicorn.access").disabled)
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in saved[0]:
        root.addHandler(handler)
    root.setLevel(saved[1])
    logging.getLogger("uvicorn.access").disabled = saved[2]


@pytest.mark.usefixtures("restored_logging")
def test_configure_logging__json__one_stdout_handler_and_no_uvicorn_access_log(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("json")
    logging.getLogger("uvicorn.error").info("started")
    logging.getLogger("uvicorn.access").info("GET / 200")
    logging.getLogger("botocore.credentials").info("found credentials")

    lines = capsys.readouterr().out.splitlines()
    assert [orjson.loads(line)["message"] for line in lines] == ["started"]


@pytest.mark.usefixtures("restored_logging")
def test_configure_logging__text__readable_lines(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("text")
    logging.getLogger("hr.access").info("POST /graphql 200")

    assert capsys.readouterr().out == "INFO hr.access: POST /graphql 200\n"
