"""A pipeline that does not compile, as Dagster shows it: one asset in the
pipeline's group whose description lists every SQL error of its files
(``file:line:col: rule; fix``), and whose materialization fails with the
same text. The healthy pipelines of the code location load beside it, as
dbt projects with one broken model do not hide the others in dagster-dbt's
graph."""

from __future__ import annotations

from pathlib import Path

from dagster import AssetsDefinition, Failure, MetadataValue, asset
from splice.orchestration.translator import SpliceTranslator, safe_name


def broken_pipeline_name(path: Path) -> str:
    """The name a pipeline's folder or file gives it, as the compiler names
    it (letters, digits and ``_``)."""
    return safe_name(path.stem if path.is_file() else path.name).lower()


def broken_pipeline_asset(path: Path, errors: list[str],
                          translator: SpliceTranslator | None = None) -> AssetsDefinition:
    """The error asset, keyed, grouped and owned as the translator says."""
    t = translator or SpliceTranslator()
    name = broken_pipeline_name(path)
    text = "\n".join(errors)
    description = (f"pipeline '{name}' ({path}) does not compile; nothing of it runs "
                   f"until these {len(errors)} error(s) are fixed:\n\n" + text)

    @asset(key=t.get_sql_errors_key(name), group_name=t.get_sql_errors_group_name(name),
           owners=list(t.get_sql_errors_owners(name)), description=description,
           metadata={"splice/errors": MetadataValue.md(
               "\n".join(f"- `{e}`" for e in errors)), "splice/error_count": len(errors)},
           tags={"splice/broken": "true"})
    def _broken() -> None:
        raise Failure(description=description)

    return _broken
