"""Delta's table creation, MERGE and table details through Spark SQL.

Delta's Python builders (``DeltaTable.createIfNotExists``, ``.merge``) send
Delta's own plan messages under Spark Connect, which only a server with
Delta's Connect plugin understands (it is not served here; see
../shared/spec/PLATFORM.md). The same commands in SQL (``CREATE TABLE ...
USING delta``, ``MERGE INTO delta.`path```) run on any Spark with Delta's SQL
extension, classic or Connect, so the engine uses them everywhere: one code
path, the same Delta commands underneath.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.types import ArrayType, DataType, MapType, StructType


def quote(name: str) -> str:
    """``name`` as a SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def table_ref(path: str) -> str:
    """The Delta table at ``path`` as a SQL table reference."""
    return f"delta.{quote(path)}"


def type_ddl(typ: DataType) -> str:
    """``typ`` in SQL DDL (field names quoted; every field nullable, as a
    DataFrame write stores them)."""
    if isinstance(typ, StructType):
        return "struct<" + ",".join(f"{quote(f.name)}:{type_ddl(f.dataType)}"
                                    for f in typ.fields) + ">"
    if isinstance(typ, ArrayType):
        return f"array<{type_ddl(typ.elementType)}>"
    if isinstance(typ, MapType):
        return f"map<{type_ddl(typ.keyType)},{type_ddl(typ.valueType)}>"
    return typ.simpleString()


def detail(spark: SparkSession, path: str) -> Row:
    """``DESCRIBE DETAIL`` of the table at ``path`` (its files, size and
    properties, from its log)."""
    return spark.sql(f"DESCRIBE DETAIL {table_ref(path)}").first()


def create_if_absent(spark: SparkSession, path: str, schema: StructType,
                     properties: Mapping[str, str] | None = None) -> None:
    """An empty Delta table at ``path`` with ``schema`` (all columns
    nullable), unless a table is there: one commit, no Spark job."""
    columns = ", ".join(f"{quote(f.name)} {type_ddl(f.dataType)}" for f in schema.fields)
    props = ""
    if properties:
        props = " TBLPROPERTIES (" + ", ".join(
            f"'{k}' = '{v}'" for k, v in properties.items()) + ")"
    spark.sql(f"CREATE TABLE IF NOT EXISTS {table_ref(path)} ({columns}) USING delta{props}")


def merge(spark: SparkSession, path: str, source: DataFrame, on: str,
          clauses: list[str], target: str = "t", alias: str = "s") -> None:
    """``MERGE INTO`` the table at ``path`` (as ``target``) using ``source``
    (as ``alias``) ``on`` the condition, with the ``WHEN ...`` clauses in
    order, run by ``spark`` (whose settings, such as Delta's idempotent-DML
    marks, apply to it).

    The source is a global temporary view for the one statement: a
    micro-batch's DataFrame belongs to the streaming query's own session (a
    clone), and a source joined from it may belong to either, while a plain
    temporary view is seen only by the session it was made in."""
    view = f"splice_merge_{uuid.uuid4().hex}"
    source.createOrReplaceGlobalTempView(view)
    try:
        spark.sql(f"MERGE INTO {table_ref(path)} {target} USING global_temp.{view} {alias} "
                  f"ON {on} " + " ".join(clauses))
    finally:
        spark.catalog.dropGlobalTempView(view)


def insert_values(columns: list[str], alias: str) -> str:
    """The ``(cols) VALUES (alias.cols)`` of a ``WHEN NOT MATCHED THEN INSERT``."""
    cols = ", ".join(quote(c) for c in columns)
    return f"({cols}) VALUES ({', '.join(f'{alias}.{quote(c)}' for c in columns)})"


def update_set(columns: list[str], alias: str) -> str:
    """The ``SET col = alias.col, ...`` of a ``WHEN MATCHED THEN UPDATE``."""
    return ", ".join(f"{quote(c)} = {alias}.{quote(c)}" for c in columns)
