"""What is kept on disk: the photo table (dataset.py), the run folder and its file names (rundir.py), the
journal (the source of truth), per-photo results and their parquet, the manifest, and building a dataset."""
