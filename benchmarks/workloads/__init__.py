"""The streams the benchmarks measure on, generated with fixed seeds: :mod:`workloads.citybench`,
:mod:`workloads.stocks`, :mod:`workloads.sensors`."""
