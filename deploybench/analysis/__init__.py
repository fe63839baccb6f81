"""Analysis of runs: the paper's tables (docs/measurements.md sections 1 to 9), plots, an HTML
page and the failure diagnosis. `load.py` reads a run folder, `frames.py` turns it into pandas
frames, `tables.py` computes every table from those frames; the rest are rules and rendering."""
