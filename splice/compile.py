"""The compile entry points, for the CLI, the case runner and tests: the
functions of ``runtime.compile`` (which the Dagster definitions, one layer
down, import themselves)."""

from runtime.compile import (
    PipelineFiles,
    analyze_path,
    analyze_sources,
    compile_path,
    compile_sources,
    compile_text,
    decode_sql,
    pipeline_name,
    pipeline_paths,
)

__all__ = ["PipelineFiles", "analyze_path", "analyze_sources", "compile_path",
           "compile_sources", "compile_text", "decode_sql", "pipeline_name",
           "pipeline_paths"]
