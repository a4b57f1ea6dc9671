"""`rulesage eval --report DIR`: a self-contained evaluation report a person reads (HTML, SVG plots)."""

from rulesage.eval.report.pages import write_report

__all__ = ["write_report"]
