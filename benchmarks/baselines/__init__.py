"""The systems the benchmark scripts measure rspark against in the same run, written here rather than installed:
:mod:`baselines.cep_matcher` (a SASE-style Python matcher of RSEP-QL event patterns) and
:mod:`baselines.rsepql_spec` (a spec-literal evaluator that checks it)."""
