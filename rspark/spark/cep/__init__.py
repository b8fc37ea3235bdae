"""Event processing on Spark: RSEP-QL's event patterns (``events``, ``match``) and EP-SPARQL's interval joins
(``intervals``). The pure parts (pattern analysis, the sequential evaluator of consumption policies) are in
``rspark.cep``."""
