"""cep_throughput.py's parts: :mod:`cep.workers` (what each system does in its own worker subprocess) and
:mod:`cep.report` (the tables, the verdicts and the plot). The Python matcher it measures rspark against is in
:mod:`baselines.cep_matcher`, the stream in :mod:`workloads.stocks`."""
