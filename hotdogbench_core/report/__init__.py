"""Runs read back and shown: tables with declared columns, altair charts, the report's sections (rendered by the
report notebook and the offline HTML alike), the gallery, thumbnails, and the cost estimate before a run."""
