"""`gate: on_write`: SELECT-only statements pass, anything that writes is held."""

from __future__ import annotations

import pytest

from synartesis.policy.sqlgate import is_read_only_sql, should_gate


@pytest.mark.parametrize("sql", [
    "SELECT 1", "  with x as (select 1) select * from x", "EXPLAIN SELECT * FROM t",
    "EXPLAIN ANALYZE SELECT 1", "select * from t -- delete everything\n", "SELECT 'drop table t' FROM t;",
    "/* update */ SELECT a FROM t", "VALUES (1)", "show tables",
])
def test_reads_pass(sql):
    assert is_read_only_sql(sql)


@pytest.mark.parametrize("sql", [
    "UPDATE t SET a = 1", "delete from t", "DROP TABLE t", "CALL f()", "SELECT 1; DROP TABLE t",
    "INSERT INTO t VALUES (1)", "",
    # the reference's false negatives, fixed
    "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d",
    "EXPLAIN ANALYZE DELETE FROM t",
    "SELECT * INTO backup FROM t",
    "SELECT * FROM t FOR UPDATE",
    "PRAGMA journal_mode = DELETE",
])
def test_writes_are_held(sql):
    assert not is_read_only_sql(sql)


def test_should_gate_arguments():
    assert not should_gate({"sql": "SELECT 1"})
    assert should_gate({"sql": "SELECT 1", "db": "main"})  # every top-level string must read
    assert not should_gate({"sql": "SELECT 1", "db": "main"}, sql_arg="sql")
    assert should_gate({"query": 42})
    assert should_gate({})
    assert should_gate("SELECT 1")
    assert should_gate({"sql": "DELETE FROM t"}, sql_arg="sql")
