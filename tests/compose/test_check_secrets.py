"""include/compose/check-secrets.sh, run as the check-secrets service runs it (POSIX sh): refuses
empty, change-me and malformed secrets by name, never printing a value, and passes real ones."""

from __future__ import annotations

import secrets
import shutil
import subprocess
from collections.abc import Callable

import pytest
from cryptography.fernet import Fernet

from tests.compose.test_compose_file import (
    CHECK_SECRETS_SCRIPT,
    ENV_EXAMPLE,
    ROOT,
    SECRET_VARIABLES,
    read_env_file,
)

SCRIPT = ROOT / CHECK_SECRETS_SCRIPT
# /bin/sh here (dash on Debian); busybox's ash as well where installed (the alpine image's shell)
BUSYBOX = shutil.which("busybox")
SHELLS = {"sh": ["sh"]} | ({"busybox": [BUSYBOX, "sh"]} if BUSYBOX else {})


@pytest.fixture(params=sorted(SHELLS))
def shell(request: pytest.FixtureRequest) -> list[str]:
    return SHELLS[request.param]


def run(shell: list[str], values: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", **values}
    return subprocess.run([*shell, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=30,
                          check=False)


def good_values() -> dict[str, str]:
    values = {name: secrets.token_urlsafe(24) for name in SECRET_VARIABLES}
    values["AIRFLOW_FERNET_KEY"] = Fernet.generate_key().decode()
    return values


def test_refuses_the_env_example_placeholders_by_name_without_printing_them(shell):
    values = {name: read_env_file(ENV_EXAMPLE)[name] for name in SECRET_VARIABLES}
    result = run(shell, values)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "secrets ok" not in output
    for name, value in values.items():
        assert f"{name} " in output, name
        assert value not in output, name


def test_refuses_empty_and_unset_secrets(shell):
    values = good_values() | {"AIRFLOW_FERNET_KEY": "", "AIRFLOW_JWT_SECRET": ""}
    result = run(shell, values)
    assert result.returncode != 0
    assert "AIRFLOW_FERNET_KEY is empty" in result.stderr
    assert "AIRFLOW_JWT_SECRET is empty" in result.stderr
    refused = {name for name in SECRET_VARIABLES if f"{name} " in result.stderr}
    assert refused == {"AIRFLOW_FERNET_KEY", "AIRFLOW_JWT_SECRET"}

    values = good_values()
    del values["S3_SECRET_KEY"]
    result = run(shell, values)
    assert result.returncode != 0 and "S3_SECRET_KEY is empty" in result.stderr


MALFORMED_KEYS: dict[str, Callable[[str], str]] = {
    "short": lambda key: "too-short",
    "unpadded": lambda key: key.rstrip("="),
    "standard-base64-plus": lambda key: key[:-2] + "+=",
    "standard-base64-slash": lambda key: key[:-2] + "/=",
    "no-padding-44": lambda key: key[:-1] + "A",
    "45-characters": lambda key: key + "=",
    "space": lambda key: " " + key[1:],
}


@pytest.mark.parametrize("malformed", sorted(MALFORMED_KEYS))
def test_refuses_a_malformed_fernet_key(shell, malformed):
    key = MALFORMED_KEYS[malformed](Fernet.generate_key().decode())
    result = run(shell, good_values() | {"AIRFLOW_FERNET_KEY": key})
    assert result.returncode != 0
    assert "AIRFLOW_FERNET_KEY is not a Fernet key" in result.stderr
    assert key not in result.stdout + result.stderr


def test_passes_real_secrets(shell):
    values = good_values()
    result = run(shell, values)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "secrets ok" and result.stderr == ""
    for value in values.values():
        assert value not in result.stdout
