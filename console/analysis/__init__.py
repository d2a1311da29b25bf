"""Statistics over what a run recorded. Qt-free, numpy only."""

from console.analysis.summary import summarize

__all__ = ["summarize"]
