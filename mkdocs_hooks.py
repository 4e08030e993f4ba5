"""MkDocs hook: publish the benchmark records and project files without copying them in git.

The records stay where the benchmarks write them (``benchmarks/``); at build time this hook
adds them to the site under ``benchmarks/`` (so ``docs/results.md`` links to
``benchmarks/results/scaling.md``), and the project's top-level files under ``project/``.
Registered in ``mkdocs.yml`` under ``hooks:``.
"""
from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent
# (folder or file in the repository, glob, where it appears in the site)
SOURCES = (
    ("benchmarks", "*.md", "benchmarks"),
    ("benchmarks/results", "*.md", "benchmarks/results"),
    ("benchmarks/plots", "*.png", "benchmarks/plots"),
    (".", "ARCHITECTURE.md", "project"),
    (".", "CHANGELOG.md", "project"),
)


def on_files(files: Files, config, **kwargs) -> Files:
    for folder, pattern, target in SOURCES:
        for path in sorted((ROOT / folder).glob(pattern)):
            uri = f"{target}/{path.name}"
            if files.get_file_from_path(uri) is None:  # a page in docs/ of that name wins
                files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files
