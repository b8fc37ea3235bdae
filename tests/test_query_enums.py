"""The policies and modifiers a query names are enumerations: the event policies SEQ[...] and MATCH CONSUME take
(``rspark.rsp.policies``), read from the text once, by the parser, and kept by the syntax tree and the algebra."""

from __future__ import annotations

from rspark.rsp.policies import Consumption, MatchConsumption, Selection, SeqSelection


def test_the_query_s_event_policies_are_the_profile_s_by_name():
    assert [m.name for m in SeqSelection] == [m.name for m in Selection]
    assert [m.name for m in MatchConsumption] == [*(m.name for m in Consumption), "NONE"]
    # the values are the policies as a query writes them (what the syntax tree held as text before)
    assert [m.value for m in SeqSelection] == ["UNRESTRICTED", "NAIVE", "CHRONOLOGICAL", "RECENT"]
    assert [m.value for m in MatchConsumption] == ["CHRONOLOGICAL", "RECENT", "NONE"]
    assert SeqSelection.of(Selection.NAIVE) is SeqSelection.NAIVE
    assert SeqSelection.of("unrestricted") is SeqSelection.UNRESTRICTED
    assert MatchConsumption.of(Consumption.RECENT) is MatchConsumption.RECENT
    assert MatchConsumption.of("chronological") is MatchConsumption.CHRONOLOGICAL
    assert MatchConsumption.of(None) is MatchConsumption.NONE
