"""The ways in: the command line, the terminal's progress bars, and the helpers the marimo notebooks use
(their arguments and choices, the live run state, report parts as marimo elements)."""
