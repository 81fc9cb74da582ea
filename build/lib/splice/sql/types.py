"""SQL types as Spark DDL types."""

from __future__ import annotations

from sqlglot import exp

# Character types are plain strings in Delta: length limits are not enforced
# by a streaming join, so they are not pretended to be.
_STRINGY = {exp.DType.VARCHAR, exp.DType.CHAR, exp.DType.TEXT, exp.DType.NVARCHAR,
            exp.DType.NCHAR}

UNKNOWN = "unknown"


def spark_type(data_type: exp.DataType) -> str:
    """The Spark DDL spelling of a declared column type, lower case."""
    if data_type.this in _STRINGY:
        return "string"
    return data_type.sql(dialect="spark").lower()


def same_type_family(a: str, b: str) -> bool:
    """Whether two key types can be compared without a CAST.

    Integral types agree with each other (INT and BIGINT keys join in every
    engine); otherwise the spellings must match.
    """
    integral = {"tinyint", "smallint", "int", "bigint"}
    floating = {"float", "double"}
    if a == b or UNKNOWN in (a, b):
        return True
    if a in integral and b in integral:
        return True
    return a in floating and b in floating


def struct_type(fields: list[tuple[str, str]]) -> str:
    inner = ",".join(f"`{name}`:{typ}" for name, typ in fields)
    return f"struct<{inner}>"
