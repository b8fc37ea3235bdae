"""The key a replay's plans carry: the evaluation instant.

A replay evaluates a query at many instants in one plan; every operator carries the instant column ``KEY``
(ticks, a long), so the plan answers all instants together (the instant-keyed R2R compilation).
"""

KEY = "__t"
