"""The erasure's rules without Spark: the key as the changelog spells it, the salted hash, the
coordinates' SQL, and the command line."""

from __future__ import annotations

import argparse
import datetime as dt
import stat

import pytest

from cdclake.cli import build_parser
from cdclake.exceptions import ErasureError
from spark_jobs.commands.erase import key_object
from spark_jobs.erasure import SALT_FILE, _coordinates_condition, canonical_text, key_hash, salt


def test_key_values_are_the_changelog_s_canonical_text() -> None:
    assert [canonical_text("id", v) for v in (42, "0042", True, -7)] == ["42", "0042", "true", "-7"]
    with pytest.raises(ErasureError, match="key column 'amount': give the value as a string"):
        canonical_text("amount", 1.5)
    with pytest.raises(ErasureError, match="got null"):
        canonical_text("id", None)


def test_the_key_hash_is_salted_per_lake_and_the_salt_is_private(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CDCLAKE_HOME", str(tmp_path))
    first = salt()
    assert salt() == first and len(first) == 64
    assert stat.S_IMODE((tmp_path / SALT_FILE).stat().st_mode) == 0o600
    one = key_hash("current.crm__people", '["42"]', first)
    assert one == key_hash("current.crm__people", '["42"]', first)
    assert len({one, key_hash("current.crm__people", '["43"]', first),
                key_hash("current.crm__other", '["42"]', first),
                key_hash("current.crm__people", '["42"]', "another lake")}) == 4


def test_coordinates_select_each_partition_s_offsets_within_their_hours() -> None:
    hour = dt.datetime(2024, 1, 1, 10)
    rows = [{"topic": "t'1", "partition": 0, "offset": 5, "landed_hour": hour},
            {"topic": "t'1", "partition": 0, "offset": 3, "landed_hour": hour},
            {"topic": "u", "partition": 2, "offset": 9, "landed_hour": hour}]
    assert _coordinates_condition(rows, "topic", "p", "o") == (
        "(landed_hour IN (TIMESTAMP '2024-01-01 10:00:00.000000') AND "
        "((topic = 't\\'1' AND p = 0 AND o IN (3, 5)) OR (topic = 'u' AND p = 2 AND o IN (9))))")
    assert _coordinates_condition([], "topic", "p", "o") == "false"


def test_the_command_takes_a_json_key_and_either_a_dry_run_or_a_confirmation() -> None:
    args = build_parser().parse_args(
        ["erase", "--table", "crm.people", "--key", '{"id": 42}', "--reason", "r", "--yes"])
    assert (args.table, args.key, args.yes, args.dry_run) == ("crm.people", {"id": 42}, True, False)
    for bad in ("42", "{}", "{id: 1}"):
        with pytest.raises(argparse.ArgumentTypeError, match="--key"):
            key_object(bad)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["erase", "--table", "t.t", "--key", '{"id": 1}', "--dry-run", "--yes"])
