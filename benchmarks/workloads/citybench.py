"""A CityBench-like workload (CityBench, Ali et al. 2015): traffic and weather observation streams in SOSA, one
named graph an observation with integer millisecond timestamps, and a static graph of sensors and their locations.
Read by ``replay_throughput.py`` and ``count_windows.py``."""

from __future__ import annotations

import random
from pathlib import Path

EX = "http://citybench.example.org/"
SSN = "http://www.w3.org/ns/sosa/"
KINDS = ["traffic", "pollution", "weather", "parking"]
TRIPLES_PER_OBS = 5
PREFIXES = f"PREFIX : <{EX}> PREFIX sosa: <{SSN}> "
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
PROV = "http://www.w3.org/ns/prov#"
XSD = "http://www.w3.org/2001/XMLSchema#"
def generate(out_dir: Path, triples: int, sensors: int, rate: int, fmt: str = "nq", seed: int = 11) -> dict:
    """Write the traffic and weather streams (half the triples each; N-Quads, or TriG with ``fmt="trig"``) and
    sensors.ttl; return their paths. ``rate``: observations per second in each stream (200: 1e6 triples last
    about 7 minutes of stream time)."""
    rnd = random.Random(seed)
    paths = {"traffic": out_dir / f"traffic-{triples}-{rate}.{fmt}",
             "weather": out_dir / f"weather-{triples}-{rate}.{fmt}",
             "static": out_dir / f"sensors-{sensors}.ttl"}
    obs_per_stream = triples // (2 * (TRIPLES_PER_OBS + 1))
    if not paths["static"].exists():
        with paths["static"].open("w") as f:
            for kind in KINDS:
                for i in range(sensors):
                    f.write(f"<{EX}{kind}{i}> a <{EX}{kind.capitalize()}Sensor> ; "
                            f"<{EX}locatedAt> <{EX}loc{i % 50}> .\n")
    integer = "^^<http://www.w3.org/2001/XMLSchema#integer>"
    for stream in ("traffic", "weather"):
        if paths[stream].exists():
            continue
        with paths[stream].open("w") as f:
            if fmt == "trig":
                f.write(f"@prefix sosa: <{SSN}> . @prefix prov: <http://www.w3.org/ns/prov#> .\n")
            for n in range(obs_per_stream):
                g = f"<{EX}{stream}/obs{n}>"
                sensor, value, t = f"<{EX}{stream}{rnd.randrange(sensors)}>", rnd.randrange(100), n * 1000 // rate
                if fmt == "trig":
                    f.write(f"{g} {{ {g} a sosa:Observation ; sosa:madeBySensor {sensor} ; "
                            f"sosa:observedProperty <{EX}{stream}Level> ; sosa:hasSimpleResult {value} ; "
                            f"sosa:resultTime {t} . }}\n{g} prov:generatedAtTime {t} .\n")
                else:
                    f.write(f"{g} <{RDF_TYPE}> <{SSN}Observation> {g} .\n"
                            f"{g} <{SSN}madeBySensor> {sensor} {g} .\n"
                            f"{g} <{SSN}observedProperty> <{EX}{stream}Level> {g} .\n"
                            f'{g} <{SSN}hasSimpleResult> "{value}"{integer} {g} .\n'
                            f'{g} <{SSN}resultTime> "{t}"{integer} {g} .\n'
                            f'{g} <{PROV}generatedAtTime> "{t}"{integer} .\n')
    return {k: str(v) for k, v in paths.items()}
